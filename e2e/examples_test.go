//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestExamplesOnLocalFoundation runs example specs shortened on one local foundation,
// each for the comparison it exists for. These runs are checked for what they record
// and report, not for clean measurements: they run beside the other packages' tests
// (the measured runs are TestJavaVsNodeOnLocalFoundation and TestConfounders).
func TestExamplesOnLocalFoundation(t *testing.T) {
	testtier.External(t, "the real cf CLI, the local foundation, a JDK and Node.js")
	// Its own foundation: it runs beside the package's other runs, which mostly wait.
	t.Parallel()
	root := moduleRoot(t)
	for _, p := range []string{"apps/bulletin-java/target/bulletin-java.jar", "apps/proxy-java/target/proxy-java.jar", "apps/proxy-node/lib/timings.js"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("the sample apps are not built (%v): run make build", err)
		}
	}
	bins := buildPushed(t, root)
	cf, f, cl := loggedInTo(t, root, bins)
	info := f.Info()
	// First: it compares the apps cell's busy time with the app's utilisation, so no
	// other run's apps may be idling on that cell yet.
	t.Run("a ramp of app instances", func(t *testing.T) { appInstances(t, cf, cl, f, root, bins) })
	t.Run("thesis pool matrix", func(t *testing.T) { thesisPool(t, root, cf, cl) })
	t.Run("proxy bake-off", func(t *testing.T) { proxyBakeoff(t, root, cf, cl, info) })
	t.Run("a ramp of rates in all", func(t *testing.T) { rateLevels(t, cf, cl, root, bins) })
	t.Run("the Cloud Controller's own API", func(t *testing.T) { ccAPI(t, root, cf, info.APIURL) })
}

// ccAPI runs examples/cc-api.yml, shortened to 1 and 4 users, against the foundation's
// own Cloud Controller at apiURL with the token of the cf CLI's login (the plugin
// passes it as ${CF_OAUTH_TOKEN}): every request is answered 200, and one generator
// instance runs each step's users.
func ccAPI(t *testing.T, root string, cf *cfCLI, apiURL string) {
	t.Helper()
	ccSpec := writeTemp(t, "cc-api.yml", editedExample(t, root, "cc-api.yml", map[string]string{
		"url: https://api.sys.example.com":             "url: " + apiURL,
		"  users: [1, 2, 4, 8, 16, 32]\n  hold: 60s\n": "  users: [1, 4]\n  hold: 3s\n",
		"  warmup: 5s\n":                               "  warmup: 1s\n",
	}))
	cc := startCF(t, cf, "run-benchmark", "-f", ccSpec)
	ccRun := cc.waitFor(t, regexp.MustCompile(`^run (\S+): cc-api, 1 variant\(s\), 2 step\(s\) each`))[1]
	if out, code := cc.wait(t); code != 0 {
		t.Fatalf("cf run-benchmark cc-api: exit %d\n%s", code, out)
	}
	ccStatus := map[string]int{}
	for _, r := range readCSV(t, filepath.Join(cf.dir, "results", ccRun, "samples.csv")) {
		ccStatus[r["status"]]++
	}
	if ccStatus["200"] == 0 || len(ccStatus) != 1 {
		t.Errorf("GET /v3/spaces statuses %v, want only 200 (the token reached the Cloud Controller)", ccStatus)
	}
	// A sweep of users: one generator instance runs each step's users.
	var users []string
	for _, st := range readCSV(t, filepath.Join(cf.dir, "results", ccRun, "steps.csv")) {
		users = append(users, st["instances"]+"×"+st["users"])
	}
	if !slices.Equal(users, []string{"1×1", "1×4"}) {
		t.Errorf("cc-api steps (instances×users) %v, want 1×1 and 1×4", users)
	}
}

