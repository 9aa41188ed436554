package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// studyRun is the Java-vs-Node study's shape: node (first, the reference) never
// crosses the SLO; java sustains 1,451 req/s within it at step 2 and falls to 1,325 at
// step 3, which breaks it. speed scales java's throughput (a baseline run).
func studyRun(id string, speed float64) *Run {
	slo := &spec.SLO{Latency: spec.StatP99, MaxLatency: 10 * time.Millisecond}
	step := func(n int, thr float64, p99 int64, cores, util float64) *Step {
		return &Step{Step: n, Load: float64(10 * n), Count: 1000, Throughput: thr, P50US: p99 / 3, P90US: p99 * 2 / 3, P99US: p99,
			App: &AppUsage{CPUTotalCores: &cores, Utilisation: &util, ThroughputPerCore: ptr(thr / cores)}}
	}
	node := &Variant{Name: "node", LoadUnit: "users", Steps: []*Step{step(1, 420, 3000, 0.5, 0.5), step(2, 829, 6000, 0.8, 0.8)}}
	java := &Variant{Name: "java", LoadUnit: "users", Steps: []*Step{step(1, 800*speed, 4000, 0.5, 0.5), step(2, 1451*speed, 8000, 0.75, 0.75),
		step(3, 1325*speed, 14000, 0.96, 0.96)}}
	r := &Run{ID: id, SLO: sloOf(slo), Variants: []*Variant{node, java}, Findings: []Finding{
		{Variant: "java", Step: 3, Level: "warn", Check: "stall", Message: "the target answered nothing for 2 s"},
		{Variant: "java", Step: 1, Level: "warn", Check: "coverage", Message: "not near the limit"},
	}}
	for _, v := range r.Variants {
		v.Capacity = capacity(slo, v, r.Findings)
	}
	r.Comparison = compareVariants(r.Variants)
	return r
}

func ptr(x float64) *float64 { return &x }

// TestCapacityAgainstTheBaseline: --baseline's changes and --fail-on judge the capacity
// that never falls below a step that met the SLO, and say which step it rests on.
func TestCapacityAgainstTheBaseline(t *testing.T) {
	base, run := studyRun("base", 1.05), studyRun("run", 1)
	rep := &Report{Runs: []*Run{run}, Baseline: base}
	rep.Changes = changes(base, rep.Runs)
	var c *Change
	for i := range rep.Changes {
		if rep.Changes[i].Variant == "java" && rep.Changes[i].Metric == "capacity" {
			c = &rep.Changes[i]
		}
	}
	if c == nil || c.Value != 1451 || c.Baseline != 1451*1.05 || c.Basis != "step 2, measured" || c.BaselineBasis != "step 2, measured" {
		t.Fatalf("java's capacity change = %+v, want 1,451 (step 2, measured) against 1,524", c)
	}
	ts, err := ParseThresholds("capacity=-5%")
	if err != nil {
		t.Fatal(err)
	}
	res := judge(ts, rep)
	if len(res) != 1 || res[0].Failed || !strings.Contains(res[0].Detail, "1,451 req/s (step 2, measured)") {
		t.Errorf("capacity -4.8%% is within -5%%: %+v", res)
	}
}

func TestHeadline(t *testing.T) {
	base, run := studyRun("base", 1.25), studyRun("run", 1)
	rep := &Report{Runs: []*Run{run}, Baseline: base}
	rep.Changes = changes(base, rep.Runs)
	rep.Headline = headlines(rep)
	want := []string{
		"node: ≥ 829 req/s at the SLO (step 2, measured; not crossed), 1.00× the baseline's; 1,036 req/s per core at step 2; bottleneck: not judged (app CPU at most 80% of what is available; no latency decomposition)",
		"java: 1,451 req/s at the SLO (step 2, measured), ≤ 1.75× node, 0.80× the baseline's; 1,935 req/s per core at step 2; bottleneck: app CPU (96% of the CPU available at step 3); limited by: stall (step 3)",
	}
	if len(rep.Headline) != len(want) {
		t.Fatalf("headline = %+v", rep.Headline)
	}
	for i, h := range rep.Headline {
		if h.Text != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, h.Text, want[i])
		}
	}
	j := rep.Headline[1]
	if j.Measure != "capacity" || *j.Throughput != 1451 || j.Step != 2 || j.Basis != "measured" || j.Reference != "node" ||
		*j.Ratio != 1451.0/829 || j.Bottleneck != "app CPU" || len(j.Findings) != 1 || j.Findings[0] != 0 || j.LimitedBy[0] != "stall" {
		t.Errorf("java's headline fields = %+v", j)
	}

	// The text form opens with it; the JSON form carries it first.
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "Headline (SLO: p99 ≤ 10.0 ms)\n  "+want[0]+"\n  "+want[1]+"\n\n") {
		t.Errorf("the text form does not open with the headline:\n%s", text.String()[:min(600, text.Len())])
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Headline []Headline `json:"headline"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Headline) != 2 || back.Headline[1].Text != want[1] {
		t.Errorf("JSON headline = %+v, %v", back.Headline, err)
	}
	if i, k := strings.Index(js.String(), `"headline"`), strings.Index(js.String(), `"runs"`); i < 0 || i > k {
		t.Errorf("the JSON form does not carry the headline before the runs")
	}
}

// TestHeadlineWithoutSLO: without an SLO the line says the most throughput a step
// sustained, with its errors, and the bottleneck from the steps around it.
func TestHeadlineWithoutSLO(t *testing.T) {
	run := studyRun("run", 1)
	run.SLO = nil
	for _, v := range run.Variants {
		v.Capacity = nil
	}
	run.Variants[1].Steps[1].ErrorRate = 0.02
	run.Comparison = compareVariants(run.Variants)
	h := headlines(&Report{Runs: []*Run{run}})
	want := "java: 1,451 req/s at most (step 2, measured, 2.00% errors; no SLO), 1.75× node; 1,935 req/s per core at step 2; bottleneck: app CPU (96% of the CPU available at step 3); limited by: stall (step 3)"
	if len(h) != 2 || h[1].Text != want || h[1].Measure != "max_throughput" {
		t.Errorf("headline = %+v\nwant %s", h, want)
	}
}

// TestHeadlineWhereNoRequestCompleted: a step where no request completed is not judged,
// so a variant that completed none has no capacity (it read "≥ 0.00 req/s at the SLO"),
// and the step that broke the SLO first is named as it is.
func TestHeadlineWhereNoRequestCompleted(t *testing.T) {
	run := studyRun("run", 1)
	node, java := run.Variants[0], run.Variants[1]
	for _, s := range node.Steps {
		s.Count, s.Throughput = 0, 0
	}
	java.Steps[0].Count, java.Steps[0].Throughput = 0, 0
	java.Steps[1].P99US = 12000
	slo := &spec.SLO{Latency: spec.StatP99, MaxLatency: 10 * time.Millisecond}
	for _, v := range run.Variants {
		v.Capacity = capacity(slo, v, run.Findings)
	}
	run.Comparison = compareVariants(run.Variants)
	h := headlines(&Report{Runs: []*Run{run}})
	if len(h) != 2 || !strings.HasPrefix(h[0].Text, "node: no request completed in any step") || h[0].Throughput != nil {
		t.Errorf("node's headline = %+v", h[0])
	}
	if !strings.HasPrefix(h[1].Text, "java: < 1,451 req/s at the SLO (no step met it; step 2 broke it)") || h[1].Step != 2 {
		t.Errorf("java's headline = %+v", h[1])
	}
}
