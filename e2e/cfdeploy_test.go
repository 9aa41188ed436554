//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// cfStaticfileApp pushes a directory with an index.html and a Staticfile, as the
// cf CLI's own test apps are, with no buildpack flag: it stages with the Staticfile
// lifecycle, starts with the buildpack's start command and is served through the
// router (index at /, its content type, 404 for what is missing).
func cfStaticfileApp(t *testing.T, cf *cfCLI, info foundation.Info) {
	dir := t.TempDir()
	for name, body := range map[string]string{"index.html": "<h1>hello static</h1>", "Staticfile": "", "site.css": "h1{}"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := cf.mustRun(t, "push", "cli-static", "-p", dir, "-m", "64M", "-k", "64M")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s+staticfile_buildpack\s`),
		regexp.MustCompile(`(?m)^start command:\s+\$HOME/boot\.sh$`),
		regexp.MustCompile(`(?m)^#0\s+running\s`),
	} {
		if !want.MatchString(out) {
			t.Errorf("cf push of a Staticfile app lacks %s:\n%s", want, out)
		}
	}
	host := "cli-static." + info.AppsDomain
	for _, c := range []struct {
		path, ctype string
		status      int
		body        string
	}{
		{"/", "text/html; charset=utf-8", 200, "<h1>hello static</h1>"},
		{"/site.css", "text/css; charset=utf-8", 200, "h1{}"},
		{"/missing.html", "", 404, ""},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+info.RouterAddr+c.path, nil)
		req.Host = host
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype || c.body != "" && string(b) != c.body {
			t.Errorf("GET %s%s = %d %q %q, want %d %q %q", host, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.status, c.ctype, c.body)
		}
	}
	// nginx logs each request on stdout, as the buildpack's does, though it runs as the
	// instance's user and opens /dev/stdout itself.
	access := regexp.MustCompile(`\[APP/PROC/WEB/0\]\s+OUT .*"GET /site.css HTTP/1.1" 200 4`)
	var logs string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !access.MatchString(logs); time.Sleep(500 * time.Millisecond) {
		logs = cf.mustRun(t, "logs", "cli-static", "--recent")
	}
	if !access.MatchString(logs) {
		t.Errorf("cf logs --recent cli-static has no access line matching %s:\n%s", access, logs)
	}
	cf.mustRun(t, "delete", "-f", "-r", "cli-static")
}

// cfRollingDeployments restarts app (pushed from stub with the manifest's settings,
// routed at host) with --strategy rolling, then pushes it again so, while requests go
// through the router all along: every instance is replaced and not one request fails.
func cfRollingDeployments(t *testing.T, cf *cfCLI, info foundation.Info, app, host, stub string) {
	guid := strings.TrimSpace(cf.mustRun(t, "app", app, "--guid"))
	instances := func() []string {
		var stats struct {
			Resources []struct {
				InstanceGUID string `json:"instance_guid"`
				State        string `json:"state"`
			} `json:"resources"`
		}
		if err := json.Unmarshal([]byte(cf.mustRun(t, "curl", "/v3/apps/"+guid+"/processes/web/stats")), &stats); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range stats.Resources {
			out = append(out, r.InstanceGUID+" "+r.State)
		}
		return out
	}
	before := instances()

	ctx, stop := context.WithTimeout(t.Context(), 3*time.Minute)
	defer stop()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok       int
		failures []string
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 10 * time.Second}
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+info.RouterAddr+"/healthz", nil)
			req.Host = host
			resp, err := client.Do(req)
			mu.Lock()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				failures = append(failures, err.Error())
			default:
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok++
				} else {
					failures = append(failures, resp.Status)
				}
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()

	out := cf.mustRun(t, "restart", app, "--strategy", "rolling")
	if !strings.Contains(out, "Creating deployment for app "+app) || !regexp.MustCompile(`(?m)^#0\s+running\s`).MatchString(out) {
		t.Errorf("cf restart --strategy rolling:\n%s", out)
	}
	afterRestart := instances()
	out = cf.mustRun(t, "push", app, "-p", stub, "--strategy", "rolling")
	if !strings.Contains(out, "Starting deployment for app "+app) || !strings.Contains(out, "Waiting for app to deploy...") {
		t.Errorf("cf push --strategy rolling:\n%s", out)
	}
	stop()
	wg.Wait()

	after := instances()
	for _, in := range before {
		if strings.Contains(fmt.Sprint(afterRestart, after), strings.Fields(in)[0]) {
			t.Errorf("instance %s outlived the rolling restart: before %v, after the restart %v, after the push %v", in, before, afterRestart, after)
		}
	}
	if len(after) != len(before) || strings.Contains(fmt.Sprint(after), "CRASHED") {
		t.Errorf("instances before %v, after %v", before, after)
	}
	t.Logf("%d requests through the router during the rolling deployments, %d failed", ok, len(failures))
	if ok == 0 || len(failures) > 0 {
		t.Errorf("requests through the router during the rolling deployments: %d ok, %d failed: %q", ok, len(failures), failures)
	}
	var deployments struct {
		Resources []struct {
			Status struct{ Value, Reason string } `json:"status"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(cf.mustRun(t, "curl", "/v3/deployments?app_guids="+guid)), &deployments); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(deployments.Resources); got != "[{{FINALIZED DEPLOYED}} {{FINALIZED DEPLOYED}}]" {
		t.Errorf("deployments of %s: %s, want two FINALIZED/DEPLOYED", app, got)
	}
}
