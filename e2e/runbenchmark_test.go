//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/csv"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// runTimeout bounds one cf run-benchmark: pushing five apps and two ramps of three steps.
const runTimeout = 6 * time.Minute

// TestRunBenchmarkOnLocalFoundation is the main job end to end: the real cf CLI with the
// plugin installed runs examples/stub-on-cf.yml (two variants, a 3-step ramp) against a
// local foundation; a user scales a generator app by hand mid-run with cf scale; a
// second run is interrupted with Ctrl-C and its results still export.
func TestRunBenchmarkOnLocalFoundation(t *testing.T) {
	testtier.External(t, "the real cf CLI and the local foundation")
	// Its own foundation: it runs beside the package's other runs, which mostly wait.
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cf, info, cl := loggedIn(t, root, bins)
	// The generators are in space loadgen: cf scale works on the targeted space.
	cf.mustRun(t, "target", "-o", "cfbench", "-s", "loadgen")
	specFile := writeSpec(t, root, bins, info.AccessLog)

	t.Run("a complete run with a manual cf scale mid-run", func(t *testing.T) {
		p := startCF(t, cf, "run-benchmark", "-f", specFile)
		runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): stub-on-cf, 2 variant\(s\), 3 step\(s\) each`))[1]
		// Step 2 of fast has begun with 2 generator instances: scale them by hand to 5;
		// the extra instances must join the running step by themselves.
		p.waitFor(t, regexp.MustCompile(`^fast: step 2/3 starts: 2 generator instance`))
		scale := cf.run(t, "scale", "stub-on-cf-gen-fast", "-i", "5")
		if scale.err != nil || scale.code != 0 {
			t.Fatalf("cf scale: exit %d %v\n%s%s", scale.code, scale.err, scale.stdout, scale.stderr)
		}
		// A second run of the spec meanwhile is refused before it pushes anything that the
		// first one uses (its tunnel app, its generators).
		second := run(t, runTimeout, cf.dir, cf.env, cf.path, "run-benchmark", "-f", specFile)
		if second.err != nil || second.code == 0 || !strings.Contains(second.stderr, "another run of this spec is under way: run "+runID) {
			t.Errorf("a second run of the spec during the first: exit %d, %v; want it refused, naming run %s\n%s%s", second.code, second.err, runID, second.stdout, second.stderr)
		}
		out, code := p.wait(t)
		if code != 0 {
			t.Fatalf("cf run-benchmark: exit %d\n%s", code, out)
		}
		if env := cf.mustRun(t, "env", "stub-on-cf-gen-fast"); strings.Contains(env, secretValue) || strings.Contains(env, "CFBENCH_RELAY_TOKEN") {
			t.Errorf("after the run the generator app's environment still holds the run's secrets:\n%s", env)
		}
		for _, want := range []string{"pushing the relay app stub-on-cf-relay", "pushing fast from", "stub-fast", "generator instances changed by hand from 2 to 5 during step 2",
			"step 3 keeps the 5 generator instances scaled by hand", "run " + runID + " completed", "exported run " + runID} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		dir := filepath.Join(cf.dir, "results", runID)
		steps := readCSV(t, filepath.Join(dir, "steps.csv"))
		if len(steps) != 6 {
			t.Fatalf("steps.csv has %d steps, want 2 variants x 3", len(steps))
		}
		for _, s := range steps {
			planned, seen := atoi(t, s["instances"]), atoi(t, s["instances_seen"])
			// Exports number steps from 1, as every printed line does.
			want := map[string]int{"1": 1, "2": 2, "3": 3}[s["step"]]
			switch {
			case s["variant"] == "fast" && s["step"] == "2":
				if planned != 2 || seen != 5 {
					t.Errorf("fast step 2: planned %d, seen %d; want 2 planned and the 5 scaled by hand seen", planned, seen)
				}
			case s["variant"] == "fast" && s["step"] == "3":
				want = 5
				fallthrough
			default:
				if planned != want || seen != want {
					t.Errorf("%s step %s: planned %d, seen %d; want %d", s["variant"], s["step"], planned, seen, want)
				}
			}
		}
		// The instances added by hand joined step 2 and sent load in it.
		workers := map[string]string{}
		for _, w := range readCSV(t, filepath.Join(dir, "workers.csv")) {
			workers[w["worker_id"]] = w["instance_index"]
		}
		joined := map[string]bool{}
		for _, ws := range readCSV(t, filepath.Join(dir, "worker_steps.csv")) {
			if ws["variant"] == "fast" && ws["step"] == "2" && atoi(t, ws["sent"]) > 0 {
				joined[workers[ws["worker_id"]]] = true
			}
		}
		if len(joined) != 5 {
			t.Errorf("instances that sent requests in fast step 2: %v, want 5", joined)
		}
		samples := map[string]int{}
		for _, s := range readCSV(t, filepath.Join(dir, "samples.csv")) {
			samples[s["variant"]]++
		}
		if samples["fast"] == 0 || samples["slow"] == 0 {
			t.Errorf("samples per variant: %v", samples)
		}
		checkRelayCarried(t, cf, "stub-on-cf", "stub-on-cf-gen-fast", samples["fast"]+samples["slow"])
		hosts := map[string]map[string]bool{}
		for _, m := range readCSV(t, filepath.Join(dir, "container_metrics.csv")) {
			if m["state"] == "RUNNING" {
				if hosts[m["app_name"]] == nil {
					hosts[m["app_name"]] = map[string]bool{}
				}
				hosts[m["app_name"]][m["host"]] = true
			}
		}
		for _, app := range []string{"stub-fast", "stub-slow", "stub-on-cf-gen-fast", "stub-on-cf-gen-slow"} {
			if len(hosts[app]) == 0 {
				t.Errorf("container_metrics.csv has no RUNNING rows of %s", app)
			}
		}
		// The local foundation links a Log Cache: the run read its CPU counters too.
		counters := map[string]int{}
		for _, m := range readCSV(t, filepath.Join(dir, "container_metrics.csv")) {
			if m["source"] == "logcache" && m["cpu_time_ns"] != "" && m["container_age_ns"] != "" {
				counters[m["app_name"]]++
			}
		}
		for _, app := range []string{"stub-fast", "stub-slow"} {
			if counters[app] < 2 {
				t.Errorf("container_metrics.csv has %d Log Cache rows with counters of %s, want at least 2", counters[app], app)
			}
		}
		for h := range hosts["stub-on-cf-gen-fast"] {
			if hosts["stub-fast"][h] {
				t.Errorf("generator and app share host %s", h)
			}
		}
		// Every request went through the router, whose access log the run read back.
		if !regexp.MustCompile(`router logs of run ` + runID + ` from file:\S+: \d+ documents read, \d+ requests of this run stored`).MatchString(out) {
			t.Errorf("no router log summary in the output:\n%s", out)
		}
		found := map[string]bool{}
		for _, r := range readCSV(t, filepath.Join(dir, "router_requests.csv")) {
			found[r["worker_id"]+"/"+r["seq"]] = true
			if r["response_time_us"] == "" || r["gorouter_time_us"] == "" {
				t.Fatalf("router request without timings: %v", r)
			}
		}
		missing := 0
		for _, s := range readCSV(t, filepath.Join(dir, "samples.csv")) {
			if !found[s["worker_id"]+"/"+s["seq"]] && s["status"] != "0" {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%d answered requests are not in router_requests.csv (%d router requests)", missing, len(found))
		}
		events := readCSV(t, filepath.Join(dir, "run_events.csv"))
		if !slices.ContainsFunc(events, func(e map[string]string) bool { return e["kind"] == "scale" && e["variant"] == "fast" }) {
			t.Errorf("run_events.csv records no scale by hand: %v", events)
		}
		status := cf.mustRun(t, "benchmark-status", runID)
		if !strings.Contains(status, "run "+runID+" (stub-on-cf") || !strings.Contains(status, ": completed") {
			t.Errorf("cf benchmark-status %s:\n%s", runID, status)
		}
		assertGeneratorsAtZero(t, cl, "stub-on-cf")
	})

	t.Run("repeats run interleaved and the report shows their spread", func(t *testing.T) {
		file := writeRepeatsSpec(t, root, bins)
		p := startCF(t, cf, "run-benchmark", "-f", file)
		runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): repeats, 2 variant\(s\), 1 step\(s\) each, 2 repeats interleaved`))[1]
		out, code := p.wait(t)
		if code != 0 {
			t.Fatalf("cf run-benchmark repeats: exit %d\n%s", code, out)
		}
		for _, want := range []string{"plan: 2 variant(s) × 1 level(s) × 2 repeats, interleaved", "slow#2: repeat 2 of 2 of slow",
			"spread over the repeats"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		// Two repeats each: every step of slow says whether it differs beyond the spread.
		if !regexp.MustCompile(`(?m)^\s+slow\s+1\s+\S+ \((inside|apart)\)`).MatchString(out) {
			t.Errorf("the report compares no step of slow with fast against the spread:\n%s", out)
		}
		dir := filepath.Join(cf.dir, "results", runID)
		starts := map[string]string{}
		for _, s := range readCSV(t, filepath.Join(dir, "steps.csv")) {
			starts[s["variant"]] = s["started_at"]
		}
		if len(starts) != 4 || !(starts["fast#1"] < starts["slow#1"] && starts["slow#1"] < starts["fast#2"] && starts["fast#2"] < starts["slow#2"]) {
			t.Errorf("legs started at %v, want fast#1 < slow#1 < fast#2 < slow#2 (interleaved)", starts)
		}
		for _, v := range readCSV(t, filepath.Join(dir, "variants.csv")) {
			config, rep, _ := strings.Cut(v["variant"], "#")
			if v["config"] != config || v["repeat"] != rep || v["generator_app"] != "repeats-gen-"+config || v["app_name"] != "stub-"+config {
				t.Errorf("variants.csv %s: config %q repeat %q generator %q app %q", v["variant"], v["config"], v["repeat"], v["generator_app"], v["app_name"])
			}
		}
		samples := map[string]int{}
		for _, s := range readCSV(t, filepath.Join(dir, "samples.csv")) {
			samples[s["variant"]]++
		}
		for _, leg := range []string{"fast#1", "slow#1", "fast#2", "slow#2"} {
			if samples[leg] == 0 {
				t.Errorf("no samples of %s: %v", leg, samples)
			}
		}
		assertGeneratorsAtZero(t, cl, "repeats")
	})

	t.Run("router logs through a drain the run owns, removed afterwards", func(t *testing.T) {
		file := writeDrainSpec(t, root, bins)
		p := startCF(t, cf, "run-benchmark", "-f", file)
		runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): stub-drain`))[1]
		out, code := p.wait(t)
		if code != 0 {
			t.Fatalf("cf run-benchmark stub-drain: exit %d\n%s", code, out)
		}
		for _, want := range []string{"pushing the drain app stub-drain-drain", "goes to the drain app stub-drain-drain",
			"the drain has stored a line of every one of the", "router logs of run " + runID + " from its drain"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "for the run's last router log lines to arrive, then pulling them") || strings.Contains(out, "documents read") {
			t.Errorf("a drained run waited for or pulled router logs:\n%s", out)
		}
		// The coverage table the run prints after the run: every step all found.
		rows := regexp.MustCompile(`(?m)^fast\s+(\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)%`).FindAllStringSubmatch(out, -1)
		if len(rows) != 2 {
			t.Errorf("coverage rows of fast: %v, want 2 steps:\n%s", rows, out)
		}
		for _, r := range rows {
			if r[2] == "0" || r[2] != r[3] || r[5] != "100.0" {
				t.Errorf("step %s: %s of %s requests found in the drain's router lines (%s%%), want all", r[1], r[3], r[2], r[5])
			}
		}
		dir := filepath.Join(cf.dir, "results", runID)
		if runs := readCSV(t, filepath.Join(dir, "runs.csv")); len(runs) != 1 || runs[0]["router_log_source"] != "drain" {
			t.Errorf("runs.csv: %v, want router_log_source drain", runs)
		}
		assertNoDrain(t, cl)

		// Interrupted in its first step, the run removes its drain all the same.
		p = startCF(t, cf, "run-benchmark", "-f", file)
		p.waitFor(t, regexp.MustCompile(`goes to the drain app stub-drain-drain`))
		p.waitFor(t, regexp.MustCompile(`^fast  step 1/2 `))
		p.interrupt(t)
		if out, code := p.wait(t); code == 0 || !strings.Contains(out, "aborted") {
			t.Errorf("an interrupted drained run: exit %d\n%s", code, out)
		}
		assertNoDrain(t, cl)
	})

	t.Run("Ctrl-C leaves an aborted run that exports", func(t *testing.T) {
		p := startCF(t, cf, "run-benchmark", "-f", specFile)
		runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): stub-on-cf`))[1]
		p.waitFor(t, regexp.MustCompile(`^fast  step 1/3 `))
		p.interrupt(t)
		out, code := p.wait(t)
		if code == 0 {
			t.Errorf("an interrupted run exited 0:\n%s", out)
		}
		if !strings.Contains(out, "run "+runID+" aborted") || !strings.Contains(out, "Try: cf benchmark-export "+runID) {
			t.Errorf("output of the interrupted run:\n%s", out)
		}
		dir := filepath.Join(t.TempDir(), "out")
		cf.mustRun(t, "benchmark-export", runID, "--dir", dir)
		runs := readCSV(t, filepath.Join(dir, "runs.csv"))
		if len(runs) != 1 || runs[0]["status"] != "aborted" {
			t.Errorf("runs.csv: %v, want one aborted run", runs)
		}
		if n := len(readCSV(t, filepath.Join(dir, "samples.csv"))); n == 0 {
			t.Error("the aborted run exported no samples")
		}
		assertGeneratorsAtZero(t, cl, "stub-on-cf")
	})
}

