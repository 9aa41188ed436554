package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestDisturbedStepsAreSaid: an instance_* finding of the app under test or of the
// generators marks its step; one of the tunnel, the relay or another variant's app
// does not. The capacity keeps resting where the SLO puts it, and says when that step
// (or the step that broke the SLO) was disturbed; so does the headline.
func TestDisturbedStepsAreSaid(t *testing.T) {
	t.Parallel()
	slo := &spec.SLO{Latency: spec.StatP99, MaxLatency: 10 * time.Millisecond}
	step := func(n int, thr float64, p99 int64) *Step {
		return &Step{Step: n, Load: float64(n), Count: 100, Throughput: thr, P99US: p99}
	}
	finding := func(step int, check, app, role string, index int) Finding {
		return Finding{Variant: "fast", Step: step, Level: "warn", Check: check, Message: "m",
			Figures: map[string]any{"app": app, "role": role, "index": float64(index)}}
	}
	for _, tc := range []struct {
		name      string
		findings  []Finding
		marked    map[int]string // step → its disturbances' text
		disturbed []int
		text      []string
		// bottleneck is the headline's: what disturbed the step that broke the SLO.
		bottleneck string
	}{
		{"clean", nil, nil, nil, nil, ""},
		{"a crash at the step that broke the SLO", []Finding{finding(2, "instance_crashed", "stub-fast", "app", 0)},
			map[int]string{2: "instance 0 of stub-fast crashed"}, []int{2},
			[]string{"the SLO broke at step 2, during which instance 0 of stub-fast crashed: the break may be that, not the load"}, "what disturbed the step"},
		{"an OOM kill and a generator move at the step it rests on",
			[]Finding{finding(1, "instance_oom", "stub-fast", "app", 1), finding(1, "instance_moved", "study-gen-fast", "generator", 2)},
			map[int]string{1: "instance 1 of stub-fast was killed for memory (OOM) and instance 2 of study-gen-fast was moved to another cell"}, []int{1},
			[]string{"it rests on step 1, during which instance 1 of stub-fast was killed for memory (OOM) and instance 2 of study-gen-fast was moved"}, ""},
		{"tunnel, relay, another app: not the step's", []Finding{finding(1, "instance_restarted", "study-tunnel", "tunnel", 0),
			finding(2, "instance_crashed", "study-relay", "relay", 0), finding(2, "instance_crashed", "stub-slow", "app", 0)}, nil, nil, nil, ""},
		{"a step away from the limit: marked, not said", []Finding{finding(3, "instance_restarted", "stub-fast", "app", 0)},
			map[int]string{3: "instance 0 of stub-fast was restarted"}, nil, nil, ""},
		{"an OOM kill at the step that broke the SLO: the app's memory", []Finding{finding(2, "instance_oom", "stub-fast", "app", 0)},
			map[int]string{2: "instance 0 of stub-fast was killed for memory (OOM)"}, []int{2}, []string{"the SLO broke at step 2"}, "app memory"},
		{"another check: no mark", []Finding{finding(2, "stall", "stub-fast", "app", 0)}, nil, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := &Variant{Name: "fast", App: "stub-fast", GeneratorApp: "study-gen-fast", LoadUnit: "users",
				Steps: []*Step{step(1, 100, 5000), step(2, 150, 15000), step(3, 160, 16000)}}
			r := &Run{ID: "r1", Variants: []*Variant{v}, Findings: tc.findings}
			markDisturbed(r)
			for _, s := range v.Steps {
				want := tc.marked[s.Step]
				if s.Disturbed() != (want != "") || (want != "" && disturbances(s) != want) {
					t.Errorf("step %d disturbances %+v, want %q", s.Step, s.Disturbances, want)
				}
				for _, d := range s.Disturbances {
					if d.Finding == nil || r.Findings[*d.Finding].Step != s.Step || r.Findings[*d.Finding].Check != d.Cause {
						t.Errorf("step %d: disturbance %+v does not point at its finding", s.Step, d)
					}
				}
			}
			v.Capacity = capacity(slo, v, r.Findings)
			c := v.Capacity
			if c.Status != "crossed" || c.Step != 1 || c.FailedStep != 2 || c.Value != 125 {
				t.Fatalf("capacity %+v: a mark must not move it", c)
			}
			if len(c.Disturbed) != len(tc.disturbed) || (len(tc.disturbed) > 0 && c.Disturbed[0] != tc.disturbed[0]) {
				t.Errorf("disturbed steps %v, want %v", c.Disturbed, tc.disturbed)
			}
			for _, p := range tc.text {
				if !strings.Contains(c.Text, p) {
					t.Errorf("capacity text %q lacks %q", c.Text, p)
				}
			}
			if len(tc.text) == 0 && strings.Contains(c.Text, "during which") {
				t.Errorf("capacity text %q speaks of a disturbance", c.Text)
			}
			var text bytes.Buffer
			if err := (&Report{Runs: []*Run{r}}).WriteText(&text); err != nil {
				t.Fatal(err)
			}
			for n, want := range tc.marked {
				if line := fmt.Sprintf("fast step %d disturbed: %s", n, want); !strings.Contains(text.String(), line) {
					t.Errorf("the text report lacks %q:\n%s", line, text.String())
				}
			}
			if len(tc.marked) == 0 && strings.Contains(text.String(), "disturbed") {
				t.Errorf("the text report of undisturbed steps speaks of a disturbance:\n%s", text.String())
			}
			h := headline(r, v, nil, nil)
			if (len(tc.disturbed) > 0) != strings.Contains(h.Text, "disturbed:") || len(h.Disturbed) != len(tc.disturbed) {
				t.Errorf("headline %q (disturbed %v), want disturbed steps %v said", h.Text, h.Disturbed, tc.disturbed)
			}
			if h.Bottleneck != tc.bottleneck {
				t.Errorf("bottleneck %q (%s), want %q", h.Bottleneck, h.BottleneckEvidence, tc.bottleneck)
			}
		})
	}
}

// TestDisturbIsOnceAndForFaults: the API the injected faults mark their steps with.
func TestDisturbIsOnceAndForFaults(t *testing.T) {
	t.Parallel()
	s := &Step{Step: 2}
	if s.Disturbed() {
		t.Fatal("a new step is disturbed")
	}
	d := Disturbance{Cause: "fault:crash", Text: "instance 0 of stub-fast was crashed on purpose"}
	s.Disturb(d)
	s.Disturb(d)
	if !s.Disturbed() || len(s.Disturbances) != 1 || disturbances(s) != d.Text {
		t.Fatalf("disturbances %+v, want %+v once", s.Disturbances, d)
	}
}
