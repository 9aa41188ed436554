package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const poll = 100 * time.Millisecond

// fixture is a results DB with one running run whose plan names app.
type fixture struct {
	t     *testing.T
	store *resultsdb.Store
	conn  *pgx.Conn
	run   *resultsdb.Run
	app   string
}

func newFixture(t *testing.T, target string, wl Workload) *fixture {
	t.Helper()
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	run, err := store.CreateRun(ctx, "worker-test", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: store, conn: conn, run: run, app: "cfbench-loadgen-test"}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: f.app, TargetURL: target, Workload: wl.Marshal()}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) start(index int) *Worker {
	w := New(Config{Store: f.store, App: f.app, Index: index, Host: "127.0.0.1", PollEvery: poll, SpillDir: f.t.TempDir()})
	w.Start(context.Background())
	f.t.Cleanup(func() { w.Close() })
	return w
}

// plan plans step idx starting after every live instance has read it.
func (f *fixture) plan(idx int, hold time.Duration) resultsdb.Step {
	f.t.Helper()
	return f.planAhead(idx, hold, 3*poll)
}

// planAhead plans step idx to start lead from now, on the database's clock.
func (f *fixture) planAhead(idx int, hold, lead time.Duration) resultsdb.Step {
	f.t.Helper()
	now, err := f.store.Now(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	start := now.Add(lead)
	st := resultsdb.Step{RunID: f.run.ID, Variant: "v", Index: idx, Instances: 1, Users: 1, Started: start, WarmupUntil: start, Ends: start.Add(hold)}
	if err := f.store.StartStep(context.Background(), st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (f *fixture) int(sql string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (f *fixture) live(n int) {
	f.waitFor("live instances", func() bool {
		live, err := f.store.LiveWorkers(context.Background(), f.run.ID, "v")
		return err == nil && live == n
	})
}

func (f *fixture) stepDone(idx, joined int) {
	f.waitFor("the step's samples", func() bool {
		p, err := f.store.StepProgress(context.Background(), f.run.ID, "v", idx)
		return err == nil && p.Joined == joined && p.Done == joined
	})
}

func okServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv
}

func closedLoop() Workload {
	return Workload{Model: spec.ModelClosed, Users: 2, KeepAlive: true, Timeout: 5 * time.Second,
		Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}}
}

// TestAnInstanceStartedMidStepJoinsIt plays `cf scale` during a step: the new instance
// joins the running step by itself, is marked as a late joiner with its skew, and its
// samples belong to the step.
func TestAnInstanceStartedMidStepJoinsIt(t *testing.T) {
	f := newFixture(t, okServer(t).URL, closedLoop())
	f.start(0)
	f.live(1)
	st := f.plan(0, 2*time.Second)
	f.waitFor("the first instance to send", func() bool {
		return f.int(`SELECT coalesce(sum(sent), 0) FROM workers WHERE run_id = $1`, f.run.ID) > 0
	})
	f.start(1)
	f.stepDone(0, 2)

	rows, err := f.conn.Query(context.Background(), `SELECT w.instance_index, ws.late_join, ws.skew_us, ws.sent,
		(SELECT count(*) FROM samples s WHERE s.worker_id = w.id AND s.step = 0)
		FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id WHERE w.run_id = $1 ORDER BY w.instance_index`, f.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Index         int
		Late          bool
		Skew          int64
		Sent, Samples int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("worker_steps: %+v, want one row per instance", got)
	}
	for _, r := range got {
		if r.Sent == 0 || r.Sent != r.Samples {
			t.Fatalf("instance %d sent %d and stored %d samples of the step", r.Index, r.Sent, r.Samples)
		}
	}
	if first, second := got[0], got[1]; first.Late || !second.Late || second.Skew <= 0 || second.Skew >= st.Ends.Sub(st.Started).Microseconds() {
		t.Fatalf("first %+v, second %+v: want the second marked late, with a skew inside the step", first, second)
	}
	t.Logf("the late instance joined %v after the step began", time.Duration(got[1].Skew)*time.Microsecond)
}

// TestTotalRateIsSplitOverLiveInstances: an open-loop rate given for the whole variant
// is shared by the live instances, so the variant sends it whatever their number.
func TestTotalRateIsSplitOverLiveInstances(t *testing.T) {
	const rate, hold = 300.0, 2 * time.Second
	wl := Workload{Model: spec.ModelOpen, Rate: rate, RatePer: spec.RatePerTotal, KeepAlive: true, Timeout: 5 * time.Second,
		Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}}
	f := newFixture(t, okServer(t).URL, wl)
	f.start(0)
	f.start(1)
	f.start(2)
	f.live(3)
	// Far enough ahead that every instance reads the plan before the step starts even
	// on a loaded machine: a late reader would start at its next slot, and the slots it
	// skipped would be neither sent nor missed.
	f.planAhead(0, hold, 2*time.Second)
	f.stepDone(0, 3)
	var sent, missed, stored int64
	if err := f.conn.QueryRow(context.Background(), `SELECT sum(ws.sent), sum(ws.missed),
		(SELECT count(*) FROM samples s JOIN workers w2 ON w2.id = s.worker_id WHERE w2.run_id = $1)
		FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id WHERE w.run_id = $1`, f.run.ID).Scan(&sent, &missed, &stored); err != nil {
		t.Fatal(err)
	}
	// Each instance has its own 1/100 s grid over the 2 s window: 200 slots each.
	if want := int64(rate * hold.Seconds()); sent+missed < want-3 || sent+missed > want+3 || stored != sent {
		t.Fatalf("sent %d + missed %d, stored %d; want the variant's %d slots in all", sent, missed, stored, want)
	}
}

// TestRunEndReleasesTheInstance: when the run is no longer running, the instance stores
// everything, marks itself stopped and waits for the next run.
func TestRunEndReleasesTheInstance(t *testing.T) {
	f := newFixture(t, okServer(t).URL, closedLoop())
	f.start(0)
	f.live(1)
	f.plan(0, time.Second)
	f.stepDone(0, 1)
	if err := f.store.FinishRun(context.Background(), f.run.ID, resultsdb.RunCompleted, ""); err != nil {
		t.Fatal(err)
	}
	f.waitFor("the instance to stop", func() bool {
		return f.int(`SELECT count(*) FROM workers WHERE run_id = $1 AND stopped_at IS NOT NULL AND sent = stored AND sent > 0`, f.run.ID) == 1
	})
}

// noSamples is the results database with its samples out of reach: the plan, the
// heartbeats and the final counters get through, every COPY fails, as for an instance
// stopped in an outage that outlasts its grace while something (a relay) takes its
// last word.
type noSamples struct{ *resultsdb.Store }

func (n noSamples) NewSampleWriter(worker int32, opts resultsdb.WriterOptions) (*resultsdb.SampleWriter, error) {
	return resultsdb.NewSampleWriter(n, worker, opts)
}

func (noSamples) CopySamples(context.Context, int32, [][]sample.Sample) error {
	return errors.New("connection refused")
}

// TestAnInstanceStoppedInAnOutageCountsWhatItLost: an instance that cannot store its
// samples within its grace still records its final counters, so the run knows exactly
// how many samples were lost (resultsdb.Loss), and its error says so too.
func TestAnInstanceStoppedInAnOutageCountsWhatItLost(t *testing.T) {
	f := newFixture(t, okServer(t).URL, closedLoop())
	w := New(Config{Store: noSamples{f.store}, App: f.app, Host: "127.0.0.1", PollEvery: poll, SpillDir: t.TempDir(), Grace: time.Second})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.live(1)
	f.plan(0, time.Minute)
	f.waitFor("samples sent", func() bool {
		return f.int(`SELECT coalesce(sum(sent), 0) FROM workers WHERE run_id = $1`, f.run.ID) > 0
	})
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "samples not stored") {
		t.Fatalf("Close: %v, want the samples not stored", err)
	}
	sent := f.int(`SELECT sent FROM workers WHERE run_id = $1 AND stopped_at IS NOT NULL`, f.run.ID)
	l, lerr := f.store.Loss(context.Background(), f.run.ID, "v")
	if lerr != nil || sent == 0 || l.Samples != sent || l.Workers != 1 || l.Silent != 0 || l.Running != 0 {
		t.Fatalf("loss %+v (%v), the instance's final count of sent %d: want all of them lost, exactly", l, lerr, sent)
	}
	t.Logf("Close: %v; %s", err, l)
}

