//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// confounder is a scenario of the confounder suite: an example spec under
// examples/confounders, shortened, and the one finding it must trip.
type confounder struct {
	name string // the spec's file name without .yml
	// edits shorten the spec (old → new; each old must be in it).
	edits map[string]string
	// check is the finding the run must trip, "" for none; failed says the run must
	// exit non-zero (a check at level fail stops it).
	check  string
	failed bool
	// step is a step (from 1) the finding must name; "" for any. With alsoOther, the
	// finding may name other steps too, else only that one. message is a part its
	// message must have ("" for any).
	step      string
	alsoOther bool
	message   string
	// evidence judges the finding's evidence; dir holds the run's exported CSV files.
	// nil when check is "".
	evidence func(t *testing.T, ev map[string]any, dir string)
	// before readies what the spec expects to be there already and returns more edits.
	before func(t *testing.T, env confounderEnv) map[string]string
	// during, if set, runs once the run has started, while it runs.
	during func(t *testing.T, env confounderEnv, p *cfProcess)
	// also is a finding the run must trip besides check ("" for none), on step
	// alsoStep, its evidence judged by alsoEvidence: the same run proves two rules.
	also, alsoStep string
	alsoEvidence   func(t *testing.T, ev map[string]any)
	// dashboard runs the scenario with --dashboard and watches its live page in
	// headless Chromium: during the run the time chart grows and the marker of this
	// step and the finding appear (so the finding must trip before that step ends);
	// after the run the page shows the report. 0: no dashboard.
	dashboard int
}

// confounderEnv is what a scenario's before may use.
type confounderEnv struct {
	// push pushes the stub as an app with a route of its name and waits until the
	// router reaches it; pushCommand does with the stub's flags in command.
	push        func(t *testing.T, space, name string)
	pushCommand func(t *testing.T, space, name, command string)
	// router is the local foundation's router, host:port.
	router string
	// logStore is the local foundation's log store under its quota (logQuota).
	logStore string
}

// logQuota is the confounder suite's foundation's log quota (examples/confounders/logquota.yml):
// 100 lines per 10 s, a tenth of 100 req/s. Only the logquota scenario reads its log store.
func logQuota(c *foundation.Config) { c.LogQuota, c.LogQuotaWindow = 100, 10*time.Second }

// shorter ramps: steps of a few seconds instead of 10 s.
var shorter = map[string]string{"  hold: 10s\n  warmup: 2s\n": "  hold: 4s\n  warmup: 1s\n"}

