package cc

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cf-benchmark/cf-benchmark/internal/bytesize"
)

// manifestDiffRoutes registers the endpoints of an app's manifest and manifest diffs.
func (s *Server) manifestDiffRoutes() {
	s.handle("GET /v3/apps/{guid}/manifest", s.getAppManifest)
	s.handle("POST /v3/spaces/{guid}/manifest_diff", s.manifestDiff)
}

// The manifest diff (POST /v3/spaces/:guid/manifest_diff) and the app manifest
// (GET /v3/apps/:guid/manifest): what `cf push` shows before it applies a manifest,
// and what `cf create-app-manifest` writes.

// diffKeys are the top-level app keys CC diffs (AppManifestMessage's, dasherized);
// others are ignored, as CC ignores them.
var diffKeys = map[string]bool{
	"name": true, "buildpack": true, "buildpacks": true, "command": true, "default-route": true, "disk_quota": true,
	"disk-quota": true, "docker": true, "env": true, "health-check-http-endpoint": true, "health-check-invocation-timeout": true,
	"health-check-interval": true, "health-check-type": true, "instances": true, "lifecycle": true, "log-rate-limit-per-second": true,
	"memory": true, "metadata": true, "no-route": true, "processes": true, "random-route": true, "routes": true, "services": true,
	"sidecars": true, "stack": true, "timeout": true,
}

// diffOp is one entry of the diff: a JSON-patch operation with the value it replaces.
type diffOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Was   any    `json:"was,omitempty"`
	Value any    `json:"value,omitempty"`
}

