package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/faultproxy"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// faultSpec is an open loop (a bounded number of samples whatever the machine's load)
// against a loopback target, steps of start..max instances. Its rate is low on purpose:
// every run of it is in this test binary (engine, generators, target, proxies, tunnels,
// relays, all under the race detector), and TestFaultsLoseNothing runs eight at once.
// At 150 req/s each, the binary used 0.5 to 0.8 of a core while they ran, on a quiet
// host; in `make test`, beside the other packages, it got 0.2 to 0.5 (its threads
// waited for a CPU four to seven times as long as they ran). The open loops' work then
// piled up, every poll and heartbeat in the binary waited seconds behind it, and an
// instance live at a step's plan read it with under a second of the step left: a fault
// timed from its join came after its load (CI: "no sample went through a spill file",
// "none of the 1 generator instances asked for joined the step"). At 20 req/s the
// binary uses 0.2 to 0.45 of a core while all eight run, most of it their polls and
// writes, not their load, and each step still sends dozens of samples an instance.
const faultSpec = `version: 1
name: faults
variants:
  - name: a
    url: URL
workload:
  model: open
  rate: 20
  requests:
    - name: r
      path: /x
ramp:
  start: 1
  step: 1
  max: MAX
  hold: HOLD
  warmup: 0s
`

// stepStarts is a Reporter that tells when the first step is planned.
type stepStarts struct {
	discardReporter
	mu    sync.Mutex
	first chan struct{}
	notes []string
}

func (s *stepStarts) Note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, msg)
	if strings.Contains(msg, "step 1/") {
		close(s.first)
	}
}

