//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/go-cfclient/v3/client"
)

// rateLevels runs examples/rate-levels.yml shortened to rates of 100 and 200 req/s in
// all over its 2 generator instances, 3 s each: each step offers its rate in all, and
// the plan, the progress lines, steps.csv and the report say so. With cleanup: delete,
// the run deletes its app under test and its generator app when it is over, and keeps
// its tunnel app.
func rateLevels(t *testing.T, cf *cfCLI, cl *client.Client, root, bins string) {
	file := writeExample(t, root, bins, "rate-levels.yml", map[string]string{
		"rates: [350, 700, 1000, 1200, 1400]": "rates: [100, 200]",
		"  hold: 10s\n  warmup: 2s\n":         "  hold: 3s\n  warmup: 1s\n",
		"\nramp:\n":                           "\ncleanup: delete\n\nramp:\n",
	})
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): rate-levels, 1 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark rate-levels: exit %d\n%s", code, out)
	}
	for _, want := range []string{"levels: rates 100, 200 req/s in all over 2 generator instance(s)",
		"slow: step 2/2 starts: 200 req/s in all over 2 generator instance(s) (100 each)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The report's steps table: load and offered are the step's rate in all.
	if !regexp.MustCompile(`(?m)^\s+slow\s+2\s+200\s+\d+\s+200(\.0)?\s`).MatchString(out) {
		t.Errorf("the report's steps table lacks step 2 offering 200 req/s:\n%s", out)
	}
	dir := filepath.Join(cf.dir, "results", runID)
	var got []string
	for _, s := range readCSV(t, filepath.Join(dir, "steps.csv")) {
		got = append(got, s["instances"]+"@"+s["rate"])
	}
	if !slices.Equal(got, []string{"2@100", "2@200"}) {
		t.Errorf("steps.csv instances@rate %v, want 2@100 and 2@200", got)
	}
	for _, m := range readCSV(t, filepath.Join(dir, "step_metrics.csv")) {
		if want := map[string]string{"1": "100", "2": "200"}[m["step"]]; m["offered_rate"] != want || atoi(t, m["count"]) == 0 {
			t.Errorf("step_metrics.csv step %s: offered %s, %s requests; want %s offered and requests", m["step"], m["offered_rate"], m["count"], want)
		}
	}
	if !strings.Contains(out, "cleanup delete: deleted stub-slow, rate-levels-gen-slow; the tunnel app stays") {
		t.Errorf("output does not say what cleanup: delete deleted:\n%s", out)
	}
	for app, want := range map[string]int{"stub-slow": 0, "rate-levels-gen-slow": 0, "rate-levels-tunnel": 1} {
		apps, err := cl.Applications.ListAll(context.Background(), &client.AppListOptions{Names: client.Filter{Values: []string{app}}})
		if err != nil || len(apps) != want {
			t.Errorf("%d apps named %s after the run (%v), want %d", len(apps), app, err, want)
		}
	}
}

// appInstances runs examples/app-instances.yml shortened to 1 and 2 app instances, 3 s
// each: each step scales the app and the generators alike, the app's container
// metrics count its instances per step, the report has the CPU utilisation per app
// instance count, and the app ends at the first level's instances again.
func appInstances(t *testing.T, cf *cfCLI, cl *client.Client, root, bins string) {
	file := writeExample(t, root, bins, "app-instances.yml", map[string]string{
		"app_instances: [1, 2, 3]":    "app_instances: [1, 2]",
		"  hold: 10s\n  warmup: 2s\n": "  hold: 3s\n  warmup: 1s\n",
	})
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): app-instances, 1 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark app-instances: exit %d\n%s", code, out)
	}
	for _, want := range []string{"levels: app instances 1, 2, 2 generator instance(s) per app instance",
		"cpu: step 2/2 starts: 2 app instance(s), 4 generator instance(s)", "CPU utilisation per app instance count"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^\s+cpu\s+2\s+\d+\.\d+ \(\d+%\)\s+\d+\.\d+ \(\d+%\)\s+\d+%\s+2$`).MatchString(out) {
		t.Errorf("the report's utilisation table lacks 2 app instances (cores available, used, utilisation, step 2):\n%s", out)
	}
	dir := filepath.Join(cf.dir, "results", runID)
	var steps []string
	for _, s := range readCSV(t, filepath.Join(dir, "steps.csv")) {
		steps = append(steps, s["app_instances"]+"/"+s["instances"])
	}
	if !slices.Equal(steps, []string{"1/2", "2/4"}) {
		t.Errorf("steps.csv app_instances/instances %v, want 1/2 and 2/4", steps)
	}
	var seen []string
	for _, m := range readCSV(t, filepath.Join(dir, "step_app_metrics.csv")) {
		if m["role"] == "app" {
			seen = append(seen, m["step"]+":"+m["instances"])
		}
	}
	if !slices.Equal(seen, []string{"1:1", "2:2"}) {
		t.Errorf("step_app_metrics.csv app instances per step %v, want 1:1 and 2:2", seen)
	}
	// The app is back at the first level's instances for whatever runs next.
	app, err := cl.Applications.Single(context.Background(), &client.AppListOptions{Names: client.Filter{Values: []string{"stub-cpu"}}})
	if err != nil {
		t.Fatalf("find stub-cpu: %v", err)
	}
	proc, err := cl.Processes.FirstForApp(context.Background(), app.GUID, nil)
	if err != nil || proc.Instances != 1 {
		t.Errorf("stub-cpu has %v instances after the run (%v), want the first level's 1", proc, err)
	}
	assertGeneratorsAtZero(t, cl, "app-instances", "cpu")
}