func (s *Server) manifestDiff(c *call) error {
	space := c.r.PathValue("guid")
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 1<<20))
	if err != nil {
		return badRequest("Request invalid due to parse error: %v", err)
	}
	// Validated as apply_manifest validates it, so that push fails here, before any change.
	if _, err := parseManifest(strings.NewReader(string(body))); err != nil {
		return err
	}
	var raw struct {
		Applications []map[string]any `yaml:"applications"`
	}
	if err := yaml.Unmarshal(body, &raw); err != nil {
		return badRequest("Request invalid due to parse error: invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	diff := []diffOp{}
	var found bool
	s.st.read(func(st *State) {
		if found = st.Spaces[space] != nil; !found {
			return
		}
		for i, want := range raw.Applications {
			var have map[string]any
			name, _ := want["name"].(string)
			if a := st.appByName(space, name); a != nil {
				have = appManifest(st, a)
				if web := webProcess(have); web != nil {
					for k, v := range web {
						if k != "type" {
							have[k] = v
						}
					}
				}
			}
			diff = append(diff, diffApp(fmt.Sprintf("/applications/%d", i), have, want)...)
		}
	})
	if !found {
		return notFound("Space")
	}
	return c.json(http.StatusCreated, obj{"diff": diff})
}

func webProcess(app map[string]any) map[string]any {
	procs, _ := app["processes"].([]any)
	for _, p := range procs {
		if m, _ := p.(map[string]any); m["type"] == "web" {
			return m
		}
	}
	return nil
}

// diffApp compares the keys the manifest gives (only those: a key left out changes
// nothing) with the app's current manifest; have is nil for a new app.
func diffApp(at string, have, want map[string]any) []diffOp {
	var out []diffOp
	for _, k := range sortedKeys(want) {
		if !diffKeys[k] {
			continue
		}
		w := normalize(k, want[k])
		if k == "processes" {
			out = append(out, diffProcesses(at+"/processes", have["processes"], w)...)
			continue
		}
		out = append(out, diffValue(at+"/"+k, have[k], w)...)
	}
	return out
}

// diffProcesses compares processes by type, at the index the manifest gives them.
func diffProcesses(at string, have, want any) []diffOp {
	wl, ok := want.([]any)
	if !ok {
		return diffValue(at, have, want)
	}
	hl, _ := have.([]any)
	var out []diffOp
	for j, w := range wl {
		wm, _ := w.(map[string]any)
		var hm map[string]any
		for _, h := range hl {
			if m, _ := h.(map[string]any); m != nil && wm != nil && m["type"] == wm["type"] {
				hm = m
			}
		}
		p := at + "/" + strconv.Itoa(j)
		if hm == nil || wm == nil {
			out = append(out, diffValue(p, nil, w)...)
			continue
		}
		for _, k := range sortedKeys(wm) {
			out = append(out, diffValue(p+"/"+k, hm[k], normalize(k, wm[k]))...)
		}
	}
	return out
}

// diffValue compares one value: maps key by key (keys only the app has are removed),
// anything else as a whole.
func diffValue(at string, have, want any) []diffOp {
	if have == nil {
		if want == nil {
			return nil
		}
		return []diffOp{{Op: "add", Path: at, Value: want}}
	}
	hm, hok := have.(map[string]any)
	wm, wok := want.(map[string]any)
	if hok && wok {
		var out []diffOp
		for _, k := range sortedKeys(wm) {
			out = append(out, diffValue(at+"/"+escapePointer(k), hm[k], wm[k])...)
		}
		for _, k := range sortedKeys(hm) {
			if _, ok := wm[k]; !ok {
				out = append(out, diffOp{Op: "remove", Path: at + "/" + escapePointer(k), Was: hm[k]})
			}
		}
		return out
	}
	if sameJSON(have, want) {
		return nil
	}
	return []diffOp{{Op: "replace", Path: at, Was: have, Value: want}}
}

// escapePointer escapes a JSON-pointer segment (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// normalize writes a requested value as the app's manifest writes it: sizes in MB
// ("1G" is "1024M"), env values as strings.
func normalize(key string, v any) any {
	switch key {
	case "memory", "disk_quota", "disk-quota":
		if s, ok := v.(string); ok {
			if mb, err := bytesize.Megabytes(s); err == nil {
				return strconv.Itoa(mb) + "M"
			}
		}
	case "env":
		if m, ok := v.(map[string]any); ok {
			out := make(map[string]any, len(m))
			for k, x := range m {
				out[k] = fmt.Sprint(x)
			}
			return out
		}
	case "processes":
		if l, ok := v.([]any); ok {
			out := make([]any, len(l))
			for i, p := range l {
				out[i] = p
				if m, ok := p.(map[string]any); ok {
					n := make(map[string]any, len(m))
					for k, x := range m {
						n[k] = normalize(k, x)
					}
					out[i] = n
				}
			}
			return out
		}
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// appManifest is app a as a manifest application, as CC's app manifest presenter
// writes it: keys with nothing to say are left out.
func appManifest(st *State, a *App) map[string]any {
	m := map[string]any{"name": a.Name, "stack": a.Stack}
	if len(a.Buildpacks) > 0 {
		bps := make([]any, len(a.Buildpacks))
		for i, b := range a.Buildpacks {
			bps[i] = b
		}
		m["buildpacks"] = bps
	}
	if len(a.Env) > 0 {
		env := map[string]any{}
		for k, v := range a.Env {
			env[k] = v
		}
		m["env"] = env
	}
	var routes []any
	for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
		if slices.Contains(r.Apps, a.GUID) {
			routes = append(routes, map[string]any{"route": st.routeURL(r)})
		}
	}
	if routes != nil {
		m["routes"] = routes
	} else {
		m["no-route"] = true
	}
	var services []any
	for _, b := range sorted(st.Bindings, func(b *Binding) time.Time { return b.Created }, func(b *Binding) string { return b.GUID }) {
		if si := st.ServiceInstances[b.InstanceGUID]; b.AppGUID == a.GUID && si != nil {
			services = append(services, si.Name)
		}
	}
	if services != nil {
		m["services"] = services
	}
	var procs []any
	for _, p := range sorted(st.Processes, func(p *Process) time.Time { return p.Created }, func(p *Process) string { return p.Type }) {
		if p.AppGUID != a.GUID {
			continue
		}
		pm := map[string]any{"type": p.Type, "instances": p.Instances, "memory": strconv.Itoa(p.MemoryMB) + "M",
			"disk_quota": strconv.Itoa(p.DiskMB) + "M", "log-rate-limit-per-second": "-1", "health-check-type": p.HealthCheck}
		if p.Command != "" {
			pm["command"] = p.Command
		}
		if p.HealthCheck == "http" && p.HealthPath != "" {
			pm["health-check-http-endpoint"] = p.HealthPath
		}
		if p.Timeout > 0 {
			pm["timeout"] = p.Timeout
		}
		procs = append(procs, pm)
	}
	if procs != nil {
		m["processes"] = procs
	}
	return m
}

// getAppManifest answers GET /v3/apps/:guid/manifest in YAML, as CC does.
func (s *Server) getAppManifest(c *call) error {
	var m map[string]any
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			m = appManifest(st, a)
		}
	})
	if m == nil {
		return notFound("App")
	}
	b, err := yaml.Marshal(map[string]any{"applications": []any{m}})
	if err != nil {
		return err
	}
	c.w.Header().Set("Content-Type", "application/x-yaml")
	c.w.WriteHeader(http.StatusOK)
	_, err = c.w.Write(b)
	return err
}
