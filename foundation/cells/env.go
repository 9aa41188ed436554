package cells

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// instanceEnv builds an instance's environment: a base PATH and HOME (the app dir, as
// /home/vcap/app is on Cloud Foundry), then the spec's env (VCAP_APPLICATION and
// VCAP_SERVICES pass through untouched), then what Diego sets per instance.
//
// host is where the instance listens (CF_INSTANCE_INTERNAL_IP, CF_INSTANCE_ADDR) and
// cellAddr its cell's address (CF_INSTANCE_IP, the host's IP on Diego, which is also
// what process stats report as the instance's host); "" means host.
func instanceEnv(spec ProcessSpec, path, host, cellAddr string, index int, guid string, port int, tmpDir string) []string {
	env := map[string]string{"PATH": path, "HOME": spec.Dir}
	for k, v := range spec.Env {
		env[k] = v
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if cellAddr == "" {
		cellAddr = host
	}
	for k, v := range map[string]string{
		"TMPDIR":                  tmpDir,
		"PORT":                    strconv.Itoa(port),
		"CF_INSTANCE_INDEX":       strconv.Itoa(index),
		"CF_INSTANCE_GUID":        guid,
		"CF_INSTANCE_IP":          cellAddr,
		"CF_INSTANCE_INTERNAL_IP": host,
		"CF_INSTANCE_PORT":        strconv.Itoa(port),
		"CF_INSTANCE_ADDR":        addr,
		"CF_INSTANCE_PORTS":       fmt.Sprintf(`[{"external":%d,"internal":%d}]`, port, port),
		"INSTANCE_INDEX":          strconv.Itoa(index),
		"INSTANCE_GUID":           guid,
	} {
		env[k] = v
	}
	if spec.MemoryMB > 0 {
		env["MEMORY_LIMIT"] = strconv.Itoa(spec.MemoryMB) + "m"
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// httpCheck passes when GET endpoint answers 200, like Diego's http health check.
func httpCheck(addr, endpoint string) func() error {
	if endpoint == "" {
		endpoint = "/"
	}
	if !strings.HasPrefix(endpoint, "/") {
		endpoint = "/" + endpoint
	}
	url := "http://" + addr + endpoint
	client := &http.Client{
		Timeout:   healthCheckAttemptTimeout,
		Transport: &http.Transport{DisableKeepAlives: true}, // no proxy, no idle conns held open
	}
	return func() error {
		resp, err := client.Get(url)
		if err != nil {
			return fmt.Errorf("failed to make HTTP request to %s: %w", endpoint, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP health check of %s answered %d", endpoint, resp.StatusCode)
		}
		return nil
	}
}
