package cc

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestEnvironmentVariables covers GET and PATCH /v3/apps/:guid/environment_variables:
// PATCH merges, null removes, reserved names are refused, and the running instances
// keep their env until a restart, as on CF.
func TestEnvironmentVariables(t *testing.T) {
	e := newEnv(t, t.TempDir())
	app := e.push(e.space("apps"), "applications:\n- name: envy\n  no-route: true\n  env: {KEEP: one, DROP: two}\n")
	path := "/v3/apps/" + app + "/environment_variables"
	vars := func(body map[string]any) map[string]any {
		v, _ := body["var"].(map[string]any)
		return v
	}
	if got := vars(e.must(200, "GET", path, nil)); len(got) != 2 || got["KEEP"] != "one" || got["DROP"] != "two" {
		t.Fatalf("GET var = %v", got)
	}
	got := vars(e.must(200, "PATCH", path, map[string]any{"var": map[string]any{"NEW": "3", "DROP": nil, "KEEP": "uno"}}))
	if len(got) != 2 || got["KEEP"] != "uno" || got["NEW"] != "3" {
		t.Fatalf("PATCH var = %v, want KEEP=uno NEW=3", got)
	}
	if got := vars(e.must(200, "GET", path, nil)); len(got) != 2 || got["NEW"] != "3" {
		t.Fatalf("GET after PATCH var = %v", got)
	}
	if env := e.must(200, "GET", "/v3/apps/"+app+"/env", nil); get(env, "environment_variables", "NEW") != "3" || get(env, "environment_variables", "DROP") != nil {
		t.Fatalf("/env after PATCH: %v", env["environment_variables"])
	}
	if e.rt.specs[app].Env["NEW"] != "" || e.rt.specs[app].Env["DROP"] != "two" {
		t.Fatalf("running instances got the new env before a restart: %v", e.rt.specs[app].Env)
	}
	e.must(200, "POST", "/v3/apps/"+app+"/actions/restart", nil)
	if env := e.rt.specs[app].Env; env["NEW"] != "3" || env["KEEP"] != "uno" || env["DROP"] != "" {
		t.Fatalf("env after a restart: %v", env)
	}

	for _, c := range []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"VCAP_ prefix", map[string]any{"var": map[string]any{"vcap_services": "x"}}, 422, "Var cannot start with VCAP_"},
		{"PORT", map[string]any{"var": map[string]any{"PORT": "8080"}}, 422, "Var cannot set PORT"},
		{"empty name", map[string]any{"var": map[string]any{"": "x"}}, 422, "Var key must be a minimum length of 1"},
		{"number value", map[string]any{"var": map[string]any{"N": 3}}, 422, "Non-string value in environment variable for key 'N', value '3'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := e.do("PATCH", path, c.body)
			errs, _ := out["errors"].([]any)
			if code != c.status || len(errs) != 1 || get(errs[0], "detail") != c.detail {
				t.Fatalf("PATCH %v = %d %v, want %d %q", c.body, code, out, c.status, c.detail)
			}
		})
	}
	if got := vars(e.must(200, "GET", path, nil)); len(got) != 2 {
		t.Fatalf("refused PATCHes changed the env: %v", got)
	}
	e.must(404, "GET", "/v3/apps/not-an-app/environment_variables", nil)
	e.must(404, "PATCH", "/v3/apps/not-an-app/environment_variables", map[string]any{"var": map[string]any{"A": "b"}})
	code, out, _ := e.do("POST", "/v3/spaces/"+e.space("apps")+"/actions/apply_manifest", "applications:\n- name: bad\n  env: {VCAP_APPLICATION: x}\n")
	if errs, _ := out["errors"].([]any); code != 422 || len(errs) != 1 || get(errs[0], "detail") != "For application 'bad': Env cannot start with VCAP_" {
		t.Fatalf("manifest with a reserved env name: %d %v", code, out)
	}
}

