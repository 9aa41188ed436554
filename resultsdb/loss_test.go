package resultsdb

import (
	"context"
	"testing"
	"time"
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