// TestConfounders runs the confounder suite (examples/confounders, issue 16) with the
// real cf CLI on one local foundation: each scenario provokes one confounder and must
// trip exactly its own finding, with the evidence that names it, and the clean baseline
// none. Findings are read from the run's exported run_events.csv; the step figures they
// rest on are logged from step_metrics.csv and step_app_metrics.csv.
func TestConfounders(t *testing.T) {
	if testing.Short() {
		t.Skip("the confounder suite runs eight benchmarks on a local foundation")
	}
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	buildProxy(t, root)
	cf, info, cl := loggedIn(t, root, bins, logQuota, testfoundation.PlatformOffApps)
	stubZip := testfoundation.StubZip(t)
	env := confounderEnv{router: info.RouterAddr, logStore: info.LogStore, pushCommand: func(t *testing.T, space, name, command string) {
		testfoundation.PushStubCommand(t, cl, stubZip, space, name, command, 1)
		waitRouted(t, info.RouterAddr, name+"."+info.AppsDomain)
	}}
	env.push = func(t *testing.T, space, name string) { env.pushCommand(t, space, name, "./cfbench-stub") }

	for _, sc := range []confounder{
		{name: "clean", edits: shorter},
		{name: "colocation", edits: shorter, check: "colocation", failed: true, evidence: func(t *testing.T, ev map[string]any, dir string) {
			// The one shared host is the app's: the cell of segment apps.
			var appHost string
			for _, m := range readCSV(t, filepath.Join(dir, "container_metrics.csv")) {
				if m["app_name"] == "stub-fast" && m["state"] == "RUNNING" {
					appHost = m["host"]
				}
			}
			if hosts, _ := ev["hosts"].([]any); len(hosts) != 1 || appHost == "" || hosts[0] != appHost {
				t.Errorf("colocation evidence names hosts %v, want only the app's host %q", ev["hosts"], appHost)
			}
		}},
		{name: "freeze", edits: map[string]string{"  hold: 9s\n": "  hold: 8s\n"}, check: "stall", evidence: func(t *testing.T, ev map[string]any, _ string) {
			// The stub froze for 2 s; the rule's threshold is 1 s.
			if ms := num(t, ev, "longest_stall_ms"); ms < 1000 {
				t.Errorf("longest stall %v ms, want at least the threshold of 1000 ms (the stub froze for 2000 ms)", ms)
			}
			if n := num(t, ev, "omitted"); n <= 0 {
				t.Errorf("omitted %v requests, want some: the closed loop's users waited instead of sending", n)
			}
		}},
		{name: "plateau", edits: shorter, check: "plateau", step: "2",
			before: func(t *testing.T, env confounderEnv) map[string]string {
				env.push(t, "apps", "stub-fast") // what the proxy forwards to
				return map[string]string{"      # CONNECT_TO: 127.0.0.1:ROUTER_PORT\n": "      CONNECT_TO: " + env.router + "\n"}
			},
			evidence: func(t *testing.T, ev map[string]any, _ string) {
				if g := num(t, ev, "load_growth"); g < 0.99 || g > 1.01 {
					t.Errorf("load growth %v, want 1 (8 to 16 users)", g)
				}
				// The proxy lets 2 requests through at once: twice the users, the same
				// throughput. The rule's threshold is 0.25.
				if s := num(t, ev, "served"); s >= 0.15 {
					t.Errorf("served %v of the load's growth, want about 0 (under 0.15)", s)
				}
				if c := num(t, ev, "app_cpu_mean_cores"); c >= 0.25 {
					t.Errorf("the proxy app used %v cores, want it idle (under 0.25; the rule's threshold is 0.5)", c)
				}
			}},
		{name: "pool", edits: shorter, check: "pool-exhaustion", step: "2", alsoOther: true, dashboard: 2, evidence: func(t *testing.T, ev map[string]any, _ string) {
			// 2 connections, 4 then 8 users, 20 ms of pg_sleep each: half, then three
			// quarters of the app time is pool wait. The rule's threshold is 0.2.
			if s := num(t, ev, "pool_wait_share"); s < 0.35 {
				t.Errorf("pool wait share %v of the app time, want most of it (over 0.35)", s)
			}
			if n := num(t, ev, "pool_size"); n != 2 {
				t.Errorf("pool size %v, want the manifest's DB_POOL_SIZE of 2", n)
			}
			// The database is the local foundation's: its connections are watched, and
			// they are not what ran out.
			if c, m := num(t, ev, "db_connections"), num(t, ev, "db_max_connections"); c < 1 || c >= 0.9*m {
				t.Errorf("database connections %v of %v, want some in use, far from the limit", c, m)
			}
			// Step 2 doubled the load for no throughput while the app idled: a plateau,
			// which the pool explains, so it defers to this finding.
			if ev["explains_plateau"] != true {
				t.Fatalf("step 2's pool-exhaustion finding does not explain its plateau: %v", ev)
			}
			if g := num(t, ev, "plateau_load_growth"); g < 0.99 || g > 1.01 {
				t.Errorf("plateau load growth %v, want 1 (4 to 8 users)", g)
			}
		}},
		{name: "logquota", check: "coverage", step: "1", message: "quota-like",
			before: func(t *testing.T, env confounderEnv) map[string]string {
				return map[string]string{"    path: ../../.cfbench/foundation/logstore.log\n": "    path: " + env.logStore + "\n"}
			},
			evidence: func(t *testing.T, ev map[string]any, _ string) {
				// The measured 10 s hold one quota window's 100 lines of ~1000 sent.
				if c := num(t, ev, "coverage"); c < 0.07 || c > 0.13 {
					t.Errorf("coverage %v, want about 0.1 (the quota keeps 100 lines per 10 s of 100 req/s)", c)
				}
				// The gaps are whole seconds: almost every missing request is in one.
				if m, sent, found := num(t, ev, "missing_in_empty_seconds"), num(t, ev, "sent"), num(t, ev, "found"); m < 0.8*(sent-found) {
					t.Errorf("%v of the %v missing requests lie in seconds without any router line, want at least 80%%", m, sent-found)
				}
			}},
		{name: "saturation", edits: shorter, check: "generator-saturation", evidence: func(t *testing.T, ev map[string]any, _ string) {
			// Half the schedule fits through 2 requests in flight: the lag grows
			// through the step to seconds, against 20 ms per request.
			if lag := num(t, ev, "send_lag_mean_ms"); lag < 100 {
				t.Errorf("mean send lag %v ms, want hundreds", lag)
			}
			if s := num(t, ev, "send_lag_share"); s < 0.5 {
				t.Errorf("send lag share %v of the latency, want most of it (over 0.5; the rule's threshold is 0.1)", s)
			}
			if n := num(t, ev, "missed"); n <= 0 {
				t.Errorf("missed %v sends, want some: the schedule ran ahead of what 2 in flight carry", n)
			}
		}},
		{name: "noisy", edits: shorter, check: "contention", step: "2", alsoOther: true,
			before: func(t *testing.T, env confounderEnv) map[string]string {
				// The neighbour, in the app's cell; its first request starts its burn,
				// bounded so that it ends soon after the run.
				env.pushCommand(t, "apps", "stub-noisy", "./cfbench-stub --burn-cores 2 --burn-for 15s")
				return nil
			},
			during: func(t *testing.T, env confounderEnv, p *cfProcess) {
				p.waitFor(t, regexp.MustCompile(`step 2/2 starts`))
				wake(t, env.router, "stub-noisy.apps.localhost")
			},
			// The neighbour is named as such at the end of step 2, with its CPU: it is
			// no app of the run.
			also: "neighbours", alsoStep: "2", alsoEvidence: func(t *testing.T, ev map[string]any) {
				apps, _ := ev["apps"].([]any)
				var first map[string]any
				if len(apps) == 1 {
					first, _ = apps[0].(map[string]any)
				}
				if first == nil || first["app"] != "stub-noisy" || first["space"] != "apps" {
					t.Fatalf("neighbours evidence names %v, want stub-noisy of space apps alone", ev["apps"])
				}
				// It spins 2 threads on the app's cell; the rule's threshold is 0.1 cores.
				if c := num(t, first, "cpu_cores"); c < 0.3 {
					t.Errorf("stub-noisy used %v cores, want most of its half of the cell (over 0.3)", c)
				}
			},
			evidence: func(t *testing.T, ev map[string]any, _ string) {
				// The neighbour holds half the cell's shares and spins both its threads:
				// the app waits most of its ready time and gets under half its cell.
				if s := num(t, ev, "cpu_wait_share"); s < 0.5 {
					t.Errorf("wait share %v, want over the threshold of 0.5", s)
				}
				if c := num(t, ev, "app_cpu_share_of_cells"); c >= 0.6 {
					t.Errorf("the app used %v of its cell, want under 0.6 (the neighbour took half)", c)
				}
			}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var edits map[string]string
			if sc.before != nil {
				edits = sc.before(t, env)
			}
			specFile := writeConfounderSpec(t, root, bins, sc.name, sc.edits, edits)
			args := []string{"run-benchmark", "-f", specFile}
			if sc.dashboard > 0 {
				args = append(args, "--dashboard")
			}
			p := startCF(t, cf, args...)
			var live *liveDashboard
			if sc.dashboard > 0 {
				live = watchDashboard(t, p)
			}
			runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): confounder-`+sc.name+`, `))[1]
			if sc.during != nil {
				sc.during(t, env, p)
			}
			if live != nil {
				live.duringRun(t, sc.dashboard)
			}
			out, code := p.wait(t)
			if live != nil {
				live.afterRun(t)
			}
			if sc.failed != (code != 0) {
				t.Fatalf("cf run-benchmark: exit %d, want failed=%v\n%s", code, sc.failed, out)
			}
			dir := filepath.Join(t.TempDir(), "out")
			cf.mustRun(t, "benchmark-export", runID, "--dir", dir)
			logStepMetrics(t, dir)
			var found, steps []string
			var evidence map[string]any
			alsoSeen := false
			for _, e := range readCSV(t, filepath.Join(dir, "run_events.csv")) {
				if e["kind"] == "not_judged" {
					t.Logf("not judged: %s", e["message"])
				}
				if e["kind"] != "check" {
					continue
				}
				t.Logf("finding: step %s %s: %s evidence %s", e["step"], e["check_name"], e["message"], e["evidence"])
				found = append(found, e["check_name"])
				if sc.also != "" && e["check_name"] == sc.also && e["step"] == sc.alsoStep {
					var ev map[string]any
					if err := json.Unmarshal([]byte(e["evidence"]), &ev); err != nil {
						t.Errorf("evidence of %s: %v: %q", sc.also, err, e["evidence"])
					} else if sc.alsoEvidence != nil {
						sc.alsoEvidence(t, ev)
					}
					alsoSeen = true
				}
				if e["check_name"] == sc.check {
					steps = append(steps, e["step"])
					if sc.step != "" && e["step"] != sc.step {
						if !sc.alsoOther {
							t.Errorf("%s tripped on step %s, want step %s", sc.check, e["step"], sc.step)
						}
						continue
					}
					if !strings.Contains(e["message"], sc.message) {
						t.Errorf("%s says %q, want it to say %q", sc.check, e["message"], sc.message)
					}
					if err := json.Unmarshal([]byte(e["evidence"]), &evidence); err != nil {
						t.Errorf("evidence of %s: %v: %q", sc.check, err, e["evidence"])
					}
				}
			}
			if sc.step != "" && sc.check != "" && !slices.Contains(steps, sc.step) {
				t.Errorf("%s tripped on steps %v, want step %s among them", sc.check, steps, sc.step)
			}
			var want []string
			if sc.check != "" {
				want = []string{sc.check}
			}
			if sc.also != "" {
				want = slices.Sorted(slices.Values(append(want, sc.also)))
				if !alsoSeen {
					t.Errorf("%s did not trip on step %s", sc.also, sc.alsoStep)
				}
			}
			found = slices.Compact(slices.Sorted(slices.Values(found)))
			if !slices.Equal(found, want) {
				t.Fatalf("checks tripped: %v, want exactly %v\n%s", found, want, out)
			}
			if sc.evidence != nil && evidence != nil {
				sc.evidence(t, evidence, dir)
			}
			if sc.check != "" && !strings.Contains(out, sc.check) {
				t.Errorf("the run's output does not name the finding %s:\n%s", sc.check, out)
			}
		})
	}
}

// writeConfounderSpec copies examples/confounders/NAME.yml and the manifests it uses
// into a temp dir, the manifests pointing at the freshly built binaries in bins, the
// spec with each of edits applied (every old text must be in it), and returns its path.
func writeConfounderSpec(t *testing.T, root, bins, name string, edits ...map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	mdir := filepath.Join(dir, "manifests")
	if err := os.Mkdir(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"stub.yml", "proxy-plateau.yml", "bulletin-node.yml"} {
		b, err := os.ReadFile(filepath.Join(root, "manifests", m))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "path: ../bin/", "path: "+bins+"/")
		s = strings.ReplaceAll(s, "path: ../apps/", "path: "+filepath.Join(root, "apps")+"/")
		if err := os.WriteFile(filepath.Join(mdir, m), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "examples", "confounders", name+".yml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "../../manifests/", mdir+"/")
	for _, e := range edits {
		for old, repl := range e {
			if !strings.Contains(s, old) {
				t.Fatalf("examples/confounders/%s.yml has no %q: update this test", name, old)
			}
			s = strings.ReplaceAll(s, old, repl)
		}
	}
	file := filepath.Join(dir, name+".yml")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// buildProxy builds cmd/cfbench-proxy into buildPushed's bin dir, at proxy/, as make
// build lays out bin/.
func buildProxy(t *testing.T, root string) {
	t.Helper()
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	buildOnce(t, root, env, filepath.Join("pushed", "proxy", "cfbench-proxy"), "./cmd/cfbench-proxy")
}

// logStepMetrics logs the stored figures of every step of an exported run: what the
// checks judged.
func logStepMetrics(t *testing.T, dir string) {
	t.Helper()
	for _, m := range readCSV(t, filepath.Join(dir, "step_metrics.csv")) {
		t.Logf("%s step %s: %s req/s, %s users × %s instances, offered %s, mean %s µs, p50 %s µs, send lag mean %s µs, stalled %s ms, omitted %s, missed %s",
			m["variant"], m["step"], m["throughput"], m["users"], m["instances_seen"], m["offered_rate"], m["mean_us"], m["p50_us"],
			m["send_lag_mean_us"], m["stalled_ms"], m["omitted"], m["missed"])
	}
	for _, a := range readCSV(t, filepath.Join(dir, "step_app_metrics.csv")) {
		t.Logf("%s step %s: %s %s: cpu mean %s cores, max %s, %s of %s available on %s cell(s) (%s, %s points, %s covered), %s instance(s), run-queue wait %s cores (%s of ready time)",
			a["variant"], a["step"], a["role"], a["app_name"], a["cpu_mean_cores"], a["cpu_max_cores"], a["cpu_total_cores"], a["cpu_available_cores"], a["cells"], a["cpu_source"],
			a["cpu_points"], a["cpu_covered"], a["instances"], a["cpu_wait_cores"], a["cpu_wait_share"])
	}
}

// num reads a number of a finding's evidence; the test fails when it is missing.
func num(t *testing.T, ev map[string]any, key string) float64 {
	t.Helper()
	v, ok := ev[key].(float64)
	if !ok {
		t.Fatalf("evidence has no number %s: %v", key, fmt.Sprint(ev))
	}
	return v
}

// wake sends one request to the app with route host through the router.
func wake(t *testing.T, router, host string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+router+"/hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatalf("wake %s: %v", host, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("wake %s: %s", host, resp.Status)
	}
}

// waitRouted waits until the router answers /healthz of the app with route host: the
// app runs and its route is mapped.
func waitRouted(t *testing.T, router, host string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+router+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := testhttp.Client.Do(req)
		last := fmt.Sprint(err)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s is not reachable through the router %s: %s", host, router, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
