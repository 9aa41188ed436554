package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestFaultSection: an injected fault becomes its section: what it hit and when, the
// time until running again and until back, the p99 before against during, the failed
// requests by class; its step is marked disturbed.
func TestFaultSection(t *testing.T) {
	epoch := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	good, bad := resultsdb.FaultPhase{Count: 100, P99: 2 * ms}, resultsdb.FaultPhase{Count: 100, Errors: 30, P99: 80 * ms}
	again := 1500 * time.Millisecond
	rows := &resultsdb.ReportRows{
		Run:      resultsdb.Run{ID: "r", Epoch: epoch},
		Variants: []resultsdb.ReportVariant{{Name: "stub", App: "stub-app", GeneratorApp: "stub-gen"}},
		Steps:    []resultsdb.ReportStep{{Variant: "stub", Idx: 1, StartS: 20}},
		Faults: []resultsdb.Fault{
			{Variant: "stub", Idx: 1, At: epoch.Add(30 * time.Second), Level: "info", Action: "crash", App: "app", Index: 1, Instances: []string{"i-1"},
				RunningAgain: &again, Recovery: resultsdb.FaultRecovery{
					Before: resultsdb.FaultPhase{Count: 1000, P99: 2 * ms}, After: resultsdb.FaultPhase{Count: 1000, Errors: 60, P99: 70 * ms},
					During:  resultsdb.FaultPhase{Count: 200, Errors: 60, P99: 80 * ms},
					Seconds: []resultsdb.FaultPhase{bad, bad, good, good, good}, Windows: []resultsdb.FaultPhase{bad, bad, good},
					ErrorsByClass: map[string]int64{"http_502": 10, "reset": 50}}},
			{Variant: "stub", Idx: 1, At: epoch.Add(35 * time.Second), Level: "warn", Action: "restart-router", Error: "CF-NotAuthorized"},
		},
	}
	r := &Run{ID: "r", Variants: []*Variant{{Name: "stub", Steps: []*Step{{Step: 1}, {Step: 2}}}}}
	(&q{rows: rows}).faults(r)
	if len(r.Faults) != 2 {
		t.Fatalf("faults %+v", r.Faults)
	}
	f := r.Faults[0]
	if f.OffsetS != 10 || f.What != "instance 1 of stub-app" || f.Recovery != "back" || *f.BackS != 2 || *f.RunningAgainS != 1.5 ||
		f.P99BeforeUS != 2000 || f.P99DuringUS != 80000 || f.FailedAfter != 60 || f.DisturbedS != 2 || len(f.PerSecond) != 5 || f.PerSecond[2].Good != true {
		t.Errorf("fault %+v", f)
	}
	if s := r.Variants[0].Steps[1]; !s.Disturbed() || s.Disturbances[0].Cause != "fault:crash" || r.Variants[0].Steps[0].Disturbed() {
		t.Errorf("steps %+v %+v", r.Variants[0].Steps[0], s)
	}
	var b bytes.Buffer
	tw := &textWriter{w: &b}
	tw.faults(r)
	got := b.String()
	for _, want := range []string{
		"5a. Faults injected (ramp.faults)\n  stub step 2, 10.0 s in: crash of instance 1 of stub-app (hit i-1)\n",
		"      running again after 1.5 s; p99 back within the pre-fault level after 2 s (2 of the 5 s after the fault outside it)\n",
		"      p99 2.000 ms before, 80.0 ms from the fault until back (×40.0); 60 of 1,000 requests after it failed (6.00%): http_502 10, reset 50\n",
		"  stub step 2, 15.0 s in: restart-router of the router\n      not applied: CF-NotAuthorized\n",
		"  back: at the start of the first 3 s window after the first disturbed second",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text\n%s\nlacks\n%s", got, want)
		}
	}
	var none bytes.Buffer
	(&textWriter{w: &none}).faults(&Run{})
	if none.Len() != 0 {
		t.Errorf("a run without faults writes %q", none.String())
	}
}
