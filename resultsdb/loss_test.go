package resultsdb

import (
	"context"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// TestLossCountsWhatWasSentAndNotStored: against the rows stored, an instance that
// recorded its final counters lost exactly sent - rows; one that went silent without
// them lost at least what it had sent by its last heartbeat, less its rows; one still
// heartbeating is not judged; other variants do not count; a variant whose instances
// stored all they sent has none, though one went silent.
func TestLossCountsWhatWasSentAndNotStored(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "spec", "spec.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	worker := func(variant string, sent, rows int, state string) {
		id, err := s.JoinRun(ctx, Worker{RunID: run.ID, Variant: variant, AppName: "gen"})
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]string{
			"stopped": `stopped_at = statement_timestamp()`,
			"silent":  `heartbeat_at = statement_timestamp() - interval '11 seconds'`,
			"running": `heartbeat_at = statement_timestamp()`,
		}[state]
		if _, err := s.pool.Exec(ctx, `UPDATE workers SET sent = $2, `+set+` WHERE id = $1`, id, sent); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO samples (`+sampleColumns+`)
			SELECT $1, g, 0, 0, 0, 0, 0, 200, 0, 0, false FROM generate_series(1, $2::int) g`, id, rows); err != nil {
			t.Fatal(err)
		}
	}
	worker("v", 10, 7, "stopped")
	worker("v", 4, 4, "stopped")
	worker("v", 5, 2, "silent")
	worker("v", 6, 6, "silent") // killed late: nothing known lost
	worker("v", 100, 0, "running")
	worker("other", 50, 0, "stopped")
	l, err := s.Loss(ctx, run.ID, "v")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Loss{Samples: 3, Workers: 1, Silent: 2, SilentSamples: 3, Running: 1}); l != want || !l.Any() {
		t.Errorf("loss %+v, want %+v", l, want)
	}
	t.Log(l)
	worker("clean", 6, 6, "silent")
	worker("clean", 9, 9, "stopped")
	if l, err := s.Loss(ctx, run.ID, "clean"); err != nil || l.Any() || l.Silent != 1 {
		t.Errorf("loss of a variant that stored all it sent: %+v, %v; want none known", l, err)
	}
	if l, err := s.Loss(ctx, run.ID, "none"); err != nil || l.Any() {
		t.Errorf("loss of a variant without instances: %+v, %v; want none", l, err)
	}
}

// TestAReplacedInstanceIsNotLost: a generator instance that Diego replaces (an
// evacuation, or a restart through the CC: the replacement, with a new guid and the
// same index, joins the run and the step late; the old one gets SIGTERM and stops with
// its final counters) loses nothing, and neither is silent. One killed instead (a crash
// or an OOM kill: no final counters) is silent; it lost nothing known when its rows
// cover what its last heartbeat said it sent, and at least the difference otherwise,
// which its replacement does not make up.
func TestAReplacedInstanceIsNotLost(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "spec", "spec.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seq := uint32(0)
	store := func(id int32, n int) {
		batch := make([]sample.Sample, n)
		for i := range batch {
			seq++
			batch[i] = sample.Sample{Seq: seq, Status: 200}
		}
		if err := s.CopySamples(ctx, id, [][]sample.Sample{batch}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		variant string
		replace func(old int32) // what becomes of the old instance
		want    Loss
		anyLost bool
	}{
		{"evacuated", func(old int32) {
			if err := s.StopWorker(ctx, old, WorkerCounters{Sent: 150, Stored: 150}); err != nil {
				t.Fatal(err)
			}
		}, Loss{}, false},
		{"killed after a flush", func(old int32) {
			age(t, s, old)
		}, Loss{Silent: 1}, false},
		{"killed with samples in memory", func(old int32) {
			if err := s.Heartbeat(ctx, old, WorkerCounters{Sent: 180, Stored: 150}); err != nil {
				t.Fatal(err)
			}
			age(t, s, old)
		}, Loss{Silent: 1, SilentSamples: 30}, true},
	} {
		t.Run(c.variant, func(t *testing.T) {
			st := Step{RunID: run.ID, Variant: c.variant, Index: 0, Instances: 1, Started: now, WarmupUntil: now, Ends: now.Add(time.Minute)}
			if err := s.StartStep(ctx, st); err != nil {
				t.Fatal(err)
			}
			old, err := s.JoinRun(ctx, Worker{RunID: run.ID, Variant: c.variant, AppName: "gen", InstanceIndex: 0, InstanceGUID: "guid-old"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.JoinStep(ctx, old, &st, now, false); err != nil {
				t.Fatal(err)
			}
			store(old, 150)
			if err := s.Heartbeat(ctx, old, WorkerCounters{Sent: 150, Stored: 150}); err != nil {
				t.Fatal(err)
			}
			next, err := s.JoinRun(ctx, Worker{RunID: run.ID, Variant: c.variant, AppName: "gen", InstanceIndex: 0, InstanceGUID: "guid-new"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.JoinStep(ctx, next, &st, now.Add(20*time.Second), true); err != nil {
				t.Fatal(err)
			}
			c.replace(old)
			store(next, 40)
			if err := s.StopWorker(ctx, next, WorkerCounters{Sent: 40, Stored: 40}); err != nil {
				t.Fatal(err)
			}
			l, err := s.Loss(ctx, run.ID, c.variant)
			if err != nil {
				t.Fatal(err)
			}
			if l != c.want || l.Any() != c.anyLost {
				t.Errorf("loss %+v (any %t), want %+v", l, l.Any(), c.want)
			}
		})
	}
}

// age makes worker id's last heartbeat 11 s old: silent, as one killed 11 s ago.
func age(t *testing.T, s *Store, id int32) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE workers SET heartbeat_at = heartbeat_at - interval '11 seconds' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

// TestAReplacedInstanceDidNotLeaveTheStep: an instance of a step that Diego replaced
// (evacuated, or restarted through the CC or after a crash: a later worker of the same
// app and index registered) did not leave it, stopped or silent: its index carries on;
// one stopped or silent with no replacement (scaled down by hand, killed for good) did.
func TestAReplacedInstanceDidNotLeaveTheStep(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "spec", "spec.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		variant  string
		end      func(old int32) // what becomes of instance 1
		replaced bool
		left     int
	}{
		{"evacuated", func(old int32) { s.StopWorker(ctx, old, WorkerCounters{}) }, true, 0},
		{"crashed and restarted", func(old int32) { age(t, s, old) }, true, 0},
		{"scaled down", func(old int32) { s.StopWorker(ctx, old, WorkerCounters{}) }, false, 1},
		{"killed for good", func(old int32) { age(t, s, old) }, false, 1},
	} {
		t.Run(c.variant, func(t *testing.T) {
			st := Step{RunID: run.ID, Variant: c.variant, Index: 0, Instances: 2, Started: now, WarmupUntil: now, Ends: now.Add(time.Minute)}
			if err := s.StartStep(ctx, st); err != nil {
				t.Fatal(err)
			}
			var ids [2]int32
			for i := range ids {
				if ids[i], err = s.JoinRun(ctx, Worker{RunID: run.ID, Variant: c.variant, AppName: "gen", InstanceIndex: i, InstanceGUID: "guid"}); err != nil {
					t.Fatal(err)
				}
				if err := s.JoinStep(ctx, ids[i], &st, now, false); err != nil {
					t.Fatal(err)
				}
			}
			if c.replaced {
				next, err := s.JoinRun(ctx, Worker{RunID: run.ID, Variant: c.variant, AppName: "gen", InstanceIndex: 1, InstanceGUID: "guid-new"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.JoinStep(ctx, next, &st, now.Add(20*time.Second), true); err != nil {
					t.Fatal(err)
				}
			}
			c.end(ids[1])
			l, err := s.StepLoad(ctx, run.ID, c.variant, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			if l.Left != c.left || !l.Ended.IsZero() {
				t.Errorf("step load %+v, want %d left and the load not ended", l, c.left)
			}
			// The step's end waits for no instance that will not store more: one stopped,
			// or silent and replaced (its container is gone); one silent for good may
			// only be cut off and is waited for.
			p, err := s.StepProgress(ctx, run.ID, c.variant, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"evacuated": 1, "crashed and restarted": 1, "scaled down": 1}[c.variant]; p.Stopped != want {
				t.Errorf("progress %+v, want %d stopped", p, want)
			}
		})
	}
}