// TestManifestRoutes checks the route keys of a manifest as CC applies them: listed
// routes are mapped and others kept, random-route and default-route map one route only
// to an app without routes, no-route unmaps them all, and nothing asked means no route.
func TestManifestRoutes(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	cases := []struct {
		name      string
		manifests []string // applied in turn to app name
		want      []string // route URLs after the last; "name-*" matches a random host
	}{
		{"nothing asked", []string{""}, nil},
		{"default route", []string{"default-route: true", "default-route: true"}, []string{"dflt.apps.localhost"}},
		{"random route", []string{"random-route: true", "random-route: true"}, []string{"rnd-*.apps.localhost"}},
		{"listed routes add up", []string{"routes: [{route: a.apps.localhost}]", "routes: [{route: b.apps.localhost}]", "default-route: true"},
			[]string{"a.apps.localhost", "b.apps.localhost"}},
		{"no-route unmaps", []string{"default-route: true", "no-route: true"}, nil},
	}
	names := []string{"plain", "dflt", "rnd", "listed", "gone"}
	for i, c := range cases {
		name := names[i]
		t.Run(c.name, func(t *testing.T) {
			saved := e.t
			e.t = t
			defer func() { e.t = saved }()
			for _, m := range c.manifests {
				code, out, _ := e.do("POST", "/v3/spaces/"+space+"/actions/apply_manifest", "applications:\n- name: "+name+"\n  "+m+"\n")
				if code != http.StatusAccepted {
					t.Fatalf("apply %q: %d %v", m, code, out)
				}
			}
			app := first(e.must(200, "GET", "/v3/apps?names="+name+"&space_guids="+space, nil))["guid"].(string)
			var got []string
			for _, r := range e.must(200, "GET", "/v3/apps/"+app+"/routes", nil)["resources"].([]any) {
				got = append(got, get(r, "url").(string))
			}
			slices.Sort(got)
			ok := len(got) == len(c.want)
			for i := 0; ok && i < len(got); i++ {
				prefix, suffix, random := strings.Cut(c.want[i], "*")
				ok = got[i] == c.want[i] || random && strings.HasPrefix(got[i], prefix) && strings.HasSuffix(got[i], suffix) && len(got[i]) > len(prefix+suffix)
			}
			if !ok {
				t.Fatalf("routes %q, want %q", got, c.want)
			}
		})
	}
}

// TestRootLinksTheRouter checks the non-standard cfbench_router link of GET /, which
// clients use to reach routes of a domain that does not resolve; without a router URL
// the root document has no such link, as on a real CC.
func TestRootLinksTheRouter(t *testing.T) {
	for _, c := range []struct {
		name, routerURL, want string
	}{
		{"configured", "http://127.0.0.1:4321/", "http://127.0.0.1:4321"},
		{"not configured", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := New(Config{DataDir: t.TempDir(), Runtime: &fakeRuntime{specs: map[string]RunSpec{}}, User: "admin", Password: "pw",
				Secret: []byte("secret"), RouterURL: c.routerURL})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv.Handler())
			srv.SetBaseURL(hs.URL)
			t.Cleanup(func() { hs.Close(); srv.Close() })
			e := &env{t: t, srv: srv, http: hs}
			root := e.must(200, "GET", "/", nil)
			link, present := get(root, "links").(map[string]any)["cfbench_router"]
			switch {
			case c.want == "" && present:
				t.Fatalf("cfbench_router = %v, want no such link", link)
			case c.want != "" && get(link, "href") != c.want:
				t.Fatalf("cfbench_router = %v, want href %q", link, c.want)
			}
			if get(root, "links", "cloud_controller_v3", "href") != hs.URL+"/v3" {
				t.Fatalf("root links %v", root["links"])
			}
		})
	}
}