// TestAJoinThatFailsLeavesNoSpillFile: an instance that cannot take part in a run (a
// header names a variable its environment does not have) leaves no spill file behind.
func TestAJoinThatFailsLeavesNoSpillFile(t *testing.T) {
	wl := closedLoop()
	wl.Requests[0].Headers = map[string]string{"Authorization": "${CFBENCH_TEST_UNSET}"}
	f := newFixture(t, okServer(t).URL, wl)
	var logs testlog.Buffer
	spill := t.TempDir()
	w := New(Config{Store: f.store, App: f.app, Host: "127.0.0.1", PollEvery: poll, SpillDir: spill,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), LookupEnv: func(string) (string, bool) { return "", false }})
	w.Start(context.Background())
	t.Cleanup(func() { w.Close() })
	f.waitFor("the failed join", func() bool { return strings.Contains(logs.String(), "join run; waiting for the next one") })
	if files, err := os.ReadDir(spill); err != nil || len(files) != 0 {
		t.Fatalf("spill dir holds %v (%v), want nothing", files, err)
	}
}

// TestASlowPollDoesNotShiftTheSteps: a poll that waited seconds before the database
// read the plan does not move the instance's step by half that wait, as its own estimate
// of the database's clock would; the instance keeps that of its quickest recent poll.
func TestASlowPollDoesNotShiftTheSteps(t *testing.T) {
	f := newFixture(t, okServer(t).URL, closedLoop())
	b := &slowPoll{Backend: f.store, arm: make(chan time.Duration, 1), started: make(chan struct{}), joined: make(chan time.Duration, 1)}
	w := New(Config{Store: b, App: f.app, Host: "127.0.0.1", PollEvery: poll, SpillDir: t.TempDir()})
	w.Start(context.Background())
	t.Cleanup(func() { w.Close() })
	f.live(1)
	const slow = 3 * time.Second
	b.arm <- slow
	<-b.started
	f.planAhead(0, 2*slow, poll) // read by the slow poll, at its end
	select {
	case off := <-b.joined:
		// The database and this test share the host's clock: the true offset is 0, the
		// slow poll's own estimate slow/2.
		if off.Abs() > slow/6 {
			t.Fatalf("the instance dated its join of the step %v off the database's clock, want about 0: one poll that waited %v moved its step", off, slow)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the instance did not join the step in 30 s")
	}
}

// slowPoll is a Backend whose next poll, once armed, waits before the database reads
// the plan, and which tells how far each join of a step is dated off the host's clock.
type slowPoll struct {
	Backend
	arm     chan time.Duration // the wait of the next poll
	started chan struct{}      // closed when that poll began
	joined  chan time.Duration // the first JoinStep's time, less the host's clock then
}

func (b *slowPoll) Assignment(ctx context.Context, app string) (*resultsdb.Assignment, error) {
	select {
	case d := <-b.arm:
		close(b.started)
		time.Sleep(d)
	default:
	}
	return b.Backend.Assignment(ctx, app)
}

func (b *slowPoll) JoinStep(ctx context.Context, id int32, st *resultsdb.Step, joined time.Time, late bool) error {
	select {
	case b.joined <- time.Until(joined):
	default:
	}
	return b.Backend.JoinStep(ctx, id, st, joined, late)
}
