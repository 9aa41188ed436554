package engine

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Environment of the helper process TestKilledRunIsMarkedAborted starts: this test
// binary, running one long run against the database and target given.
const (
	envHelperDSN    = "CFBENCH_TEST_DEADRUN_DSN"
	envHelperTarget = "CFBENCH_TEST_DEADRUN_TARGET"
	// The helper's spill dir: killed, it leaves its generator's spill file there.
	envHelperSpill = "CFBENCH_TEST_DEADRUN_SPILL"
)

func init() {
	dsn, target := os.Getenv(envHelperDSN), os.Getenv(envHelperTarget)
	if dsn == "" {
		return
	}
	// The helper: a run that would last 10 minutes, until the test kills it.
	text := strings.NewReplacer("URL", target, "MAX", "1", "HOLD", "10m").Replace(faultSpec)
	sp, err := spec.Parse("deadrun.yml", []byte(text), ".")
	if err == nil {
		var store *resultsdb.Store
		if store, err = resultsdb.Open(context.Background(), dsn); err == nil {
			_, err = Run(context.Background(), sp, text, Options{Store: store, PollEvery: 200 * time.Millisecond, SpillDir: os.Getenv(envHelperSpill)})
		}
	}
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
	}
	os.Exit(3)
}

// TestKilledRunIsMarkedAborted starts a run in a process of its own, kills it (SIGKILL,
// by PID), and checks that the run is marked aborted by the next look at the database
// once its heartbeat is stale, not before, and that its generators are scaled down.
func TestKilledRunIsMarkedAborted(t *testing.T) {
	t.Parallel()
	dsn := testpg.DSN(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer target.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelperDSN+"="+dsn, envHelperTarget+"="+target.URL, envHelperSpill+"="+t.TempDir())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// Wait until the run is loading the target: a step is planned and samples arrive.
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for query[int64](t, dsn, `SELECT count(*) FROM samples`) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start within 2 minutes: %s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	runID := query[string](t, dsn, `SELECT id FROM runs`)
	// Alive, it is never taken for dead.
	var mu sync.Mutex
	var scaled []string
	scaleDown := func(_ context.Context, app string) error {
		mu.Lock()
		defer mu.Unlock()
		scaled = append(scaled, app)
		return nil
	}
	var notes []string
	note := func(m string) { notes = append(notes, m) }
	AbortDeadRuns(ctx, store, scaleDown, note, slog.New(slog.DiscardHandler))
	if len(notes) != 0 {
		t.Fatalf("a live run taken for dead: %q", notes)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	killedAt := time.Now()
	if st := query[string](t, dsn, `SELECT status FROM runs WHERE id = $1`, runID); st != "running" {
		t.Fatalf("right after the kill the run is %s, want still running", st)
	}
	for len(notes) == 0 {
		if time.Since(killedAt) > resultsdb.RunStaleAfter+time.Minute {
			t.Fatal("the killed run was not marked aborted")
		}
		time.Sleep(time.Second)
		AbortDeadRuns(ctx, store, scaleDown, note, slog.New(slog.DiscardHandler))
	}
	if since := time.Since(killedAt); since < resultsdb.RunStaleAfter-2*resultsdb.RunHeartbeatEvery {
		t.Errorf("marked aborted %s after the kill, before its heartbeat was %s old", since, resultsdb.RunStaleAfter)
	}
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != resultsdb.RunAborted || !strings.Contains(run.Reason, "process stopped") || run.Ended == nil {
		t.Fatalf("run %s (%s), ended %v: want aborted because its process stopped", run.Status, run.Reason, run.Ended)
	}
	gen := query[string](t, dsn, `SELECT generator_app FROM run_variants WHERE run_id = $1`, runID)
	if len(notes) != 1 || !strings.Contains(notes[0], runID) || len(scaled) != 1 || scaled[0] != gen {
		t.Fatalf("notes %q, scaled %q: want one note on %s and its generators %s scaled to 0", notes, scaled, runID, gen)
	}
	// Once is enough: a second look finds nothing more to do.
	AbortDeadRuns(ctx, store, scaleDown, note, slog.New(slog.DiscardHandler))
	if len(notes) != 1 {
		t.Fatalf("aborted twice: %q", notes)
	}
}