func (s *stepStarts) said(part string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// via rewrites dsn to dial addr instead of its host:port.
func via(t *testing.T, dsn, addr string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// TestFaultsLoseNothing runs short ramps while the results database goes away — outages
// of 2, 10 and 60 s inside a step, one across a step boundary, a restart of Postgres on
// its port, a drop of the tunnel the database is reached through — and checks that each
// run completes and that every sample its generator instances sent is stored, once. The
// cases run side by side: the test takes about as long as the 60 s one.
func TestFaultsLoseNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		max      int           // steps of 1..max instances
		hold     time.Duration // per step
		at, for_ time.Duration // the fault, from the first instance's join of the first step
		mode     string        // "proxy" (Postgres behind a proxy that is cut), "restart", "tunnel"
		// spillMust: the outage outlasts the writers' way to disk, so samples went there. A
		// writer spills only once its retries rest longer than its flush period (a backoff
		// from 100 ms, doubling, each delay jittered down to half, against 1 s: the fifth
		// or sixth failure, about 5 s after the first, later as its attempts take time),
		// so a 5 s outage spilled or not by chance and the host's scheduling; 10 s leaves
		// room. It spills only what an instance sends, so the fault waits for a join:
		// timed from the step's plan instead, it came before a loaded host's relayed
		// instance had read the plan, which then sent nothing until the outage was over
		// (CI: sent 360 of 2,100, 0 spilled).
		spillMust bool
		relay     bool // the generators go through a relay, whose database is what the fault hits
	}{
		{name: "outage 2s mid-step", max: 2, hold: 5 * time.Second, at: time.Second, for_: 2 * time.Second, mode: "proxy"},
		{name: "outage 10s mid-step", max: 1, hold: 14 * time.Second, at: time.Second, for_: 10 * time.Second, mode: "proxy", spillMust: true},
		{name: "outage 60s mid-step", max: 1, hold: 64 * time.Second, at: time.Second, for_: 60 * time.Second, mode: "proxy", spillMust: true},
		{name: "outage 10s across a step boundary", max: 2, hold: 4 * time.Second, at: 2 * time.Second, for_: 10 * time.Second, mode: "proxy", spillMust: true},
		{name: "postgres restart on its port", max: 2, hold: 5 * time.Second, at: time.Second, mode: "restart"},
		{name: "tunnel drops 10s", max: 2, hold: 8 * time.Second, at: time.Second, for_: 10 * time.Second, mode: "tunnel", spillMust: true},
		{name: "relay loses the database 10s mid-step", max: 1, hold: 14 * time.Second, at: time.Second, for_: 10 * time.Second, mode: "proxy", spillMust: true, relay: true},
		// The instance is silent past the step's end while the engine's own path works:
		// it must be waited for, not taken as gone (CI: its load "ended 6.9s into the
		// step" when a loaded host timed the fault late in the case above).
		{name: "relay loses the database 10s across the step's end", max: 1, hold: 6 * time.Second, at: time.Second, for_: 10 * time.Second, mode: "proxy", spillMust: true, relay: true},
		// A Citus worker node stops: every batch touching one of its shards fails as a
		// whole and the writers wait and spill as for any outage, while the engine's
		// reads go on; it must say which node is away (watchNodes).
		{name: "a Citus worker stops 10s across the step's end", max: 1, hold: 6 * time.Second, at: time.Second, for_: 10 * time.Second, mode: "citus", spillMust: true, relay: true},
	}
	// Every case is set up here, then all run at once: as parallel subtests only
	// GOMAXPROCS of them would run together, and they mostly wait.
	type outcome struct {
		res       *Result
		err       error
		faultErr  error
		rep       *stepStarts
		direct    string
		spillLeft []os.DirEntry
		log       *testlog.Buffer // the engine's and the instances' log, shown when the case fails
	}
	outs := make([]chan outcome, len(cases))
	for i, c := range cases {
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
		t.Cleanup(target.Close)
		text := strings.NewReplacer("URL", target.URL, "MAX", fmt.Sprint(c.max), "HOLD", c.hold.String()).Replace(faultSpec)
		sp, err := spec.Parse("faults.yml", []byte(text), ".")
		if err != nil {
			t.Fatal(err)
		}
		direct, runDSN, fault := faultSetup(t, c.mode, c.for_)
		var backend func(int) worker.Backend
		if c.relay {
			backend = relayed(t, runDSN)
			runDSN = direct // the engine's own path stays up; the relay's goes down
		}
		store, err := resultsdb.Open(context.Background(), runDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		rep, spill := &stepStarts{first: make(chan struct{})}, t.TempDir()
		outs[i] = make(chan outcome, 1)
		go func() {
			faulted := make(chan error, 1)
			go func() {
				if err := firstJoin(direct); err != nil {
					faulted <- err
					return
				}
				time.Sleep(c.at)
				faulted <- fault()
			}()
			o := outcome{rep: rep, direct: direct, log: &testlog.Buffer{}}
			log := slog.New(slog.NewTextHandler(o.log, nil))
			o.res, o.err = Run(context.Background(), sp, text, Options{Store: store, Reporter: rep, PollEvery: 200 * time.Millisecond, SpillDir: spill, Backend: backend, Logger: log})
			if o.err == nil {
				o.faultErr = <-faulted
			}
			o.spillLeft, _ = os.ReadDir(spill)
			outs[i] <- o
		}()
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := <-outs[i]
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("notes: %q\nthe run's log:\n%s", o.rep.notes, o.log)
				}
			})
			res, direct := o.res, o.direct
			if o.err != nil {
				t.Fatalf("run: %v", o.err)
			}
			if o.faultErr != nil {
				t.Fatalf("fault: %v", o.faultErr)
			}
			if res.Run.Status != resultsdb.RunCompleted || len(res.Summaries) != c.max {
				t.Fatalf("run %s (%s) with %d step summaries, want completed with %d", res.Run.Status, res.Run.Reason, len(res.Summaries), c.max)
			}
			spilled := storedOnce(t, direct, res.Run.ID)
			if c.spillMust && spilled == 0 {
				t.Errorf("no sample went through a spill file: the outage did not reach the writers")
			}
			if len(o.spillLeft) != 0 {
				t.Errorf("spill files left behind after every sample was stored: %v", o.spillLeft)
			}
			if c.for_ >= 10*time.Second && c.mode == "proxy" && !c.relay && c.at+c.for_ > c.hold && !o.rep.said("results database back after") {
				t.Errorf("the outage across the boundary was not seen by the engine: notes %q", o.rep.notes)
			}
			if c.mode == "citus" {
				citusCaseHeld(t, direct, res.Run.ID, o.rep)
			}
			if n := query[int64](t, direct, `SELECT count(*) FROM steps WHERE run_id = $1 AND ended_at IS NOT NULL`, res.Run.ID); n != int64(c.max) {
				t.Errorf("%d steps ended, want %d", n, c.max)
			}
		})
	}
}