// TestCFCommandsOnLocalFoundation is what a newcomer does with the cf CLI alone: the
// everyday commands, then the sample apps by cf push. It has a foundation of its own
// so that it runs beside TestRunBenchmarkOnLocalFoundation's runs: after them, on
// theirs, it made that test the package's longest path by two minutes.
func TestCFCommandsOnLocalFoundation(t *testing.T) {
	testtier.External(t, "the real cf CLI and the local foundation")
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cf, info, _ := loggedIn(t, root, bins)
	t.Run("the cf CLI's everyday commands", func(t *testing.T) { cfEverydayCommands(t, cf, info, bins) })
	t.Run("the sample apps by cf push", func(t *testing.T) { cfSampleApps(t, cf, info) })
}

// loggedIn starts a local foundation and returns the real cf CLI logged in to it with
// the plugin installed and told where the binaries a run pushes are (bins, see
// buildPushed), the foundation's addresses and a CC client. opts configure the
// foundation (testfoundation.Start).
func loggedIn(t *testing.T, root, bins string, opts ...func(*foundation.Config)) (*cfCLI, foundation.Info, *client.Client) {
	t.Helper()
	cf, f, cl := loggedInTo(t, root, bins, opts...)
	return cf, f.Info(), cl
}

// loggedInTo is loggedIn returning the foundation itself, for what only it can measure
// (its cells' CPU time).
func loggedInTo(t *testing.T, root, bins string, opts ...func(*foundation.Config)) (*cfCLI, *foundation.Foundation, *client.Client) {
	t.Helper()
	plugin := buildPlugin(t, root)
	f, cl := testfoundation.Start(t, opts...)
	cf := newCF(t, root)
	info := f.Info()
	cf.mustRun(t, "api", info.APIURL)
	cf.mustRun(t, "auth", info.User, info.Password)
	cf.mustRun(t, "install-plugin", "-f", plugin)
	cf.env = append(cf.env, "CFBENCH_BIN_DIR="+bins, secretVar+"="+secretValue)
	return cf, f, cl
}

