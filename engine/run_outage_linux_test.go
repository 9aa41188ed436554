package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// TestTheLocalFoundationsPostgresDiesMidStep: the run's results database lives on the
// local foundation's services' Postgres, as a results_db service instance does, and
// that server is killed (SIGKILL, by the PID of the server the test's foundation
// started) in the middle of a step. The foundation starts it again on its port and
// keeps serving, the run completes, every sample sent is stored once, and the step's
// rate is over the window the generators ran: the whole planned step.
func TestTheLocalFoundationsPostgresDiesMidStep(t *testing.T) {
	t.Parallel()
	f, _ := testfoundation.Start(t)
	info := f.Info()
	ctx := context.Background()
	srv, err := pgserver.Attach(filepath.Join(info.StateDir, "pg"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateDatabase(ctx, "results"); err != nil {
		t.Fatal(err)
	}
	dsn := srv.DSN("results")
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer target.Close()
	text := strings.NewReplacer("URL", target.URL, "MAX", "1", "HOLD", "8s").Replace(faultSpec)
	sp, err := spec.Parse("faults.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	rep := &stepStarts{first: make(chan struct{})}
	killed := make(chan error, 1)
	go func() {
		<-rep.first
		time.Sleep(1500 * time.Millisecond)
		killed <- syscall.Kill(srv.PID(), syscall.SIGKILL)
	}()
	res, err := Run(ctx, sp, text, Options{Store: store, Reporter: rep, PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := <-killed; err != nil {
		t.Fatalf("kill the services' postgres (pid %d): %v", srv.PID(), err)
	}
	if res.Run.Status != resultsdb.RunCompleted || len(res.Summaries) != 1 {
		t.Fatalf("run %s (%s) with %d step summaries, want completed with 1", res.Run.Status, res.Run.Reason, len(res.Summaries))
	}
	back, err := pgserver.Attach(filepath.Join(info.StateDir, "pg"), "")
	if err != nil || back.PID() == srv.PID() || back.Port() != srv.Port() {
		t.Fatalf("after the kill of pid %d on port %d: %v, want a new server on the same port", srv.PID(), srv.Port(), err)
	}
	t.Logf("postgres pid %d killed; pid %d serves port %d", srv.PID(), back.PID(), back.Port())
	// Every sample the writers counted stored is there after the kill: a commit is
	// acknowledged only once it is durable. Whether a flush fell in the second or so
	// the server was down (and spilled) or came after the restart is chance here; the
	// spill path is held by TestResultsDatabaseFaults, whose outages outlast a flush.
	t.Logf("%d samples went through a spill file", storedOnce(t, dsn, res.Run.ID))
	// The generators ran the whole step: its rate is over the planned window.
	planned := query[float64](t, dsn, `SELECT extract(epoch FROM ends_at - warmup_until)::float8 FROM steps WHERE run_id = $1`, res.Run.ID)
	sum := res.Summaries[0]
	if sum.Seconds != planned || sum.Count == 0 || fmt.Sprintf("%.3f", sum.Throughput) != fmt.Sprintf("%.3f", float64(sum.Count)/planned) {
		t.Errorf("step over %.3f s, %d requests, %.3f req/s; want the planned %.3f s and count/seconds", sum.Seconds, sum.Count, sum.Throughput, planned)
	}
	// The foundation kept serving: its API answers, and it did not stop.
	resp, err := testhttp.Client.Get(info.APIURL + "/")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the foundation's API after the kill: %v %v", resp, err)
	}
	resp.Body.Close()
	stopped := make(chan error, 1)
	go func() { stopped <- f.Wait() }()
	select {
	case err := <-stopped:
		t.Fatalf("the foundation stopped: %v", err)
	default:
	}
}