// thesisPool runs examples/thesis/pool.yml (the study's pool question) shortened to a
// matrix of two pools (1 and 2 connections), 20 users and one step of 3 s: one
// manifest pushed as two apps with their own env and routes, each a variant in the
// results with the configuration it was pushed as; and the report answers the
// question: each pool, full (more users than connections, every request holding its
// connection 100 ms), has its pool-exhaustion finding quoting its size.
//
// The pools are that small because this run shares the host with the other packages'
// tests: the bulletin board opens pooled connections as needed, one at a time, and on
// a starved host a pool of 10 had not opened them all 2 s into its step, so the check
// rightly took its waits for connections being opened, not for a full pool (CI, stop
// 40). A pool of 1 is full from the app's start, and while a pool of 2 waits for its
// second connection the server already has two in use (the other app's and the
// watcher's own), so neither answer rests on the host's speed.
func thesisPool(t *testing.T, root string, cf *cfCLI, cl *client.Client) {
	t.Helper()
	file := writeTemp(t, "pool.yml", editedExample(t, root, "thesis/pool.yml", map[string]string{
		"../../manifests/":                filepath.Join(root, "manifests") + "/",
		"DB_POOL_SIZE: [30, 60, 90]":      "DB_POOL_SIZE: [1, 2]",
		"users: [150]\n  generators: 3\n": "users: [20]\n  generators: 2\n",
		"  hold: 15s\n  warmup: 4s\n":     "  hold: 3s\n  warmup: 1s\n",
	}))
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): thesis-pool, 2 variant\(s\), 1 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark thesis/pool.yml: exit %d\n%s", code, out)
	}
	for _, want := range []string{"pool-1 runs as bulletin-java-1 (", "pool-2 runs as bulletin-java-2 (", "run " + runID + " completed",
		"cleanup stop: stopped bulletin-java-1, bulletin-java-2;"} {
		if !strings.Contains(out, want) {
			t.Errorf("thesis/pool.yml output lacks %q:\n%s", want, out)
		}
	}
	dir := filepath.Join(cf.dir, "results", runID)
	variants := map[string]map[string]string{}
	for _, v := range readCSV(t, filepath.Join(dir, "variants.csv")) {
		variants[v["variant"]] = v
	}
	for _, size := range []string{"1", "2"} {
		v := variants["pool-"+size]
		app := "bulletin-java-" + size
		if v == nil || v["listed"] != "pool" || v["app_name"] != app || v["matrix"] != `{"env.DB_POOL_SIZE": "`+size+`"}` ||
			v["app_memory_mb"] != "800" || v["app_instances"] != "1" || !strings.Contains(v["app_env"], `"DB_POOL_SIZE": "`+size+`"`) ||
			!strings.Contains(v["app_env"], `"DB_POOL_TIMEOUT_MS": "30000"`) ||
			!strings.Contains(v["app_manifest"], "name: "+app+"\n") || !strings.Contains(v["target_url"], app+".") {
			t.Errorf("variants.csv pool-%s: %v", size, v)
		}
		// What the app got is what the run recorded; cleanup: stop (the default) left
		// it stopped.
		a, err := cl.Applications.Single(context.Background(), &client.AppListOptions{Names: client.Filter{Values: []string{app}}})
		if err != nil {
			t.Fatalf("app %s: %v", app, err)
		}
		if a.State != "STOPPED" {
			t.Errorf("app %s is %s after the run, want STOPPED (cleanup: stop)", app, a.State)
		}
		env, err := cl.Applications.GetEnvironmentVariables(context.Background(), a.GUID)
		if err != nil || env["DB_POOL_SIZE"] == nil || *env["DB_POOL_SIZE"] != size {
			t.Errorf("app %s env %v, %v; want DB_POOL_SIZE=%s", app, env, err, size)
		}
	}
	steps := map[string]int{}
	for _, m := range readCSV(t, filepath.Join(dir, "step_metrics.csv")) {
		if m["count"] != "0" {
			steps[m["variant"]]++
		}
	}
	if steps["pool-1"] != 1 || steps["pool-2"] != 1 {
		t.Errorf("steps with requests per variant %v, want one each of pool-1 and pool-2", steps)
	}
	// The question's answer: each pool was the limit, and the report says so with its size.
	rep := cf.mustRun(t, "benchmark-report", runID, "--format", "json")
	var doc struct {
		Runs []struct {
			Findings []struct {
				Variant, Check string
				Step           int
				Figures        map[string]any
			}
		}
	}
	if err := json.Unmarshal([]byte(rep), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("benchmark-report --format json: %v\n%s", err, rep)
	}
	pools := map[string]float64{}
	for _, f := range doc.Runs[0].Findings {
		if f.Check == "pool-exhaustion" && f.Step == 1 {
			size, _ := f.Figures["pool_size"].(float64)
			share, _ := f.Figures["pool_wait_share"].(float64)
			pools[f.Variant] = size
			t.Logf("%s: pool of %v, %.0f%% of the app time waiting for it", f.Variant, size, 100*share)
		}
	}
	if pools["pool-1"] != 1 || pools["pool-2"] != 2 {
		t.Errorf("pool-exhaustion findings by variant: pool sizes %v, want pool-1: 1 and pool-2: 2\n%s", pools, out)
	}
}

