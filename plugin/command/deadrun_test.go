package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestStatusMarksADeadRunAborted: a run still "running" whose process stopped
// heartbeating a minute ago (it died) is marked aborted by status, which says so; a run
// that heartbeats is left alone.
func TestStatusMarksADeadRunAborted(t *testing.T) {
	t.Parallel()
	dsn := testpg.DSN(t)
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dead, err := store.CreateRun(ctx, "dead", "dead.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	alive, err := store.CreateRun(ctx, "alive", "alive.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `UPDATE runs SET heartbeat_at = clock_timestamp() - interval '1 minute' WHERE id = $1`, dead.ID); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CFBENCH_DB": dsn}
	r := run(t, env, "status", "--state-dir", t.TempDir(), dead.ID)
	if r.code != ExitOK || !strings.Contains(r.stdout, "run "+dead.ID+" marked aborted: its process stopped") ||
		!strings.Contains(r.stdout, ": aborted (the run's process stopped: no heartbeat since") {
		t.Fatalf("exit %d\n%s%s: want the dead run marked aborted and shown so", r.code, r.stdout, r.stderr)
	}
	if st, err := store.RunStatus(ctx, alive.ID); err != nil || st != resultsdb.RunRunning {
		t.Fatalf("the live run is %s (%v), want running", st, err)
	}
}
