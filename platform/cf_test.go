package platform

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// TestCF runs the run engine's operations against one local foundation: services,
// pushes from a manifest and from a binary, scaling, env, routes and failures. The
// subtests run in order and build on each other (the db instance, the web app).
func TestCF(t *testing.T) {
	f, cl := testfoundation.Start(t)
	c := New(cl)
	if c.Client() != cl {
		t.Fatal("Client() is not the client given to New")
	}
	// Each part of the test has 3 minutes of its own (within), not a share of one
	// deadline for all: under the load of a whole make test, the parts before the last
	// took 150 s instead of 40 and left it none.
	within := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		t.Cleanup(cancel)
		return ctx
	}
	ctx := within(t)
	bin := testfoundation.StubBinary(t)
	opts := client.NewSpaceListOptions()
	opts.Names.EqualTo("apps")
	space, err := cl.Spaces.Single(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}

	var db string // the service instance bound by the apps below
	t.Run("EnsureServiceInstance", func(t *testing.T) {
		ctx := within(t)
		cases := []struct {
			name, instance, offering, plan string
			created                        bool
			err                            string // substring of the error, "" for success
		}{
			{"missing, not creatable", "db", "", "", false, "Try: cf services, or cf marketplace then cf create-service OFFERING PLAN db"},
			{"unknown offering", "db", "mysql", "db", false, `service offering "mysql" is not in the marketplace. Try: cf marketplace`},
			{"unknown plan", "db", "postgres", "huge", false, `has no plan "huge" (it has db). Try: cf marketplace -e postgres`},
			{"created", "db", "postgres", "db", true, ""},
			{"existing", "db", "postgres", "db", false, ""},
			{"existing, no offering given", "db", "", "", false, ""},
			{"the only plan", "db2", "postgres", "", true, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				guid, created, err := c.EnsureServiceInstance(ctx, space.GUID, tc.instance, tc.offering, tc.plan)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("err = %v, want one saying %q", err, tc.err)
					}
					return
				}
				if err != nil || created != tc.created || guid == "" {
					t.Fatalf("= %q, created %v, %v; want created %v", guid, created, err, tc.created)
				}
				if tc.instance == "db" {
					if db != "" && guid != db {
						t.Fatalf("guid %s, want the instance made before, %s", guid, db)
					}
					db = guid
				}
			})
		}
		if _, _, err := c.EnsureServiceInstance(ctx, space.GUID, "nope", "", ""); !errors.Is(err, ErrNoServiceInstance) {
			t.Fatalf("err = %v, want ErrNoServiceInstance", err)
		}
	})
	if db == "" {
		t.Fatal("no service instance to bind")
	}

	// A directory-based manifest, as a user writes one: the binary in app/, the
	// manifest beside it.
	dir := t.TempDir()
	copyFile(t, bin, filepath.Join(dir, "app", "cfbench-stub"))
	manifest := writeFile(t, dir, "manifest.yml", `applications:
- name: web
  path: app
  memory: 64M
  instances: 1
  buildpacks: [binary_buildpack]
  command: ./cfbench-stub
  env: {FROM_MANIFEST: m, OVERRIDDEN: manifest, NUMBER: 42}
  routes:
  - route: web.apps.localhost
  services: [db]
`)
	var web *App
	t.Run("push a manifest", func(t *testing.T) {
		ctx := within(t)
		var err error
		web, err = pushManifest(ctx, c, "cfbench", "apps", manifest, "", Overrides{Env: map[string]string{"OVERRIDDEN": "overlay", "EXTRA": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if web.Name != "web" || web.GUID == "" || web.ProcessGUID == "" || web.Instances != 1 {
			t.Fatalf("pushed %+v", web)
		}
		if err := c.WaitRunning(ctx, web.ProcessGUID, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		env, err := c.AppEnv(ctx, web.GUID)
		want := map[string]string{"FROM_MANIFEST": "m", "OVERRIDDEN": "overlay", "NUMBER": "42", "EXTRA": "x"}
		if err != nil || !maps.Equal(env, want) {
			t.Fatalf("AppEnv = %v, %v; want %v", env, err, want)
		}
		// What the instances get: the same variables and the binding.
		full, err := cl.Applications.GetEnvironment(ctx, web.GUID)
		if err != nil || full.EnvVars["OVERRIDDEN"] != "overlay" || !strings.Contains(string(full.SystemEnvVars["VCAP_SERVICES"]), `"instance_name":"db"`) {
			t.Fatalf("app environment %+v, %v", full, err)
		}
		found, err := c.FindApp(ctx, space.GUID, "web")
		if err != nil || found == nil || *found != *web {
			t.Fatalf("FindApp = %+v, %v; want %+v", found, err, web)
		}
		if none, err := c.FindApp(ctx, space.GUID, "nope"); none != nil || err != nil {
			t.Fatalf("FindApp of a missing app = %+v, %v", none, err)
		}
	})
	if web == nil {
		t.Fatal("no app pushed")
	}

	// What the neighbours check reads: the idle app with its instance, host and space,
	// under the check's 0.1 cores; left out when skip says so.
	t.Run("AppsCPU", func(t *testing.T) {
		ctx := within(t)
		// An instance's first reading covers its start: the stats sampler's first
		// window may be a few ms of exec and runtime start-up, which read 0.5 cores
		// once on a loaded host. The app is idle from the readings after that, a
		// sampling interval (200 ms) later; 10 s bound that wait.
		var a AppCPU
		for deadline := time.Now().Add(10 * time.Second); ; {
			apps, err := c.AppsCPU(ctx, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(apps, func(a AppCPU) bool { return a.GUID == web.GUID })
			if i < 0 {
				t.Fatalf("AppsCPU = %+v, want web among them", apps)
			}
			if a = apps[i]; a.Cores < 0.1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if a.Name != "web" || a.Space != "apps" || a.SpaceGUID != space.GUID || a.Instances != 1 || len(a.Hosts) != 1 || a.Cores < 0 || a.Cores >= 0.1 {
			t.Errorf("web: %+v, want 1 running instance on a host in space apps, idle (under 0.1 cores) within 10 s of its start", a)
		}
		skipped, err := c.AppsCPU(ctx, "", func(spaceGUID, name string) bool { return spaceGUID == space.GUID && name == "web" })
		if err != nil || slices.ContainsFunc(skipped, func(a AppCPU) bool { return a.GUID == web.GUID }) {
			t.Errorf("AppsCPU skipping web = %+v, %v", skipped, err)
		}
	})

	t.Run("RouteTarget", func(t *testing.T) {
		ctx := within(t)
		target, err := c.RouteTarget(ctx, web.GUID)
		if err != nil {
			t.Fatal(err)
		}
		if target.URL != "http://web.apps.localhost" || target.ConnectTo != f.Info().RouterAddr {
			t.Fatalf("target %+v, want http://web.apps.localhost through %s", target, f.Info().RouterAddr)
		}
		// The router routes by Host header: dial ConnectTo, ask for the URL.
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, target.ConnectTo)
			}}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(target.URL + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/hello through %s = %d %s", target.URL, target.ConnectTo, resp.StatusCode, body)
		}
	})

	// A matrix cell: the same manifest's app under another name, on its own route,
	// with its memory and instances; the first app stays as it was.
	t.Run("push a manifest with overrides", func(t *testing.T) {
		ctx := within(t)
		cell, err := pushManifest(ctx, c, "cfbench", "apps", manifest, "", Overrides{Env: map[string]string{"OVERRIDDEN": "cell"},
			Memory: "32M", Instances: 2, NameSuffix: "-c2"})
		if err != nil {
			t.Fatal(err)
		}
		if cell.Name != "web-c2" || cell.GUID == web.GUID || cell.Instances != 2 {
			t.Fatalf("pushed %+v, want web-c2 with 2 instances beside %+v", cell, web)
		}
		proc, err := cl.Processes.Get(ctx, cell.ProcessGUID)
		if err != nil || proc.MemoryInMB != 32 {
			t.Fatalf("process %+v, %v; want 32 MB", proc, err)
		}
		if target, err := c.RouteTarget(ctx, cell.GUID); err != nil || target.URL != "http://web-c2.apps.localhost" {
			t.Fatalf("route %+v, %v; want web-c2.apps.localhost", target, err)
		}
		if env, err := c.AppEnv(ctx, web.GUID); err != nil || env["OVERRIDDEN"] != "overlay" {
			t.Fatalf("the first app's env %v, %v: the cell's push changed it", env, err)
		}
		if _, err := cl.Applications.Delete(ctx, cell.GUID); err != nil {
			t.Fatal(err)
		}
	})

	// The quotas a plan is checked against: the org's (no limits here) and a space
	// quota applied as cf create-space-quota and cf set-space-quota do.
	t.Run("Quotas", func(t *testing.T) {
		ctx := within(t)
		orgGUID, err := c.org(ctx, "cfbench")
		if err != nil {
			t.Fatal(err)
		}
		q, err := cl.SpaceQuotas.Create(ctx, resource.NewSpaceQuotaCreate("small", orgGUID).WithTotalMemoryInMB(2048).WithTotalInstances(4))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.SpaceQuotas.Apply(ctx, q.GUID, []string{space.GUID}); err != nil {
			t.Fatal(err)
		}
		got, err := c.Quotas(ctx, "cfbench", "apps", "loadgen", "not-yet")
		if err != nil || len(got) != 2 {
			t.Fatalf("Quotas = %+v, %v; want the org's and the apps space's", got, err)
		}
		org, apps := got[0], got[1]
		if org.Of != "org cfbench" || org.TotalMemoryMB != nil || apps.Of != "space apps" || apps.Name != "small" ||
			apps.TotalMemoryMB == nil || *apps.TotalMemoryMB != 2048 || apps.TotalInstances == nil || *apps.TotalInstances != 4 {
			t.Fatalf("quotas %+v, %+v", org, apps)
		}
		// Each says what the started apps it covers hold already: web, in space apps.
		proc, err := cl.Processes.Get(ctx, web.ProcessGUID)
		if err != nil {
			t.Fatal(err)
		}
		want := AppUsage{Name: "web", Space: "apps", MemoryMB: proc.Instances * proc.MemoryInMB, Instances: proc.Instances}
		for _, q := range got {
			if !slices.Contains(q.Apps, want) {
				t.Errorf("%s: started apps %+v, want %+v among them", q.Of, q.Apps, want)
			}
		}
	})

	t.Run("Scale", func(t *testing.T) {
		ctx := within(t)
		for _, n := range []int{3, 1} {
			if err := c.Scale(ctx, web.ProcessGUID, n); err != nil {
				t.Fatal(err)
			}
			desired, stats, err := c.Instances(ctx, web.ProcessGUID)
			if err != nil || desired != n || len(stats) != n {
				t.Fatalf("after scaling to %d: desired %d, %d stats, %v", n, desired, len(stats), err)
			}
			if err := c.WaitRunning(ctx, web.ProcessGUID, n, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.WaitRunning(ctx, web.ProcessGUID, 2, time.Minute); err == nil || !strings.Contains(err.Error(), "fewer than the 2 awaited. Try: cf scale web -i 2") {
			t.Fatalf("waiting for more instances than desired: %v", err)
		}
		if err := c.Scale(ctx, web.ProcessGUID, -1); err == nil {
			t.Fatal("scaled to -1 instances")
		}
	})

	t.Run("BindingCredentials", func(t *testing.T) {
		ctx := within(t)
		creds, err := c.BindingCredentials(ctx, web.GUID, db)
		if err != nil {
			t.Fatal(err)
		}
		if uri, _ := creds["uri"].(string); !strings.HasPrefix(uri, "postgres") {
			t.Fatalf("credentials %v: no postgres uri", creds)
		}
	})

	t.Run("PushBinary", func(t *testing.T) {
		ctx := within(t)
		idle, err := c.PushBinary(ctx, BinaryApp{Org: "cfbench", Space: "apps", Name: "idle", Binary: bin, Memory: "64M"})
		if err != nil {
			t.Fatal(err)
		}
		if desired, stats, err := c.Instances(ctx, idle.ProcessGUID); err != nil || desired != 0 || idle.Instances != 0 || len(stats) != 0 {
			t.Fatalf("an app pushed with 0 instances: desired %d (app says %d), stats %+v, %v", desired, idle.Instances, stats, err)
		}
		gen, err := c.PushBinary(ctx, BinaryApp{Org: "cfbench", Space: "apps", Name: "gen", Binary: bin, Memory: "64M", Instances: 1,
			Env: map[string]string{"ROLE": "generator"}, Services: []string{"db"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRunning(ctx, gen.ProcessGUID, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RouteTarget(ctx, gen.GUID); err == nil || !strings.Contains(err.Error(), "has no HTTP route. Try: cf map-route") {
			t.Fatalf("RouteTarget of an app without a route: %v", err)
		}
		if creds, err := c.BindingCredentials(ctx, gen.GUID, db); err != nil || creds["uri"] == nil {
			t.Fatalf("credentials %v, %v", creds, err)
		}
		if _, err := c.BindingCredentials(ctx, web.GUID, "not-an-instance"); err == nil || !strings.Contains(err.Error(), "Try: cf bind-service") {
			t.Fatalf("credentials of a missing binding: %v", err)
		}

		if err := c.SetAppEnv(ctx, gen.GUID, map[string]string{"LATER": "1"}); err != nil {
			t.Fatal(err)
		}
		if env, err := c.AppEnv(ctx, gen.GUID); err != nil || !maps.Equal(env, map[string]string{"ROLE": "generator", "LATER": "1"}) {
			t.Fatalf("AppEnv after SetAppEnv = %v, %v", env, err)
		}
		if err := c.SetAppEnv(ctx, gen.GUID, map[string]string{"VCAP_SERVICES": "{}"}); err == nil {
			t.Fatal("SetAppEnv set VCAP_SERVICES")
		}
		if err := c.Restart(ctx, gen.GUID); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRunning(ctx, gen.ProcessGUID, 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := c.StopApp(ctx, gen.GUID); err != nil {
			t.Fatal(err)
		}
		if _, stats, err := c.Instances(ctx, gen.ProcessGUID); err != nil || len(stats) != 1 || stats[0].State != "DOWN" {
			t.Fatalf("stats of a stopped app: %+v, %v", stats, err)
		}
		err = c.WaitRunning(ctx, gen.ProcessGUID, 1, 300*time.Millisecond)
		if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "0 of 1 awaited instances of app gen running") || !strings.Contains(err.Error(), "#0 DOWN") {
			t.Fatalf("waiting for a stopped app: %v", err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		ctx := within(t)
		twoApps := writeFile(t, t.TempDir(), "manifest.yml", "applications:\n- name: one\n- name: two\n")
		badField := writeFile(t, t.TempDir(), "manifest.yml", "applications:\n- name: bad\n  instances: many\n")
		unbound := writeFile(t, dir, "unbound.yml", "applications:\n- name: unbound\n  path: app\n  services: [missing-db]\n")
		notELF := writeFile(t, t.TempDir(), "run.sh", "#!/bin/sh\necho hi\n")
		cases := []struct {
			name string
			push func() (*App, error)
			want []string // substrings of the error
			is   error
		}{
			{"two apps, none named", func() (*App, error) { return pushManifest(ctx, c, "cfbench", "apps", twoApps, "", Overrides{}) },
				[]string{twoApps, "lists 2 apps (one, two): name the one to push"}, nil},
			{"no such app", func() (*App, error) { return pushManifest(ctx, c, "cfbench", "apps", twoApps, "three", Overrides{}) },
				[]string{`has no app "three" (it lists one, two)`}, nil},
			{"bad field", func() (*App, error) { return pushManifest(ctx, c, "cfbench", "apps", badField, "", Overrides{}) },
				[]string{badField, `app "bad": instances: want a whole number of at least 0, got "many" (line 3)`}, nil},
			{"missing manifest", func() (*App, error) {
				return pushManifest(ctx, c, "cfbench", "apps", filepath.Join(dir, "nope.yml"), "", Overrides{})
			},
				[]string{"read manifest"}, os.ErrNotExist},
			{"unbound service", func() (*App, error) { return pushManifest(ctx, c, "cfbench", "apps", unbound, "", Overrides{}) },
				[]string{"push unbound: bind missing-db", "Try: cf services"}, ErrNoServiceInstance},
			{"unknown space", func() (*App, error) { return pushManifest(ctx, c, "cfbench", "nowhere", manifest, "", Overrides{}) },
				[]string{`space "nowhere" not found in org cfbench. Try: cf spaces`}, nil},
			{"not ELF", func() (*App, error) {
				return c.PushBinary(ctx, BinaryApp{Org: "cfbench", Space: "apps", Name: "script", Binary: notELF})
			}, []string{notELF + " is not a linux/amd64 executable but a script: cells run linux/amd64: build it with GOOS=linux GOARCH=amd64 CGO_ENABLED=0"}, ErrNotLinuxAmd64},
			{"bad health check", func() (*App, error) {
				return c.PushBinary(ctx, BinaryApp{Org: "cfbench", Space: "apps", Name: "hc", Binary: bin, HealthCheck: "http"})
			}, []string{`health check "http": want process or port`}, nil},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				app, err := tc.push()
				if err == nil {
					t.Fatalf("pushed %+v", app)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v\n\twant it to say %q", err, w)
					}
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("err = %v, want %v", err, tc.is)
				}
			})
		}
		// Nothing was pushed by the refused pushes.
		for _, name := range []string{"one", "bad", "unbound", "script", "hc"} {
			if a, err := c.FindApp(ctx, space.GUID, name); a != nil || err != nil {
				t.Errorf("app %s exists after a refused push: %+v, %v", name, a, err)
			}
		}
	})

	t.Run("start program not executable", func(t *testing.T) {
		ctx := within(t)
		// A start script without the execute bit (a zip from a Windows tool other
		// than the cf CLI, or a Linux file never chmodded) stages, then cannot start:
		// the binary buildpack adds no bit, so the instance crashes with status 126,
		// and the wait says what that means.
		dir := t.TempDir()
		writeFile(t, dir, "app/start.sh", "#!/bin/sh\nexec ./cfbench-stub\n")
		copyFile(t, bin, filepath.Join(dir, "app", "cfbench-stub"))
		m := writeFile(t, dir, "manifest.yml", "applications:\n- name: noexec\n  path: app\n  memory: 64M\n  buildpacks: [binary_buildpack]\n  command: ./start.sh\n  no-route: true\n")
		a, err := pushManifest(ctx, c, "cfbench", "apps", m, "", Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			_, stats, err := c.Instances(ctx, a.ProcessGUID)
			if err != nil {
				t.Fatal(err)
			}
			if len(stats) == 1 && stats[0].State == "CRASHED" {
				if got := others(stats); !strings.HasSuffix(got, "status 126: the start command's program is not executable; give it the execute bit (chmod +x) before pushing)") {
					t.Fatalf("instances: %s, want #0 crashed with status 126, explained", got)
				}
				return
			}
			if !wait.For(ctx, 100*time.Millisecond) {
				t.Fatalf("instance 0 never seen CRASHED: %+v", stats)
			}
		}
	})

	t.Run("ScaleDown", func(t *testing.T) {
		ctx := within(t)
		// The generators of a run whose process died: found by name, scaled to 0.
		if err := c.ScaleDown(ctx, space.GUID, "web"); err != nil {
			t.Fatal(err)
		}
		if desired, _, err := c.Instances(ctx, web.ProcessGUID); err != nil || desired != 0 {
			t.Fatalf("after ScaleDown: desired %d, %v; want 0", desired, err)
		}
		if err := c.ScaleDown(ctx, space.GUID, "gone-already"); err != nil {
			t.Fatalf("ScaleDown of an app that is not there: %v, want nothing to do", err)
		}
	})
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// pushManifest is LoadManifest then PushApp: a push of one manifest's app, as the
// engine's deploy does.
func pushManifest(ctx context.Context, c *CF, org, space, path, app string, o Overrides) (*App, error) {
	m, err := LoadManifest(path, app)
	if err != nil {
		return nil, err
	}
	return c.PushApp(ctx, org, space, m, o)
}
