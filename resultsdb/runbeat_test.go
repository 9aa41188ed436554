package resultsdb

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestDeadRunLeavesALiveRunsGeneratorsAlone: runs of one spec share their generator apps.
// A dead run's cleanup may scale down only those no live run uses; a live run is never
// taken for dead, and dead runs sharing an app do not shield it from each other.
func TestDeadRunLeavesALiveRunsGeneratorsAlone(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	newRun := func(apps ...string) string {
		r, err := s.CreateRun(ctx, "spec", "spec.yml", "version: 1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for i, app := range apps {
			if err := s.AddRunVariant(ctx, RunVariant{RunID: r.ID, Variant: string(rune('a' + i)), GeneratorApp: app, TargetURL: "http://127.0.0.1:1", Workload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		return r.ID
	}
	stale := func(id string) {
		if _, err := s.pool.Exec(ctx, `UPDATE runs SET heartbeat_at = statement_timestamp() - interval '1 hour' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	dead := newRun("spec-gen-a", "spec-gen-b")
	olderDead := newRun("spec-gen-b", "spec-gen-c")
	live := newRun("spec-gen-a")
	stale(dead)
	stale(olderDead)

	if lr, err := s.LiveRuns(ctx, "spec"); err != nil || len(lr) != 1 || lr[0].ID != live {
		t.Fatalf("live runs of spec: %+v, %v; want only %s", lr, err, live)
	}
	got, err := s.AbortDeadRuns(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]DeadRun{}
	for _, d := range got {
		byID[d.ID] = d
	}
	if len(got) != 2 || byID[live].ID != "" {
		t.Fatalf("aborted %+v: want the two dead runs and not the live one", got)
	}
	if d := byID[dead]; !slices.Equal(d.GeneratorApps, []string{"spec-gen-b"}) || !slices.Equal(d.InUse, []string{"spec-gen-a"}) {
		t.Errorf("dead run: to scale down %q, in use %q; want spec-gen-b, and spec-gen-a left to the live run", d.GeneratorApps, d.InUse)
	}
	if d := byID[olderDead]; !slices.Equal(d.GeneratorApps, []string{"spec-gen-b", "spec-gen-c"}) || len(d.InUse) != 0 {
		t.Errorf("older dead run: to scale down %q, in use %q; want spec-gen-b and spec-gen-c, none in use", d.GeneratorApps, d.InUse)
	}
}

// TestAGeneratorJoinsOnlyALiveRun: a generator instance joins a running run whose
// process heartbeats; a run that ended, or whose process is gone but nobody marked it
// aborted yet, is refused with ErrRunNotRunning and gets no worker row. A run whose
// process heartbeats again (it rode out an outage) is joined again.
func TestAGeneratorJoinsOnlyALiveRun(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	newRun := func() string {
		r, err := s.CreateRun(ctx, "spec", "spec.yml", "version: 1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	exec := func(sql, id string) {
		if _, err := s.pool.Exec(ctx, sql, id); err != nil {
			t.Fatal(err)
		}
	}
	join := func(id string) error {
		_, err := s.JoinRun(ctx, Worker{RunID: id, Variant: "v", AppName: "spec-gen-v"})
		return err
	}
	live, ended, dead := newRun(), newRun(), newRun()
	if err := s.FinishRun(ctx, ended, RunCompleted, ""); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE runs SET heartbeat_at = statement_timestamp() - interval '31 seconds' WHERE id = $1`, dead)
	if err := join(live); err != nil {
		t.Fatalf("join a live run: %v", err)
	}
	for name, id := range map[string]string{"ended": ended, "dead": dead, "unknown": "nosuchrun"} {
		if err := join(id); !errors.Is(err, ErrRunNotRunning) {
			t.Errorf("join the %s run: %v, want ErrRunNotRunning", name, err)
		}
	}
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM workers WHERE run_id <> $1`, live).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d workers registered for runs not running (%v), want 0", rows, err)
	}
	if err := s.HeartbeatRun(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if err := join(dead); err != nil {
		t.Errorf("join a run whose process heartbeats again: %v", err)
	}
}

// TestStepLoadSaysWhenEveryGeneratorLeft: of two instances that joined a step, one
// stopped before its planned end and one went silent (killed before it could say so).
// Counting silence, both left and the step's load ended with the later; without (the
// database just came back and nobody could heartbeat), only the stopped one left; and
// only it once the silent one has stored the step's samples.
func TestStepLoadSaysWhenEveryGeneratorLeft(t *testing.T) {
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
	st := Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 2, Started: now.Add(-time.Minute), WarmupUntil: now.Add(-time.Minute), Ends: now.Add(time.Minute)}
	if err := s.StartStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	var ids [2]int32
	for i := range ids {
		if ids[i], err = s.JoinRun(ctx, Worker{RunID: run.ID, Variant: "v", AppName: "gen", InstanceIndex: i}); err != nil {
			t.Fatal(err)
		}
		if err := s.JoinStep(ctx, ids[i], &st, st.Started, false); err != nil {
			t.Fatal(err)
		}
	}
	stopped, silent := now.Add(-40*time.Second), now.Add(-30*time.Second)
	if _, err := s.pool.Exec(ctx, `UPDATE workers SET stopped_at = $2, heartbeat_at = $2 WHERE id = $1`, ids[0], stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE workers SET heartbeat_at = $2 WHERE id = $1`, ids[1], silent); err != nil {
		t.Fatal(err)
	}
	l, err := s.StepLoad(ctx, run.ID, "v", 0, true)
	if err != nil || l.Joined != 2 || l.Left != 2 || !l.Ended.Equal(silent) {
		t.Errorf("counting silence: %+v, %v; want 2 joined, 2 left, ended %s", l, err, silent)
	}
	l, err = s.StepLoad(ctx, run.ID, "v", 0, false)
	if err != nil || l.Joined != 2 || l.Left != 1 || !l.Ended.IsZero() {
		t.Errorf("not counting silence: %+v, %v; want 2 joined, 1 left, no end", l, err)
	}
	// The silent one stored the step's samples after all (through a relay that had lost
	// the database, its heartbeats lag): it did not leave.
	if err := s.FinishStep(ctx, ids[1], 0, 10, 0); err != nil {
		t.Fatal(err)
	}
	l, err = s.StepLoad(ctx, run.ID, "v", 0, true)
	if err != nil || l.Joined != 2 || l.Left != 1 || !l.Ended.IsZero() {
		t.Errorf("counting silence, the silent one done: %+v, %v; want 2 joined, 1 left, no end", l, err)
	}
}