// proxyBakeoff runs examples/proxy-bakeoff.yml shortened to open-loop levels of 25 and
// 50 req/s of 3 s each: the stub (0-50 ms, 10 KB) pushed as stub-dither, the two proxies
// from their manifests in front of it, and the report setting them side by side at each
// level: throughput, latency and app CPU per variant and step, the event loop's ratios
// against the threads per step, and each proxy's own timings (upstream time inside its
// total, inside the router's).
func proxyBakeoff(t *testing.T, root string, cf *cfCLI, cl *client.Client, info foundation.Info) {
	t.Helper()
	testfoundation.PushStubCommand(t, cl, testfoundation.StubZip(t), "apps", "stub-dither", "./cfbench-stub --dither 50ms --size 10240", 1)
	waitRouted(t, info.RouterAddr, "stub-dither."+info.AppsDomain)
	file := writeTemp(t, "proxy-bakeoff.yml", editedExample(t, root, "proxy-bakeoff.yml", map[string]string{
		"../manifests/": filepath.Join(root, "manifests") + "/",
		"      # CONNECT_TO: 127.0.0.1:ROUTER_PORT\n":                                "      CONNECT_TO: " + info.RouterAddr + "\n",
		"path: ../.cfbench/foundation/access.log":                                    "path: " + info.AccessLog,
		"rates: [350, 700, 1000, 1200, 1400], generators: 2, hold: 60s, warmup: 10s": "rates: [25, 50], generators: 2, hold: 3s, warmup: 1s",
		"    interval: 5s\n": "    interval: 1s\n",
	}))
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): proxy-bakeoff, 2 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark proxy-bakeoff: exit %d\n%s", code, out)
	}
	for _, want := range []string{"threads runs as proxy-java (", "eventloop runs as proxy-node (", "run " + runID + " completed",
		"6. Variants side by side"} {
		if !strings.Contains(out, want) {
			t.Errorf("proxy-bakeoff output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "app timings") {
		t.Errorf("the run warned about app timings:\n%s", out)
	}
	// Every request went through a proxy to the stub and came back whole.
	dir := filepath.Join(cf.dir, "results", runID)
	for _, r := range readCSV(t, filepath.Join(dir, "samples.csv")) {
		if r["status"] != "200" || r["bytes"] != "10240" {
			t.Fatalf("sample %v: want 200 with the stub's 10240 bytes", r)
		}
	}
	rep := cf.mustRun(t, "benchmark-report", runID, "--format", "json")
	var doc struct {
		Runs []proxyReport
	}
	if err := json.Unmarshal([]byte(rep), &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("benchmark-report --format json: %d runs, %v\n%s", len(doc.Runs), err, rep)
	}
	report := doc.Runs[0]
	apps := map[string]string{"threads": "proxy-java", "eventloop": "proxy-node"}
	if len(report.Variants) != 2 {
		t.Fatalf("report variants %d, want threads and eventloop", len(report.Variants))
	}
	for _, v := range report.Variants {
		if len(v.Steps) != 2 {
			t.Fatalf("%s: %d steps in the report, want 2", v.Name, len(v.Steps))
		}
		for i, st := range v.Steps {
			if want := float64(25 * (i + 1)); st.Load != want || st.Throughput <= 0 || st.MeanUS <= 0 || st.P99US <= 0 {
				t.Errorf("%s step %d: load %v (want %v req/s offered), throughput %v, mean %v µs, p99 %v µs", v.Name, st.Step, st.Load, want, st.Throughput, st.MeanUS, st.P99US)
			}
			if st.App == nil || st.App.Name != apps[v.Name] || st.App.CPUMeanCores == nil || *st.App.CPUMeanCores <= 0 {
				t.Errorf("%s step %d: app usage %+v, want %s's CPU", v.Name, st.Step, st.App, apps[v.Name])
			}
			if st.Decomposition == nil {
				t.Errorf("%s step %d: no latency decomposition (router lines and the proxy's timings)", v.Name, st.Step)
			}
			t.Logf("%s step %d: %.0f req/s offered, %.1f req/s, mean %.0f µs, p99 %d µs, decomposition %v", v.Name, st.Step, st.Load, st.Throughput, st.MeanUS, st.P99US, st.Decomposition)
		}
	}
	c := report.Comparison
	if c == nil || c.Reference != "threads" || len(c.Variants) != 2 || c.Variants[1].Variant != "eventloop" || len(c.Variants[1].Steps) != 2 {
		t.Fatalf("comparison %+v, want eventloop against threads at both levels", c)
	}
	for _, st := range c.Variants[1].Steps {
		if st.MeanRatio == nil || st.CPUPerRequest == nil {
			t.Errorf("eventloop step %d against threads: mean ratio %v, CPU per request ratio %v; want both", st.Step, st.MeanRatio, st.CPUPerRequest)
		}
	}
	// Each proxy's own time holds its upstream exchange and lies within the router's.
	for _, r := range readCSV(t, filepath.Join(dir, "request_times.csv")) {
		if r["app_us"] == "" || r["router_us"] == "" {
			t.Fatalf("request without the proxy's or the router's timing: %v", r)
		}
		if atoi(t, r["pool_wait_us"])+atoi(t, r["query_us"]) > atoi(t, r["app_us"]) {
			t.Fatalf("pool wait + upstream over the proxy's total: %v", r)
		}
	}
}

// proxyReport is what proxyBakeoff reads of a run in the report's JSON (report/REPORT.md).
type proxyReport struct {
	Variants []struct {
		Name  string
		Steps []struct {
			Step       int
			Load       float64
			Throughput float64
			MeanUS     float64 `json:"mean_us"`
			P99US      int64   `json:"p99_us"`
			App        *struct {
				Name         string
				CPUMeanCores *float64 `json:"cpu_mean_cores"`
			}
			Decomposition map[string]any
		}
	}
	Comparison *struct {
		Reference string
		Variants  []struct {
			Variant string
			Steps   []struct {
				Step          int
				MeanRatio     *float64 `json:"mean_ratio"`
				CPUPerRequest *float64 `json:"cpu_per_request_ratio"`
			}
		}
	}
}

// TestThesisSpecs checks every spec of examples/thesis without running it (one of them,
// pool.yml, runs shortened in TestExamplesOnLocalFoundation): it loads, passes what a
// run checks before it pushes anything (its manifests and their app files exist, its
// plan fits its limits), its time under load by the plan's arithmetic is at most 2
// minutes (under 3 with the pushes), the README names it, and it asks its question.
func TestThesisSpecs(t *testing.T) {
	testtier.External(t, "the sample apps built (make apps): the jar the specs push")
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "examples", "thesis", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	asks := map[string]func(t *testing.T, sp *spec.Spec){
		// Java vs Node at the SLO, with the router's and the apps' own view of each request.
		"capacity.yml": func(t *testing.T, sp *spec.Spec) {
			if sp.SLO == nil || sp.Ramp.Stop.MeanAbove != sp.SLO.MaxLatency || len(sp.Levels()) < 3 {
				t.Errorf("no SLO to judge capacity against, no ramp stopping where it breaks, or under 3 levels: slo %+v, stop %+v", sp.SLO, sp.Ramp.Stop)
			}
			rl := sp.Collectors.RouterLogs
			if rl == nil || !sp.Collectors.AppTimings.Enabled {
				t.Errorf("router logs %+v, app timings %v: the decomposition needs both", rl, sp.Collectors.AppTimings.Enabled)
			}
			manifests(t, sp, "bulletin-java.yml", "bulletin-node.yml")
		},
		// 1, 2, 3 instances of the Java app, the same load per instance.
		"instances.yml": func(t *testing.T, sp *spec.Spec) {
			if !slices.Equal(sp.Ramp.AppInstances, []int{1, 2, 3}) {
				t.Errorf("app instances %v, want 1, 2, 3", sp.Ramp.AppInstances)
			}
			manifests(t, sp, "bulletin-java.yml")
		},
		// Pools of 30, 60, 90, each full: more users than the largest pool has
		// connections, each request holding its connection a while.
		"pool.yml": func(t *testing.T, sp *spec.Spec) {
			var pools []string
			for _, v := range sp.Variants {
				pools = append(pools, v.Env["DB_POOL_SIZE"])
			}
			if !slices.Equal(pools, []string{"30", "60", "90"}) {
				t.Errorf("pools %v, want 30, 60, 90", pools)
			}
			for _, l := range sp.Levels() {
				if users := l.Generators * l.Users; users <= 90 {
					t.Errorf("a level of %d users: no more than the largest pool's 90 connections, so that pool is never full", users)
				}
			}
			for _, r := range sp.Workload.Requests {
				if !strings.Contains(r.Path, "sleep_ms=") {
					t.Errorf("request %s (%s) does not hold its connection (sleep_ms, apps/README.md)", r.Name, r.Path)
				}
			}
			manifests(t, sp, "bulletin-java.yml", "bulletin-java.yml", "bulletin-java.yml")
		},
	}
	files, err := filepath.Glob(filepath.Join(root, "examples", "thesis", "*.yml"))
	if err != nil || len(files) != len(asks) {
		t.Fatalf("examples/thesis holds %v (%v), want a check here for each: %d", files, err, len(asks))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			sp, err := spec.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := engine.Preflight(context.Background(), sp, nil, nil)
			if err != nil {
				t.Fatalf("the run would refuse it: %v", err)
			}
			if plan.Duration > 2*time.Minute || sp.Limits.Duration == 0 || sp.Limits.Duration > 2*time.Minute {
				t.Errorf("%s under load by its plan, limits.duration %s: want both set and at most 2m", plan.Duration, sp.Limits.Duration)
			}
			if !strings.Contains(string(readme), "`"+name+"`") {
				t.Errorf("examples/thesis/README.md does not say which question %s answers", name)
			}
			asks[name](t, sp)
		})
	}
}

// manifests fails unless sp's variants push the named manifests, in order.
func manifests(t *testing.T, sp *spec.Spec, names ...string) {
	t.Helper()
	var got []string
	for _, v := range sp.Variants {
		got = append(got, filepath.Base(v.Manifest))
	}
	if !slices.Equal(got, names) {
		t.Errorf("variants push %v, want %v", got, names)
	}
}
