package relay

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/faultproxy"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

var _ worker.Backend = (*Client)(nil)

func TestMain(m *testing.M) { testpg.Main(m) }

func newRelay(t *testing.T, planMaxAge time.Duration) (*Server, *resultsdb.Store) {
	t.Helper()
	store, err := resultsdb.OpenPool(context.Background(), testpg.DSN(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return New(Config{Store: store, Token: "test-token-0123456789", PlanMaxAge: planMaxAge}), store
}

// TestPlanIsReadOncePerAge: polls within the plan's age are answered from one query,
// with the database's clock moving on.
func TestPlanIsReadOncePerAge(t *testing.T) {
	s, _ := newRelay(t, time.Hour)
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := NewClient(s.URL(), "test-token-0123456789", "")
	for range 5 {
		if _, err := c.Assignment(ctx, "app"); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Polls != 5 || st.PlanQueries != 1 {
		t.Errorf("%d polls made %d plan queries, want 5 and 1", st.Polls, st.PlanQueries)
	}
}

func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		s, _ := newRelay(t, 0)
		// Database errors are answered with 503, never the end of the relay: its own
		// failure is its listener closed under it.
		return lifecycletest.Subject{Part: s, Fail: func(t *testing.T) {
			if err := s.ln.Close(); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

// TestRelay runs an instance's calls through a relay: a wrong token is refused; the
// plan, the registration, a step's records, heartbeats and samples arrive, the samples
// of two instances in COPYs the relay shares, each stored once.
func TestRelay(t *testing.T) {
	s, store := newRelay(t, time.Nanosecond) // every poll reads the plan
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	bad, _ := NewClient(s.URL(), "wrong-token", "")
	if _, err := bad.Assignment(ctx, "app"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong token: %v, want 401", err)
	}
	resp, err := testhttp.Client.Get(s.URL() + "/v1/assignment?app=x")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %v %v, want 401", resp, err)
	}

	c, err := NewClient(s.URL(), "test-token-0123456789", "")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := c.Assignment(ctx, "app"); err != nil || a != nil {
		t.Fatalf("no run: Assignment = %v, %v; want nil, nil", a, err)
	}
	run, err := store.CreateRun(ctx, "r", "r.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "app", TargetURL: "http://127.0.0.1:1", Workload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	a, err := c.Assignment(ctx, "app")
	if err != nil || a == nil || a.RunID != run.ID || a.Variant != "v" || string(a.Workload) != `{}` {
		t.Fatalf("Assignment = %+v, %v; want run %s variant v", a, err, run.ID)
	}
	var ids [2]int32
	for i := range ids {
		if ids[i], err = c.JoinRun(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "app", InstanceIndex: i}); err != nil {
			t.Fatal(err)
		}
	}
	// A run that is not running is refused as the database refuses it, not as an outage.
	if _, err := c.JoinRun(ctx, resultsdb.Worker{RunID: "nosuchrun", Variant: "v", AppName: "app"}); !errors.Is(err, resultsdb.ErrRunNotRunning) {
		t.Errorf("join a run that is not running through the relay: %v, want resultsdb.ErrRunNotRunning", err)
	}
	now, _ := store.Now(ctx)
	st := resultsdb.Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 2, Started: now, WarmupUntil: now, Ends: now.Add(time.Minute)}
	if err := store.StartStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, id := range ids {
		go func() {
			if err := c.JoinStep(ctx, id, &st, now, false); err != nil {
				done <- err
				return
			}
			batch := [][]sample.Sample{{{Seq: 1, Status: 200}, {Seq: 2, Status: 200}}}
			if err := c.CopySamples(ctx, id, batch); err != nil {
				done <- err
				return
			}
			// An answer lost in an outage: the same rows again, and one more.
			batch[0] = append(batch[0], sample.Sample{Seq: 3, Status: 200})
			if err := c.CopySamples(ctx, id, batch); err != nil {
				done <- err
				return
			}
			done <- c.Heartbeat(ctx, id, resultsdb.WorkerCounters{Sent: 3, Stored: 3})
		}()
	}
	for range ids {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := c.FinishStep(ctx, ids[0], 0, 3, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.StopWorker(ctx, ids[1], resultsdb.WorkerCounters{Sent: 3, Stored: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // writes the last heartbeats
		t.Fatal(err)
	}
	var rows, beats, stopped int
	var done0 bool
	err = store.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM samples WHERE worker_id = ANY($1)),
		(SELECT count(*) FROM workers WHERE id = ANY($1) AND sent = 3 AND stored = 3),
		(SELECT count(*) FROM workers WHERE id = ANY($1) AND stopped_at IS NOT NULL),
		(SELECT done_at IS NOT NULL FROM worker_steps WHERE worker_id = $2 AND step = 0)`, ids[:], ids[0]).Scan(&rows, &beats, &stopped, &done0)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 6 || beats != 2 || stopped != 1 || !done0 {
		t.Errorf("rows %d (want 6), workers with the heartbeat's counters %d (want 2), stopped %d (want 1), step done %t",
			rows, beats, stopped, done0)
	}
	t.Logf("stats %+v", s.Stats()) // how the posts shared COPYs depends on timing: logged, not asserted
}

// TestFinalCountersOutliveAnOutage: an instance stops while the relay's database is
// away. The relay accepts its final counters (202) and writes them once the database
// is back, so the run learns exactly what the instance stored, though it is gone.
func TestFinalCountersOutliveAnOutage(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	u.Host = p.Addr()
	store, err := resultsdb.OpenPool(ctx, u.String(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := New(Config{Store: store, Token: "test-token-0123456789", BeatEvery: 50 * time.Millisecond})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := NewClient(s.URL(), "test-token-0123456789", "")
	run, err := store.CreateRun(ctx, "r", "r.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.JoinRun(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	final := resultsdb.WorkerCounters{Sent: 1234, Stored: 1000, Spilled: 300}
	if err := c.StopWorker(ctx, id, final); err != nil {
		t.Fatalf("stop while the database is away: %v, want it accepted", err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	direct, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var sent, stored int64
		err := direct.Pool().QueryRow(ctx, `SELECT sent, stored FROM workers WHERE id = $1 AND stopped_at IS NOT NULL`, id).Scan(&sent, &stored)
		if err == nil && sent == 1234 && stored == 1000 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the final counters were not written after the outage: sent %d stored %d, %v", sent, stored, err)
		}
	}
}
