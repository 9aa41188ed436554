package report

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export/exportdir"
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

// TestFaultSectionFromExportDirIsTheSame: a run with a fault reports the same section
// from its export directory as from the results database (the export directory's
// reader measures the recovery from samples.csv as the database's SQL does).
func TestFaultSectionFromExportDirIsTheSame(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	const id = "20261124-100000-0007"
	epoch := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	fixture{id: id, epoch: epoch, tag: 0x5eed0007, speed: 1, perStep: 500}.seed(t, store)
	// java's step 4 (errors in it), 5 s in; java's steps start at the epoch.
	at := epoch.Add((3*stepSeconds + 5) * time.Second)
	if err := store.AddEvent(ctx, resultsdb.Event{RunID: id, At: at, Variant: "java", Step: 3, Kind: resultsdb.FaultEventKind, Level: "info",
		Message: "crash", Evidence: map[string]any{"action": "crash", "app": "app", "index": 0, "instance_guids": []string{"g-0"}, "running_again_ms": 900}}); err != nil {
		t.Fatal(err)
	}
	// And the router 8 s in: the crash's aftermath ends there.
	if err := store.AddEvent(ctx, resultsdb.Event{RunID: id, At: at.Add(3 * time.Second), Variant: "java", Step: 3, Kind: resultsdb.FaultEventKind,
		Level: "info", Message: "router", Evidence: map[string]any{"action": "restart-router"}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), id)
	if _, err := export.Export(ctx, store, id, dir, nil); err != nil {
		t.Fatal(err)
	}
	fromDB, err := Build(ctx, store, []string{id}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromDir, err := Build(ctx, exportdir.Reader{}, []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := fromDB.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := fromDir.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("the report from the export directory differs from the database's:\n%s", lineDiff(a.String(), b.String()))
	}
	fs := fromDir.Runs[0].Faults
	if len(fs) != 2 || fs[0].Step != 4 || fs[0].OffsetS != 5 || fs[0].RequestsAfter == 0 || fs[0].FailedAfter == 0 || fs[0].P99BeforeUS == 0 ||
		len(fs[0].PerSecond) != 3 || fs[0].FailedByClass["http_503"] != fs[0].FailedAfter ||
		fs[1].What != "the router" || len(fs[1].PerSecond) != 2 || fs[1].P99BeforeUS != fs[0].P99BeforeUS {
		t.Errorf("faults %+v", fs)
	}
}

// TestFaultNotRecovered: a fault whose step never showed the p99 back says where the
// disturbance began.
func TestFaultNotRecovered(t *testing.T) {
	f := Fault{Variant: "v", Step: 2, OffsetS: 10, Action: "evacuate", What: "cell apps", Recovery: "not_back", DisturbedS: 1,
		PerSecond: []FaultSecond{{Good: true}, {Good: true}, {Good: true}, {Good: true}, {Good: true}, {Good: false}, {Good: true}}}
	lines := f.Lines()
	if want := "p99 not recovered within the step: 1 of the 7 s after the fault were outside the pre-fault level, the first 5 s after it, and no 3 s window after that was within it"; lines[1] != want {
		t.Errorf("line %q, want %q", lines[1], want)
	}
}