// buildPushed builds the program a run pushes (cmd/cfbench) and the stub app into
// a bin dir laid out as make build lays out bin/.
func buildPushed(t *testing.T, root string) string {
	t.Helper()
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	for _, b := range []struct{ out, pkg string }{
		{"cfbench", "./cmd/cfbench"},
		{"stub/cfbench-stub", "./cmd/cfbench-stub"},
	} {
		// Stamped as buildPlugin stamps the plugin: cfbench refuses to run for a plugin of
		// another version.
		buildOnce(t, root, env, filepath.Join("pushed", b.out), b.pkg, "-ldflags", "-X main.version="+pluginVersion)
	}
	return filepath.Join(built.dir, "pushed")
}

// secretVar is a header's ${NAME} in writeSpec's spec, set to secretValue in the cf
// CLI's environment: a per-run secret that must not outlive the run in the generator
// apps' environment.
const secretVar, secretValue = "CFB_E2E_SECRET", "s3cr3t-e2e-value-0f4b"

// oneUser is the workload line of the stub examples (repeats, stub-drain);
// pacedUser gives that user a think time of 10 ms. The runs beside the other tests check
// the pipeline, not the stub's capacity: unpaced, the fast stub answered 600 to 2,300
// requests a second, each of their steps kept both cores busy with the generators, the
// router and the stub, and every sample went on through the database, the export and
// the report. Paced, a user sends under 100 a second. The measured runs (stage 2 of
// scripts/test.sh) are not paced.
const oneUser, pacedUser = "  users: 1\n", "  users: 1\n  think_time: 10ms\n"