// firstJoin waits until a generator instance has begun the first step in the results
// database at dsn (read directly, not through the fault to come).
func firstJoin(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		var joined bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM worker_steps WHERE step = 0)`).Scan(&joined); err != nil {
			return fmt.Errorf("wait for an instance to join the first step: %w", err)
		}
		if joined {
			return nil
		}
		if !wait.For(ctx, 50*time.Millisecond) {
			return fmt.Errorf("no generator instance joined the first step in 2 minutes")
		}
	}
}

// storedOnce checks the workers' own counters of a run against its rows: every sample
// sent is stored once, none dropped, every worker stopped. It returns how many went
// through a spill file.
func storedOnce(t *testing.T, dsn, runID string) (spilled int64) {
	t.Helper()
	sent := query[int64](t, dsn, `SELECT coalesce(sum(sent), 0) FROM workers WHERE run_id = $1`, runID)
	counted := query[int64](t, dsn, `SELECT coalesce(sum(stored), 0) FROM workers WHERE run_id = $1`, runID)
	dropped := query[int64](t, dsn, `SELECT coalesce(sum(dropped), 0) FROM workers WHERE run_id = $1`, runID)
	spilled = query[int64](t, dsn, `SELECT coalesce(sum(spilled), 0) FROM workers WHERE run_id = $1`, runID)
	rows := query[int64](t, dsn, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`, runID)
	open := query[int64](t, dsn, `SELECT count(*) FROM workers WHERE run_id = $1 AND stopped_at IS NULL`, runID)
	t.Logf("sent %d, stored %d (rows %d), spilled %d, dropped %d", sent, counted, rows, spilled, dropped)
	if sent == 0 || rows != sent || counted != sent || dropped != 0 || open != 0 {
		t.Fatalf("sent %d, rows %d, stored by the writers' count %d, dropped %d, workers not stopped %d: want every sample stored once",
			sent, rows, counted, dropped, open)
	}
	return spilled
}

// relayed starts a relay on dsn and returns the backends of instances that use it.
func relayed(t *testing.T, dsn string) func(int) worker.Backend {
	t.Helper()
	store, err := resultsdb.OpenPool(context.Background(), dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	const token = "faults-relay-token"
	rel := relay.New(relay.Config{Store: store, Token: token})
	if err := rel.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rel.Close(); store.Close() }) // after the runs: cleanups run last-in first-out
	return func(int) worker.Backend {
		c, err := relay.NewClient(rel.URL(), token, "")
		if err != nil {
			panic(err) // the URL and token above are well-formed
		}
		return c
	}
}

