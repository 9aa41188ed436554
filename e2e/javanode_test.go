//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestJavaVsNodeOnLocalFoundation runs examples/java-vs-node.yml with the real cf CLI on
// a local foundation, shortened to two steps of one and two generator instances: both
// bulletin boards are pushed from their manifests (the jar Maven built; the Node app
// staged with npm ci) with their database created by the spec, and the results show
// each request three times, joined on its trace id: at the generator, in the router's
// access log and inside the app (pool wait, query, total), nested in one another in
// all but a tenth of a percent of them.
func TestJavaVsNodeOnLocalFoundation(t *testing.T) {
	testtier.External(t, "the real cf CLI, the local foundation, a JDK and Node.js")
	root := moduleRoot(t)
	jar := filepath.Join(root, "apps", "bulletin-java", "target", "bulletin-java.jar")
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("the Java sample app is not built (%v): run make build", err)
	}
	cf, info, _ := loggedIn(t, root, buildPushed(t, root), testfoundation.PlatformOffApps)
	specFile := writeJavaVsNodeSpec(t, root, info.AccessLog)

	p := startCF(t, cf, "run-benchmark", "-f", specFile)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): java-vs-node, 2 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark: exit %d\n%s", code, out)
	}
	for _, want := range []string{"created service instance bulletin-db", "java runs as bulletin-java (", "node runs as bulletin-node (",
		"run " + runID + " completed", "exported run " + runID} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A clean run trips no check: not the generators' saturation (100 req/s each, a
	// send lag of microseconds), nothing about app timings, not the layer order, which
	// sees what the per-request comparison below sees.
	for _, warning := range []string{"warning: ", "FAILED: ", "app timings"} {
		if strings.Contains(out, warning) {
			t.Errorf("the run warned (%q):\n%s", warning, out)
		}
	}
	if !strings.Contains(out, "report: "+filepath.Join("results", runID, "report.html")) {
		t.Errorf("output does not say where the report is:\n%s", out)
	}

	dir := filepath.Join(cf.dir, "results", runID)
	logStepMetrics(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report beside the CSV files: %v", err)
	}
	// The apps' database is the local foundation's: its connections are watched.
	conns := readCSV(t, filepath.Join(dir, "db_connections.csv"))
	for _, c := range conns {
		if c["service"] != "bulletin-db" || c["max_connections"] == "0" || c["in_use"] == "0" {
			t.Errorf("db_connections row %v: want bulletin-db's server with its limit and connections in use", c)
		}
	}
	if len(conns) == 0 {
		t.Errorf("no db_connections rows: the apps' database was not watched")
	}
	flushes := map[string]int{}
	for _, fl := range readCSV(t, filepath.Join(dir, "app_timing_flushes.csv")) {
		if fl["error"] != "" || fl["dropped"] != "0" || fl["foreign_rows"] != "0" {
			t.Errorf("flush %v", fl)
		}
		flushes[fl["app_name"]]++
	}
	if flushes["bulletin-java"] != 2 || flushes["bulletin-node"] != 2 {
		t.Errorf("flushes per app %v, want one per step of each (2 steps, 1 instance)", flushes)
	}

	// Every answered request has all three views, and they nest: the app's time
	// within the router's within the generator's (its latency, and even its own
	// response time, from when the request went out: what the layer_order check
	// compares), and inside the app its pool wait and query time within its total.
	// Each layer's end mark is read before the event that lets the next layer out
	// finish (the app's before it hands the response to its server, the router's
	// before it hands the last byte to the client: see apps/README.md and
	// foundation/router's responseEnd), and each start mark after the outer layer's,
	// so an inversion means a clock starts or stops in the wrong place. Across
	// processes the durations are cut to microseconds in different ways (the access
	// log rounds), so a share is asserted; within the app one clock measures all
	// three, so there none may be out of order.
	samples := readCSV(t, filepath.Join(dir, "samples.csv"))
	startDelay := map[[2]string]int{}
	for _, s := range samples {
		startDelay[[2]string{s["worker_id"], s["seq"]}] = atoi(t, s["start_delay_us"])
	}
	rows := readCSV(t, filepath.Join(dir, "request_times.csv"))
	answered := map[string][]map[string]string{}
	for _, r := range rows {
		if r["status"] == "0" {
			continue
		}
		if r["router_us"] == "" || r["app_us"] == "" {
			t.Fatalf("request without router or app timings: %v", r)
		}
		// The client's own response time: from when the request went out.
		r["client_own_us"] = strconv.Itoa(atoi(t, r["client_us"]) - startDelay[[2]string{r["worker_id"], r["seq"]}])
		answered[r["variant"]] = append(answered[r["variant"]], r)
	}
	if len(answered["java"]) == 0 || len(answered["node"]) == 0 {
		t.Fatalf("answered requests per variant: java %d, node %d", len(answered["java"]), len(answered["node"]))
	}
	col := func(name string) func(map[string]string) int {
		return func(r map[string]string) int { return atoi(t, r[name]) }
	}
	orders := []struct {
		name         string
		inner, outer func(map[string]string) int
		maxShare     float64 // the share of requests out of order must stay under this (0: none)
	}{
		{"app total_us ≤ router response_time_us", col("app_us"), col("router_us"), 0.001},
		{"router response_time_us ≤ client latency_us", col("router_us"), col("client_us"), 0.001},
		{"router response_time_us ≤ client latency_us − start_delay_us", col("router_us"), col("client_own_us"), 0.001},
		{"pool_wait_us + query_us ≤ app total_us",
			func(r map[string]string) int { return atoi(t, r["pool_wait_us"]) + atoi(t, r["query_us"]) }, col("app_us"), 0},
	}
	for _, variant := range []string{"java", "node"} {
		rs := answered[variant]
		var client, router, app []int
		for _, r := range rs {
			client, router, app = append(client, atoi(t, r["client_us"])), append(router, atoi(t, r["router_us"])), append(app, atoi(t, r["app_us"]))
		}
		t.Logf("%s: %d requests, median client %d µs, router %d µs, app %d µs", variant, len(rs), median(client), median(router), median(app))
		for _, o := range orders {
			var out []outOfOrder
			for _, r := range rs {
				if d := o.inner(r) - o.outer(r); d > 0 {
					out = append(out, outOfOrder{d, r})
				}
			}
			share := float64(len(out)) / float64(len(rs))
			t.Logf("%s: %s broken by %d of %d requests (%.3f%%)", variant, o.name, len(out), len(rs), 100*share)
			if len(out) > 0 && share >= o.maxShare {
				t.Errorf("%s: %s broken by %d of %d requests (%.3f%%, want under %.1f%%); worst: %s",
					variant, o.name, len(out), len(rs), 100*share, 100*o.maxShare, worstOutOfOrder(out, 5))
			}
		}
	}
	statuses := map[string]int{}
	for _, s := range samples {
		statuses[s["status"]]++
	}
	if statuses["200"] == 0 || statuses["201"] == 0 || len(statuses) != 2 {
		t.Errorf("statuses %v, want only 200 (list, get) and 201 (create)", statuses)
	}
	t.Logf("answered: java %d, node %d; flushes: %v", len(answered["java"]), len(answered["node"]), flushes)
}