// lightDemo are the edits that make examples/stub-on-cf.yml (the demo) such a run: the
// stub apps without a CPU cost (stub-fast, stub-slow: the demo's stub-cpu-* keep their
// cores busy whatever the pacing) and one paced user per generator instance instead of
// the demo's 4. Only TestReleaseInstallsTheCFWay runs the demo as it is, for its answer.
var lightDemo = map[string]string{"app: stub-cpu-fast\n": "app: stub-fast\n", "app: stub-cpu-slow\n": "app: stub-slow\n",
	"  users: 4\n": pacedUser}

// withEdits is edits with more added: the maps are left as they are.
func withEdits(edits map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(edits)
	maps.Copy(out, more)
	return out
}

// writeSpec copies examples/stub-on-cf.yml beside manifests/stub.yml (writeExample),
// the router logs at the test foundation's access log, the steps long enough for a
// cf scale by hand to land inside one, and the generators through a relay (which a
// ramp to 3 instances would not push by itself), light (lightDemo).
func writeSpec(t *testing.T, root, bins, accessLog string) string {
	return writeExample(t, root, bins, "stub-on-cf.yml", withEdits(lightDemo, map[string]string{"hold: 5s": "hold: 8s",
		"      path: /hello\n":                    "      path: /hello\n      headers: {X-Run-Secret: \"${" + secretVar + "}\"}\n",
		"path: ../.cfbench/foundation/access.log": "path: " + accessLog, "  plan: db\n": "  plan: db\n  relay: always\n"}))
}