// TestRootLinksLogCacheAndCells checks links.log_cache (standard: null without a Log
// Cache, else its href) and the non-standard links.cfbench_cells (cores per isolation
// segment and the hosts its instances report, absent unless configured), and Authenticated, which the Log Cache asks.
func TestRootLinksLogCacheAndCells(t *testing.T) {
	for _, c := range []struct {
		name     string
		logCache string
		cores    map[string]float64
	}{
		{"configured", "http://127.0.0.1:4322/", map[string]float64{"apps": 1, "loadgen": 2}},
		{"not configured", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := New(Config{DataDir: t.TempDir(), Runtime: &fakeRuntime{specs: map[string]RunSpec{}}, User: "admin", Password: "pw",
				Secret: []byte("secret"), LogCacheURL: c.logCache, CellCores: c.cores,
				CellHosts: map[string][]string{"apps": {"127.0.1.1"}}})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv.Handler())
			srv.SetBaseURL(hs.URL)
			t.Cleanup(func() { hs.Close(); srv.Close() })
			e := &env{t: t, srv: srv, http: hs}
			links := get(e.must(200, "GET", "/", nil), "links").(map[string]any)
			lc, present := links["log_cache"]
			if !present {
				t.Fatal("links.log_cache missing: a real CC always has the key")
			}
			cells, hasCells := links["cfbench_cells"]
			if c.logCache == "" {
				if lc != nil || hasCells {
					t.Fatalf("log_cache = %v, cfbench_cells = %v; want null and absent", lc, cells)
				}
				return
			}
			if get(lc, "href") != "http://127.0.0.1:4322" {
				t.Errorf("log_cache = %v", lc)
			}
			if get(cells, "apps", "cores") != 1.0 || get(cells, "loadgen", "cores") != 2.0 ||
				fmt.Sprint(get(cells, "apps", "hosts")) != "[127.0.1.1]" || get(cells, "loadgen", "hosts") != nil {
				t.Errorf("cfbench_cells = %v", cells)
			}
			token := e.login("admin", "pw")
			if !srv.Authenticated("bearer "+token) || srv.Authenticated("bearer x.y.z") || srv.Authenticated("") {
				t.Error("Authenticated: want true for a token of this API only")
			}
		})
	}
}

// TestBuildOfAPackageNotUploaded: cf start of an app whose newest package awaits its
// bits is CC's 400, which the cf CLI turns into its advice; the package is created at
// /v3/packages/ as at /v3/packages, as CC's router takes either.
func TestBuildOfAPackageNotUploaded(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	app := e.must(201, "POST", "/v3/apps", map[string]any{"name": "bare", "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}})["guid"]
	pkg := e.must(201, "POST", "/v3/packages/", map[string]any{"type": "bits", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}})
	if pkg["state"] != "AWAITING_UPLOAD" {
		t.Fatalf("package %v", pkg)
	}
	code, out, _ := e.do("POST", "/v3/builds", map[string]any{"package": map[string]any{"guid": pkg["guid"]}})
	if code != 400 || get(out["errors"].([]any)[0], "detail") != "Bad request: Cannot stage package whose state is not ready." {
		t.Errorf("build of a package awaiting upload: %d %v", code, out)
	}
}

// TestDropletLists: an app's droplets, and all droplets by app, as cf curl and the cf
// CLI's specs read them.
func TestDropletLists(t *testing.T) {
	e := newEnv(t, t.TempDir())
	app := e.push(e.space("apps"), "applications:\n- name: web\n")
	current := get(e.must(200, "GET", "/v3/apps/"+app+"/droplets/current", nil), "guid")
	for _, path := range []string{"/v3/apps/" + app + "/droplets?order_by=-created_at", "/v3/droplets?app_guids=" + app + "&states=STAGED"} {
		if list := e.must(200, "GET", path, nil)["resources"].([]any); len(list) != 1 || get(list[0], "guid") != current {
			t.Errorf("GET %s: %v, want the current droplet %v", path, list, current)
		}
	}
	if n := len(e.must(200, "GET", "/v3/droplets?app_guids=none", nil)["resources"].([]any)); n != 0 {
		t.Errorf("droplets of no app: %d", n)
	}
	e.must(404, "GET", "/v3/apps/none/droplets", nil)
}
