package resultsdb

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestFaultRecovery: the requests around a fault, from the stored samples: before it
// (after the warm-up), after it, second by second, the failed ones by class; and Back
// finds the latency back after three good seconds.
func TestFaultRecovery(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	epoch := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	run, err := s.CreateRun(ctx, "faults", "faults.yml", "version: 1", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO steps (run_id, variant, idx, instances, users, started_at, warmup_until, ends_at, ended_at)
		VALUES ($1, 'v', 0, 1, 0, $2::timestamptz, $2::timestamptz + interval '2 s', $2::timestamptz + interval '20 s', $2::timestamptz + interval '20 s')`, run.ID, epoch); err != nil {
		t.Fatal(err)
	}
	w, err := s.RegisterWorker(ctx, Worker{RunID: run.ID, Variant: "v", AppName: "gen", InstanceIndex: 0})
	if err != nil {
		t.Fatal(err)
	}
	// A request every 10 ms for 20 s, answered in 1 ms; from 10 s to 12.5 s in 50 ms,
	// and 503 for the second from 10 s.
	if _, err := s.pool.Exec(ctx, `INSERT INTO samples (worker_id, seq, step, request, intended_us, start_delay_us, latency_us, status, bytes, error, warmup)
		SELECT $1, i, 0, 0, i * 10000, 0,
		       CASE WHEN i >= 1000 AND i < 1250 THEN 50000 ELSE 1000 END,
		       CASE WHEN i >= 1000 AND i < 1100 THEN 503 ELSE 200 END, 10, 0, i < 200
		FROM generate_series(0, 1999) i`, w); err != nil {
		t.Fatal(err)
	}
	at := epoch.Add(10 * time.Second)
	r, err := s.FaultRecovery(ctx, run.ID, "v", 0, FaultSpan{Baseline: at, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if want := (FaultPhase{Count: 800, P99: time.Millisecond}); r.Before != want {
		t.Errorf("before %+v, want %+v", r.Before, want)
	}
	if want := (FaultPhase{Count: 1000, Errors: 100, P99: 50 * time.Millisecond}); r.After != want {
		t.Errorf("after %+v, want %+v", r.After, want)
	}
	if len(r.Seconds) != 10 || r.Seconds[0] != (FaultPhase{Count: 100, Errors: 100, P99: 50 * time.Millisecond}) ||
		r.Seconds[3] != (FaultPhase{Count: 100, P99: time.Millisecond}) {
		t.Errorf("seconds %+v", r.Seconds)
	}
	if want := map[string]int64{"http_503": 100}; !reflect.DeepEqual(r.ErrorsByClass, want) {
		t.Errorf("errors by class %v, want %v", r.ErrorsByClass, want)
	}
	// Windows of 3 s from each second with 3 s left: 10 to 13 s has 300 requests.
	if len(r.Windows) != 8 || r.Windows[0] != (FaultPhase{Count: 300, Errors: 100, P99: 50 * time.Millisecond}) ||
		r.Windows[2] != (FaultPhase{Count: 300, P99: 50 * time.Millisecond}) || r.Windows[3] != (FaultPhase{Count: 300, P99: time.Millisecond}) {
		t.Errorf("windows %+v", r.Windows)
	}
	if back, state := r.Back(); state != RecoveryBack || back != 3*time.Second {
		t.Errorf("back %s %s, want 3s back", back, state)
	}
	// From the fault until back: 10 s to 13 s.
	if want := (FaultPhase{Count: 300, Errors: 100, P99: 50 * time.Millisecond}); r.During != want {
		t.Errorf("during %+v, want %+v", r.During, want)
	}
	if r.Disturbed() != 3 {
		t.Errorf("disturbed %d seconds, want 3", r.Disturbed())
	}

	// An export directory's reader computes the same from the samples.
	var samples []RecoverySample
	for i := int64(0); i < 2000; i++ {
		s := RecoverySample{IntendedUS: i * 10000, LatencyUS: 1000, Warmup: i < 200}
		if i >= 1000 && i < 1250 {
			s.LatencyUS = 50000
		}
		if i >= 1000 && i < 1100 {
			s.Failed, s.Class = true, "http_503"
		}
		samples = append(samples, s)
	}
	if got := FaultRecoveryOf(10_000_000, 10_000_000, 20_000_000, samples); !reflect.DeepEqual(got, r) {
		t.Errorf("from the samples\n%+v\nfrom the database\n%+v", got, r)
	}

	// The fault as the engine records it, read back with its recovery.
	if err := s.AddEvent(ctx, Event{RunID: run.ID, At: at, Variant: "v", Step: 0, Kind: FaultEventKind, Level: "info", Message: "crash",
		Evidence: map[string]any{"action": "crash", "app": "app", "index": 1, "instance_guids": []string{"i-1"}, "running_again_ms": 1500}}); err != nil {
		t.Fatal(err)
	}
	fs, err := s.Faults(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Action != "crash" || fs[0].Index != 1 || fs[0].RunningAgain == nil || *fs[0].RunningAgain != 1500*time.Millisecond ||
		!reflect.DeepEqual(fs[0].Instances, []string{"i-1"}) || fs[0].Recovery.Before.Count != 800 || !fs[0].At.Equal(at) {
		t.Errorf("faults %+v", fs)
	}
	rows, err := s.ReadRun(ctx, run.ID, func(float64) float64 { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Faults) != 1 || rows.Faults[0].Recovery.After.Errors != 100 {
		t.Errorf("report rows' faults %+v", rows.Faults)
	}

	// A second fault in the step, at 16 s: the first's aftermath ends there, and the
	// second is judged against the step before the first.
	at2 := epoch.Add(16 * time.Second)
	if err := s.AddEvent(ctx, Event{RunID: run.ID, At: at2, Variant: "v", Step: 0, Kind: FaultEventKind, Level: "info", Message: "router",
		Evidence: map[string]any{"action": "restart-router"}}); err != nil {
		t.Fatal(err)
	}
	if fs, err = s.Faults(ctx, run.ID); err != nil || len(fs) != 2 {
		t.Fatalf("faults %+v, %v", fs, err)
	}
	first, second := fs[0].Recovery, fs[1].Recovery
	if first.After.Count != 600 || len(first.Seconds) != 6 || len(first.Windows) != 4 || first.Before != r.Before {
		t.Errorf("the first fault's aftermath to the second: after %+v, %d seconds, %d windows, before %+v", first.After, len(first.Seconds), len(first.Windows), first.Before)
	}
	if second.Before != r.Before || second.After.Count != 400 || len(second.Seconds) != 4 {
		t.Errorf("the second fault: before %+v (want the first's), after %+v, %d seconds", second.Before, second.After, len(second.Seconds))
	}
	if got := FaultRecoveryOf(10_000_000, 16_000_000, 20_000_000, samples); !reflect.DeepEqual(got, second) {
		t.Errorf("the second from the samples\n%+v\nfrom the database\n%+v", got, second)
	}
}

// TestFaultRecoveryBack: the rule of "back" on figures made up.
func TestFaultRecoveryBack(t *testing.T) {
	ms := time.Millisecond
	good, slow := FaultPhase{Count: 100, P99: 2 * ms}, FaultPhase{Count: 100, P99: 40 * ms}
	failing := FaultPhase{Count: 100, Errors: 5, P99: 2 * ms}
	before := FaultPhase{Count: 1000, P99: 10 * ms}
	cases := []struct {
		name    string
		before  FaultPhase
		seconds []FaultPhase
		back    time.Duration
		state   RecoveryState
	}{
		{"undisturbed", before, []FaultPhase{good, good, good, good}, 0, RecoveryUndisturbed},
		{"back after two bad seconds", before, []FaultPhase{slow, slow, good, good, good}, 2 * time.Second, RecoveryBack},
		{"a delayed disturbance counts from its start", before, []FaultPhase{good, slow, good, slow, good, good, good}, 4 * time.Second, RecoveryBack},
		{"failed requests are bad", before, []FaultPhase{failing, good, good, good}, time.Second, RecoveryBack},
		{"an empty second is bad", before, []FaultPhase{{}, good, good, good}, time.Second, RecoveryBack},
		{"not back within the step", before, []FaultPhase{slow, good, good}, 0, RecoveryNotBack},
		{"no baseline", FaultPhase{}, []FaultPhase{slow}, 0, RecoveryNoBaseline},
		// 12 ms is within 10 ms × 1.2; 14 ms is not, but within the floor: 10 + 5 ms.
		{"the floor", before, []FaultPhase{{Count: 1, P99: 14 * ms}}, 0, RecoveryUndisturbed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			back, state := FaultRecovery{Before: c.before, Seconds: c.seconds, Windows: windows(c.seconds)}.Back()
			if back != c.back || state != c.state {
				t.Errorf("back %s %s, want %s %s", back, state, c.back, c.state)
			}
		})
	}
}

// windows are the sliding windows of seconds, each's p99 taken as its seconds' highest
// (the database computes the window's own).
func windows(seconds []FaultPhase) []FaultPhase {
	var out []FaultPhase
	for k := 0; k+RecoveryWindow <= len(seconds); k++ {
		var w FaultPhase
		for _, s := range seconds[k : k+RecoveryWindow] {
			w.Count, w.Errors, w.P99 = w.Count+s.Count, w.Errors+s.Errors, max(w.P99, s.P99)
		}
		out = append(out, w)
	}
	return out
}