// checkRelayCarried checks that spec's generators (genApp among them) went through its
// relay app: it is in their environment, it is stopped after the run, and the rows it
// copied, as it logged on its way down, are the run's samples.
func checkRelayCarried(t *testing.T, cf *cfCLI, spec, genApp string, samples int) {
	t.Helper()
	if env := cf.run(t, "env", genApp); !strings.Contains(env.stdout, "CFBENCH_RELAY_URL") {
		t.Errorf("the generator app has no relay in its environment:\n%s", env.stdout)
	}
	stopped := regexp.MustCompile(`msg=stopped .*\bcopies=\d+ rows=(\d+)`)
	deadline := time.Now().Add(time.Minute)
	for {
		logs := cf.run(t, "logs", spec+"-relay", "--recent")
		if m := stopped.FindStringSubmatch(logs.stdout); m != nil {
			if rows := atoi(t, m[1]); rows != samples {
				t.Errorf("the relay copied %d rows, the run stored %d samples", rows, samples)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay logged no stop within a minute after the run:\n%s", logs.stdout)
		}
		time.Sleep(time.Second)
	}
	if app := cf.run(t, "app", spec+"-relay"); !regexp.MustCompile(`(?m)^requested state:\s+stopped`).MatchString(app.stdout) {
		t.Errorf("the relay app is not stopped after the run:\n%s", app.stdout)
	}
}

// writeRepeatsSpec copies examples/repeats.yml into a temp dir beside manifests/stub.yml
// pointing at the freshly built stub, shortened to 2 repeats of one step of 3 s, paced.
func writeRepeatsSpec(t *testing.T, root, bins string) string {
	return writeExample(t, root, bins, "repeats.yml", map[string]string{"repeat: 3\n": "repeat: 2\n", oneUser: pacedUser,
		"  max: 2\n  hold: 5s\n": "  max: 1\n  hold: 3s\n"})
}

// writeExample copies examples/NAME into a temp dir beside manifests/stub.yml pointing
// at the freshly built stub, with edits applied (editedExample).
func writeExample(t *testing.T, root, bins, name string, edits map[string]string) string {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(root, "manifests", "stub.yml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := writeTemp(t, name, strings.ReplaceAll(editedExample(t, root, name, edits), "../manifests/stub.yml", "stub.yml"))
	m := strings.ReplaceAll(string(manifest), "path: ../bin/stub", "path: "+filepath.Join(bins, "stub"))
	if m == string(manifest) {
		t.Fatal("manifests/stub.yml has no 'path: ../bin/stub' to point at the test's build")
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(spec), "stub.yml"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// editedExample is examples/NAME with each of edits (old: new) applied; an example that
// lacks an old text fails the test, saying to update it.
func editedExample(t *testing.T, root, name string, edits map[string]string) string {
	t.Helper()
	sp, err := os.ReadFile(filepath.Join(root, "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(sp)
	for old, repl := range edits {
		if !strings.Contains(s, old) {
			t.Fatalf("examples/%s has no %q: update this test", name, old)
		}
		s = strings.ReplaceAll(s, old, repl)
	}
	return s
}

// writeTemp writes text as NAME into a temp dir of its own and returns its path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// assertNoDrain checks that no drain of stub-drain is left: no service instance of
// its name, no binding to it (nor to an instance that is gone), no drain app.
func assertNoDrain(t *testing.T, cl *client.Client) {
	t.Helper()
	ctx := context.Background()
	sis, err := cl.ServiceInstances.ListAll(ctx, &client.ServiceInstanceListOptions{Names: client.Filter{Values: []string{"stub-drain-drain"}}})
	if err != nil || len(sis) != 0 {
		t.Errorf("drain service instances after the run: %d (%v), want none", len(sis), err)
	}
	bs, err := cl.ServiceCredentialBindings.ListAll(ctx, nil)
	if err != nil {
		t.Fatalf("list bindings: %v", err)
	}
	for _, b := range bs {
		if d := b.Relationships.ServiceInstance.Data; d != nil {
			if si, err := cl.ServiceInstances.Get(ctx, d.GUID); err != nil || si.Name == "stub-drain-drain" {
				t.Errorf("binding %s left after the run, to service instance %s (%v)", b.GUID, d.GUID, err)
			}
		}
	}
	apps, err := cl.Applications.ListAll(ctx, &client.AppListOptions{Names: client.Filter{Values: []string{"stub-drain-drain"}}})
	if err != nil || len(apps) != 0 {
		t.Errorf("drain apps after the run: %d (%v), want none", len(apps), err)
	}
}

// writeDrainSpec copies examples/stub-drain.yml into a temp dir beside manifests/stub.yml
// pointing at the freshly built stub, with steps of 2 s, paced.
func writeDrainSpec(t *testing.T, root, bins string) string {
	return writeExample(t, root, bins, "stub-drain.yml", map[string]string{"  hold: 5s\n  warmup: 1s\n": "  hold: 2s\n  warmup: 500ms\n", oneUser: pacedUser})
}

// cfProcess is a cf command running in the background whose output is read line by line.
type cfProcess struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	lines  chan string
	mu     sync.Mutex
	out    strings.Builder
	done   chan struct{}
}

func startCF(t *testing.T, c *cfCLI, args ...string) *cfProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	cmd := exec.CommandContext(ctx, c.path, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	// Its own process group, as a terminal's foreground job: Ctrl-C reaches cf and the
	// plugin process it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &cfProcess{cmd: cmd, cancel: cancel, lines: make(chan string, 1024), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		pw.Close()
	}()
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody waits for lines now; the output keeps them
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-p.done })
	return p
}

// waitFor reads lines until one matches re and returns its submatches.
func (p *cfProcess) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for line := range p.lines {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	out, _ := p.wait(t)
	t.Fatalf("cf ended without a line matching %s:\n%s", re, out)
	return nil
}

func (p *cfProcess) interrupt(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the end of cf and of every process holding its output (the plugin).
func (p *cfProcess) wait(t *testing.T) (string, int) {
	t.Helper()
	go func() {
		for range p.lines {
		}
	}()
	<-p.done
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String(), p.cmd.ProcessState.ExitCode()
}

// assertGeneratorsAtZero checks that the run of spec left no generator instance of its
// variants (default fast and slow) running.
func assertGeneratorsAtZero(t *testing.T, cl *client.Client, spec string, variants ...string) {
	t.Helper()
	ctx := context.Background()
	if len(variants) == 0 {
		variants = []string{"fast", "slow"}
	}
	for _, v := range variants {
		name := spec + "-gen-" + v
		app, err := cl.Applications.Single(ctx, &client.AppListOptions{Names: client.Filter{Values: []string{name}}})
		if err != nil {
			t.Fatalf("find %s: %v", name, err)
		}
		proc, err := cl.Processes.FirstForApp(ctx, app.GUID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if proc.Instances != 0 {
			t.Errorf("%s has %d instances after the run, want 0", name, proc.Instances)
		}
	}
}

func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not an integer", s)
	}
	return n
}