// writeJavaVsNodeSpec copies examples/java-vs-node.yml into a temp dir with the
// manifests at their place in the tree, the router logs at the test foundation's access
// log, an open-loop workload of 100 req/s per generator instance, and a ramp of 1 and 2
// instances of 8 s each.
func writeJavaVsNodeSpec(t *testing.T, root, accessLog string) string {
	t.Helper()
	return writeTemp(t, "java-vs-node.yml", editedExample(t, root, "java-vs-node.yml", map[string]string{
		"../manifests/": filepath.Join(root, "manifests") + "/",
		"path: ../.cfbench/foundation/access.log":                        "path: " + accessLog,
		"  start: 4\n  step: 4\n  max: 40\n  hold: 60s\n  warmup: 10s\n": "  start: 1\n  step: 1\n  max: 2\n  hold: 8s\n  warmup: 2s\n",
		"    interval: 5s\n": "    interval: 1s\n",
		// Open loop at rates far under either app's capacity, so each step's throughput
		// is its offered load on any machine: closed loop, one user's throughput is
		// 1/latency, and a test host busy with other packages' tests can hold the
		// second user's step flat (a true plateau, which the run then reports).
		"  model: closed\n  users: 1 # one generator instance = one user\n": "  model: open\n  rate: 100\n  max_in_flight: 16\n",
	}))
}

// outOfOrder is a request whose inner timing exceeds the outer one by delta µs.
type outOfOrder struct {
	delta int
	row   map[string]string
}

// worstOutOfOrder describes the n largest inversions.
func worstOutOfOrder(out []outOfOrder, n int) string {
	slices.SortFunc(out, func(a, b outOfOrder) int { return b.delta - a.delta })
	var parts []string
	for _, o := range out[:min(n, len(out))] {
		r := o.row
		parts = append(parts, fmt.Sprintf("+%d µs (trace %s, step %s: client %s (%s from the send), router %s, app %s, pool wait %s, query %s µs)",
			o.delta, r["trace_id"], r["step"], r["client_us"], r["client_own_us"], r["router_us"], r["app_us"], r["pool_wait_us"], r["query_us"]))
	}
	return strings.Join(parts, "; ")
}

func median(xs []int) int {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