// faultSetup gives a database for one case: the DSN to check it directly, the DSN the
// run uses, and the fault (it returns when the fault is over).
func faultSetup(t *testing.T, mode string, d time.Duration) (direct, run string, fault func() error) {
	t.Helper()
	switch mode {
	case "citus":
		// A cluster of its own: the shared one serves other tests' databases.
		c := pgserver.NewCluster(pgserver.Options{Dir: testpg.Dir(t), Fast: true}, 2)
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.CreateDatabase(ctx, "results"); err != nil {
			t.Fatal(err)
		}
		dsn := c.DSN("results")
		return dsn, dsn, func() error {
			if err := c.StopWorker(1); err != nil {
				return err
			}
			time.Sleep(d)
			return c.StartWorker(ctx, 1)
		}
	case "restart":
		testtier.External(t, "PostgreSQL server binaries")
		dir := testpg.Dir(t)
		srv, err := startPG(dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := srv.CreateDatabase(ctx, "results"); err != nil {
			t.Fatal(err)
		}
		dsn := srv.DSN("results")
		var mu sync.Mutex
		t.Cleanup(func() { mu.Lock(); srv.Close(); mu.Unlock() })
		return dsn, dsn, func() error {
			mu.Lock()
			defer mu.Unlock()
			if err := srv.Close(); err != nil {
				return err
			}
			if srv, err = startPG(dir); err != nil {
				return err
			}
			if srv.DSN("results") != dsn {
				return fmt.Errorf("postgres restarted on another port: %s", srv.DSN("results"))
			}
			return nil
		}
	case "tunnel":
		dsn := testpg.DSN(t)
		remote, err := tunnel.DBRemote(dsn)
		if err != nil {
			t.Fatal(err)
		}
		key, err := tunnel.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		auth, err := tunnel.NewAuth()
		if err != nil {
			t.Fatal(err)
		}
		srv, err := tunnel.NewServer(tunnel.ServerConfig{Addr: "127.0.0.1:0", Remote: remote, Auth: auth, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		p := startProxy(t, srv.Addr().String())
		c, err := tunnel.NewClient(tunnel.ClientConfig{Server: "http://" + p.Addr(), Auth: auth, Fingerprint: srv.Fingerprint(), Remote: remote,
			MinRetry: 100 * time.Millisecond, MaxRetry: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		through, err := c.DSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return dsn, through, func() error { return p.Outage(d) }
	}
	dsn := testpg.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	return dsn, via(t, dsn, p.Addr()), func() error {
		err := p.Outage(d)
		if cuts, killed := p.Stats(); cuts != 1 || killed == 0 {
			return fmt.Errorf("the cut broke %d connections: the run held none to the database", killed)
		}
		return err
	}
}

// citusCaseHeld checks a run on a Citus cluster whose second worker stopped: its
// samples are on both workers, and a note named the node that was away.
func citusCaseHeld(t *testing.T, dsn, runID string, rep *stepStarts) {
	t.Helper()
	nodes := query[int64](t, dsn, `SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'samples'::regclass`)
	rows := query[int64](t, dsn, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`, runID)
	var onEach []int64
	for _, node := range []int{0, 1} {
		onEach = append(onEach, query[int64](t, dsn, `SELECT coalesce(sum(result::bigint), 0) FROM run_command_on_placements('samples', 'SELECT count(*) FROM %s')
WHERE nodeport = (SELECT nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY groupid OFFSET $1 LIMIT 1)`, node))
	}
	if nodes != 2 || onEach[0] == 0 || onEach[1] == 0 || onEach[0]+onEach[1] != rows {
		t.Errorf("samples on %d nodes, %v per worker of %d: want the run's rows spread over both workers", nodes, onEach, rows)
	}
	port := query[int64](t, dsn, `SELECT nodeport FROM pg_dist_node WHERE groupid > 0 ORDER BY groupid OFFSET 1 LIMIT 1`)
	if !rep.said(fmt.Sprintf("127.0.0.1:%d", port)) {
		t.Errorf("no note names the worker that was away (127.0.0.1:%d): %q", port, rep.notes)
	}
}

func startProxy(t *testing.T, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func startPG(dir string) (*pgserver.Server, error) {
	srv := pgserver.New(pgserver.Options{Dir: dir, Fast: true})
	if err := srv.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return srv, nil
}

// TestOutageBeyondTheBoundSpillsEverything: the results database goes away for longer
// than the run waits. The run fails with ErrOutage, and what the generators held is in
// their spill files, all of it: the error's count of samples not stored is the number
// of records in the files, and none was dropped. Once the database is back, the next
// run's start hands the files to it: every record stored, none twice, no file left.
func TestOutageBeyondTheBoundSpillsEverything(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer target.Close()
	text := strings.NewReplacer("URL", target.URL, "MAX", "2", "HOLD", "3s").Replace(faultSpec)
	sp, err := spec.Parse("faults.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	dsn := testpg.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	store, err := resultsdb.Open(context.Background(), via(t, dsn, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep, spill := &stepStarts{first: make(chan struct{})}, t.TempDir()
	cut := make(chan error, 1)
	go func() {
		err := firstJoin(dsn)
		time.Sleep(time.Second)
		p.Cut() // for good, until the run gave up
		cut <- err
	}()
	_, err = Run(context.Background(), sp, text, Options{Store: store, Reporter: rep, PollEvery: 200 * time.Millisecond, SpillDir: spill, MaxOutage: 2 * time.Second})
	if !errors.Is(err, ErrOutage) {
		t.Fatalf("run: %v, want ErrOutage", err)
	}
	if err := <-cut; err != nil {
		t.Fatal(err)
	}
	t.Logf("run: %v", err)
	m := regexp.MustCompile(`(\d+) samples not stored, (\d+) of them in `).FindStringSubmatch(err.Error())
	if m == nil || m[1] != m[2] {
		t.Fatalf("error %q: want every sample not stored to be in a spill file", err)
	}
	files, _ := os.ReadDir(spill)
	var records int64
	for _, f := range files {
		info, err := f.Info()
		if err != nil {
			t.Fatal(err)
		}
		records += info.Size() / 32
	}
	if fmt.Sprint(records) != m[1] || records == 0 {
		t.Fatalf("%d records in %d spill files, the error says %s samples not stored", records, len(files), m[1])
	}
	if strings.Contains(err.Error(), "dropped") {
		t.Fatalf("samples dropped: %v", err)
	}

	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	runID := regexp.MustCompile(`cfbench-spill-(\S+)-\d+`).FindStringSubmatch(err.Error())
	if runID == nil {
		t.Fatalf("error %q names no spill file", err)
	}
	before := query[int64](t, dsn, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`, runID[1])
	if err := store.FinishRun(context.Background(), runID[1], resultsdb.RunFailed, "outage"); err != nil {
		t.Fatal(err)
	}
	notes := &stepStarts{first: make(chan struct{})}
	recoverSpills(context.Background(), store, spill, notes.Note, slog.New(slog.DiscardHandler))
	// A COPY whose commit the cut's moment left unanswered is spilled though the
	// server committed it (no client can tell), so the spilled records and the rows
	// stored before may overlap: every sample is stored once when each worker's
	// sequence numbers run from 1 without a gap or a repeat.
	after := query[int64](t, dsn, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`, runID[1])
	gaps := query[int64](t, dsn, `SELECT coalesce(sum(abs(top - n) + (n - seqs) + abs(low - 1)), 0) FROM (
		SELECT count(*) AS n, count(DISTINCT s.seq) AS seqs, max(s.seq) AS top, min(s.seq) AS low
		FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1 GROUP BY w.id) per_worker`, runID[1])
	left, _ := os.ReadDir(spill)
	if after < records || after < before || after > before+records || gaps != 0 || len(left) != 0 || !notes.said("samples its generators had kept in") {
		t.Errorf("after recovery: %d rows (%d before, %d records spilled), %d sequence numbers missing or repeated, files left %v, notes %q; want every sample stored once and no file left",
			after, before, records, gaps, left, notes.notes)
	}
}

// byHand is an in-process fleet that someone else scales too: takeAway stops every
// instance at once, as a cf scale -i 0 from another terminal would.
type byHand struct {
	mu sync.Mutex
	f  Fleet
}

func (b *byHand) App() string { return b.f.App() }

func (b *byHand) Scale(ctx context.Context, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.f.Scale(ctx, n)
}

func (b *byHand) Desired(ctx context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.f.Desired(ctx)
}

func (b *byHand) Stop(ctx context.Context) error { return b.Scale(ctx, 0) }

func (b *byHand) takeAway() error { return b.Scale(context.Background(), 0) }

// takenAwaySetup is faultSpec of two steps of hold against a target that answers at
// once, and a store on a fresh database: the run whose generators are taken away.
func takenAwaySetup(t *testing.T, hold string) (*spec.Spec, string, *resultsdb.Store, string) {
	t.Helper()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(target.Close)
	text := strings.NewReplacer("URL", target.URL, "MAX", "2", "HOLD", hold).Replace(faultSpec)
	sp, err := spec.Parse("faults.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return sp, text, store, dsn
}

// TestGeneratorsTakenAwayFailTheRun: someone else scales the generators to 0 in the
// middle of the first step. The run does not end completed: it fails with
// ErrGeneratorsLost and a generators_lost finding on that step, runs no further step,
// and the step's window (and so its rate) ends when its last generator left, not at
// the planned end; no stall is read into the time nobody sent.
func TestGeneratorsTakenAwayFailTheRun(t *testing.T) {
	t.Parallel()
	sp, text, store, dsn := takenAwaySetup(t, "6s")
	rep := &stepStarts{first: make(chan struct{})}
	fleets := make(chan *byHand, 1)
	taken := make(chan error, 1)
	go func() {
		// From an instance's join, not the step's plan: on a loaded host the take-away
		// came before the instance had read the plan (CI: the run completed).
		fleet := <-fleets
		if err := firstJoin(dsn); err != nil {
			taken <- err
			return
		}
		time.Sleep(1500 * time.Millisecond)
		taken <- fleet.takeAway()
	}()
	res, err := Run(context.Background(), sp, text, Options{Store: store, Reporter: rep, PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir(),
		byHand: func(f Fleet) Fleet { b := &byHand{f: f}; fleets <- b; return b }})
	if !errors.Is(err, ErrGeneratorsLost) {
		t.Fatalf("run: %v, want ErrGeneratorsLost", err)
	}
	if terr := <-taken; terr != nil {
		t.Fatal(terr)
	}
	t.Logf("run: %v", err)
	if res.Run.Status != resultsdb.RunFailed || !strings.Contains(res.Run.Reason, "left before the step's end") {
		t.Errorf("run %s (%s), want failed, saying the generators left", res.Run.Status, res.Run.Reason)
	}
	if len(res.Findings) != 1 || res.Findings[0].Check != GeneratorsLostCheck || res.Findings[0].Step != 0 {
		t.Errorf("findings %+v, want only generators_lost on step 1", res.Findings)
	}
	if len(res.Summaries) != 1 {
		t.Fatalf("%d steps ran, want the ramp to end with the step that lost its generators", len(res.Summaries))
	}
	id := res.Run.ID
	left := query[time.Time](t, dsn, `SELECT max(stopped_at) FROM workers WHERE run_id = $1`, id)
	ended := query[time.Time](t, dsn, `SELECT ended_at FROM steps WHERE run_id = $1`, id)
	ends := query[time.Time](t, dsn, `SELECT ends_at FROM steps WHERE run_id = $1`, id)
	from := query[time.Time](t, dsn, `SELECT warmup_until FROM steps WHERE run_id = $1`, id)
	if !ended.Equal(left) || !ended.Before(ends) {
		t.Fatalf("step ended at %s, its generator left at %s, planned end %s: want the step ended when its load did", ended, left, ends)
	}
	sum := res.Summaries[0]
	if want := ended.Sub(from).Seconds(); sum.Seconds != want || sum.Count == 0 || sum.Throughput != float64(sum.Count)/want {
		t.Errorf("step over %.3f s, %d requests, %.1f req/s; want over the %.3f s it ran", sum.Seconds, sum.Count, sum.Throughput, want)
	}
	storedOnce(t, dsn, id)
}

// takeAwayAtPlan is a Reporter that takes the generators away (fleet) as soon as the
// first step is planned: before its start, which the instances wait for to join it.
type takeAwayAtPlan struct {
	discardReporter
	fleets chan *byHand
	taken  chan error
}

func (r *takeAwayAtPlan) Note(msg string) {
	if strings.Contains(msg, "step 1/") {
		r.taken <- (<-r.fleets).takeAway()
	}
}

// TestGeneratorsTakenAwayBeforeTheyJoinFailTheRun: someone else scales the generators
// to 0 after the first step is planned and before it starts. No instance joins the
// step, and the run does not go on as if it had run (it used to: an empty step, then
// the next scaled them up again): it fails with ErrGeneratorsLost and a
// generators_lost finding on that step that says none joined.
func TestGeneratorsTakenAwayBeforeTheyJoinFailTheRun(t *testing.T) {
	t.Parallel()
	sp, text, store, dsn := takenAwaySetup(t, "2s")
	rep := &takeAwayAtPlan{fleets: make(chan *byHand, 1), taken: make(chan error, 1)}
	res, err := Run(context.Background(), sp, text, Options{Store: store, Reporter: rep, PollEvery: 200 * time.Millisecond, SpillDir: t.TempDir(),
		byHand: func(f Fleet) Fleet { b := &byHand{f: f}; rep.fleets <- b; return b }})
	if !errors.Is(err, ErrGeneratorsLost) {
		t.Fatalf("run: %v, want ErrGeneratorsLost", err)
	}
	if terr := <-rep.taken; terr != nil {
		t.Fatal(terr)
	}
	t.Logf("run: %v", err)
	// The instance waits for the step's start (the plan's lead, 500 ms here) to join
	// it. Only a host so slow that the note came after the start lets it join first:
	// then it left, which the run says instead.
	want := "none of the 1 generator instances asked for joined the step"
	if joined := query[int64](t, dsn, `SELECT count(*) FROM worker_steps`); joined > 0 {
		t.Logf("an instance joined before it was taken away")
		want = "left before the step's end"
	}
	if res.Run.Status != resultsdb.RunFailed || !strings.Contains(res.Run.Reason, want) {
		t.Errorf("run %s (%s), want failed, saying %q", res.Run.Status, res.Run.Reason, want)
	}
	if len(res.Findings) != 1 || res.Findings[0].Check != GeneratorsLostCheck || res.Findings[0].Step != 0 {
		t.Errorf("findings %+v, want only generators_lost on step 1", res.Findings)
	}
	if len(res.Summaries) != 1 {
		t.Fatalf("%d steps ran, want the ramp to end with the step its generators never joined", len(res.Summaries))
	}
}

// TestARunEventWaitsOutAnOutage: an event of the run's loop (a scale, a stop, a drain
// that failed) written while the results database is away is written once it is back,
// once, and the run's end waits for it; it used to be logged and lost.
func TestARunEventWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	dsn := testpg.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, via(t, dsn, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "events", "events.yml", "name: events\n", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	log := &testlog.Buffer{}
	r := &runner{run: run, eventsCtx: ctx,
		opts: Options{Store: store, MaxOutage: time.Minute, Logger: slog.New(slog.NewTextHandler(log, nil))}}
	p.Cut()
	r.event("fast", 1, "scale", "info", "scaled the generators to 2")
	time.Sleep(500 * time.Millisecond) // a few attempts fail meanwhile
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	r.events.Wait()
	evs, err := store.Events(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Kind+": "+e.Message)
	}
	if want := []string{"scale: scaled the generators to 2"}; !slices.Equal(got, want) {
		t.Errorf("events after the outage: %q, want %q\nlog:\n%s", got, want, log)
	}
}
