//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/internal/exportcheck"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
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

// appInstances runs examples/app-instances.yml shortened to 5 s steps of 1, 2 and 3 app
// instances: each step scales the app and the generators alike, the app's container
// metrics count its instances per step, and the report has the CPU utilisation per app
// instance count. All instances run on the one apps cell, so each step has that cell's
// cores available, not one cell per instance, and its utilisation is within 5% of the
// cell's busy share measured apart from the run (its cgroup's CPU time over the step's
// window). Every step figure recomputes from the exported rows within 1%
// (internal/exportcheck). The app ends at the first level's instances again.
func appInstances(t *testing.T, cf *cfCLI, cl *client.Client, f *foundation.Foundation, root, bins string) {
	// Steps of 5 s with 2 s of warm-up, not 3 s with 1 s: the product interpolates each
	// instance's CPU counter to the window's edges from readings a second apart (the
	// shortest interval a spec may ask); over a window of 2 s that missed the cell's
	// busy share by 6 points at load 14 (79.1% against 72.9%), each edge's half-second
	// of straight line a large part of it.
	file := writeExample(t, root, bins, "app-instances.yml", map[string]string{
		"  hold: 10s\n  warmup: 2s\n": "  hold: 5s\n  warmup: 2s\n",
	})
	cell, notIsolated := sampleCell(t, f, "apps")
	p := startCF(t, cf, "run-benchmark", "-f", file)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): app-instances, 1 variant\(s\), 3 step\(s\) each`))[1]
	out, code := p.wait(t)
	busy := cell.stop()
	if code != 0 {
		t.Fatalf("cf run-benchmark app-instances: exit %d\n%s", code, out)
	}
	for _, want := range []string{"levels: app instances 1, 2, 3, 2 generator instance(s) per app instance",
		"cpu: step 2/3 starts: 2 app instance(s), 4 generator instance(s)", "CPU utilisation per app instance count"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// 3 instances shared 1 cell: its cores are what they had, once.
	if !regexp.MustCompile(`(?m)^\s+cpu\s+3\s+1\s+\d+\.\d+ \(\d+%\)\s+\d+\.\d+ \(\d+%\)\s+\d+%\s+3$`).MatchString(out) {
		t.Errorf("the report's utilisation table lacks 3 app instances on 1 cell (cores available, used, utilisation, step 3):\n%s", out)
	}
	dir := filepath.Join(cf.dir, "results", runID)
	steps := readCSV(t, filepath.Join(dir, "steps.csv"))
	var levels []string
	for _, s := range steps {
		levels = append(levels, s["app_instances"]+"/"+s["instances"])
	}
	if !slices.Equal(levels, []string{"1/2", "2/4", "3/6"}) {
		t.Errorf("steps.csv app_instances/instances %v, want 1/2, 2/4 and 3/6", levels)
	}
	var seen []string
	for _, m := range readCSV(t, filepath.Join(dir, "step_app_metrics.csv")) {
		if m["role"] != "app" {
			continue
		}
		seen = append(seen, m["step"]+":"+m["instances"]+"@"+m["cells"])
		if notIsolated != nil {
			continue
		}
		st := steps[slices.IndexFunc(steps, func(s map[string]string) bool { return s["step"] == m["step"] })]
		from, to := csvTime(t, st["warmup_until"]), csvTime(t, st["ends_at"])
		if ended := csvTime(t, st["ended_at"]); ended.Before(to) {
			to = ended
		}
		share, err := busy.share(from, to)
		if err != nil {
			t.Errorf("step %s: the apps cell's busy share: %v", m["step"], err)
			continue
		}
		u := csvFloat(t, m["cpu_total_cores"]) / csvFloat(t, m["cpu_available_cores"])
		t.Logf("step %s: %s instance(s) used %s of %s cores (%.1f%%, counters over %s of the window); the cell's cgroup was busy %.1f%% of the window",
			m["step"], m["instances"], m["cpu_total_cores"], m["cpu_available_cores"], 100*u, m["cpu_covered"], 100*share)
		if math.Abs(u-share) > 0.05 {
			t.Errorf("step %s: utilisation %.1f%%, the apps cell busy %.1f%% of the step: want within 5%%", m["step"], 100*u, 100*share)
		}
	}
	if !slices.Equal(seen, []string{"1:1@1", "2:2@1", "3:3@1"}) {
		t.Errorf("step_app_metrics.csv app instances@cells per step %v, want 1:1@1, 2:2@1 and 3:3@1", seen)
	}
	diffs, n, err := exportcheck.Compare(dir, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("recomputed from the exported rows: %s", d)
	}
	if n.Steps != 3 || n.CPU != 6 || n.Memory != 6 || n.Cells != 6 {
		t.Errorf("recomputed %+v; want 3 steps, CPU, memory and cells of the app and the generators in each", n)
	}
	defer func() {
		if notIsolated != nil {
			t.Skipf("all else checked; the utilisation was not compared with the apps cell's busy time, which needs cgroup isolation: %v", notIsolated)
		}
	}()
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

// cellSampler reads a cell's CPU time (its cgroup) every 100 ms while a run goes on.
type cellSampler struct {
	done    chan struct{}
	samples chan []cellSample
	cores   float64
}

// cellSample is a cell's cumulative CPU time at a moment.
type cellSample struct {
	at  time.Time
	cpu time.Duration
}

// cellBusy is what a cellSampler read.
type cellBusy struct {
	samples []cellSample
	cores   float64
}

// sampleCell starts reading the CPU time of the cell of segment. Without cgroup
// isolation there is no cell to measure: it returns nil and why.
func sampleCell(t *testing.T, f *foundation.Foundation, segment string) (*cellSampler, error) {
	t.Helper()
	if _, err := f.CellCPU(segment); err != nil {
		return nil, err
	}
	var root struct {
		Links struct {
			Cells map[string]struct {
				Cores float64 `json:"cores"`
			} `json:"cfbench_cells"`
		} `json:"links"`
	}
	resp, err := testhttp.Client.Get(f.Info().APIURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&root)
	resp.Body.Close()
	if err != nil || root.Links.Cells[segment].Cores <= 0 {
		t.Fatalf("the cores of cell %s from the API root: %v, %+v", segment, err, root.Links.Cells)
	}
	s := &cellSampler{done: make(chan struct{}), samples: make(chan []cellSample, 1), cores: root.Links.Cells[segment].Cores}
	go func() {
		var out []cellSample
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if cpu, err := f.CellCPU(segment); err == nil {
				out = append(out, cellSample{time.Now(), cpu})
			}
			select {
			case <-s.done:
				s.samples <- out
				return
			case <-tick.C:
			}
		}
	}()
	return s, nil
}

// stop ends the sampling and returns what was read; nothing from a nil sampler.
func (s *cellSampler) stop() cellBusy {
	if s == nil {
		return cellBusy{}
	}
	close(s.done)
	return cellBusy{samples: <-s.samples, cores: s.cores}
}

// share is the cell's busy share over [from, to]: its CPU time, interpolated to both
// edges from the samples on either side, over the time and the cell's cores.
func (b cellBusy) share(from, to time.Time) (float64, error) {
	at := func(t time.Time) (float64, error) {
		for i := 1; i < len(b.samples); i++ {
			if x, y := b.samples[i-1], b.samples[i]; !x.at.After(t) && !y.at.Before(t) {
				f := t.Sub(x.at).Seconds() / y.at.Sub(x.at).Seconds()
				return x.cpu.Seconds() + f*(y.cpu-x.cpu).Seconds(), nil
			}
		}
		return 0, fmt.Errorf("no samples around %s", t.Format(time.RFC3339Nano))
	}
	a, err := at(from)
	if err != nil {
		return 0, err
	}
	z, err := at(to)
	if err != nil {
		return 0, err
	}
	return (z - a) / to.Sub(from).Seconds() / b.cores, nil
}

// csvTime parses an exported timestamp.
func csvTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse("2006-01-02 15:04:05.999999-07", s)
	if err != nil {
		t.Fatalf("%q is not an exported timestamp: %v", s, err)
	}
	return at
}

// csvFloat parses an exported number.
func csvFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}
