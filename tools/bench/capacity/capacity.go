// Package capacity simulates many generator instances on one results database with a
// connection cap: the real engine runs a spec whose generators are in-process
// instances of the real worker code, each with its own identity, timers and
// connections (a relay client of its own, or a database pool of its own in Direct
// mode), against a private Postgres started with MaxConnections and a stub target on
// 127.0.0.1. It measures what the capacity model in BENCHMARKS.md rests on: whether
// every instance joined every step and how far apart, samples stored against sent,
// the connections in use, the database's CPU and WAL, and the statements a second
// that plan polls, heartbeats and COPYs cost.
package capacity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/apps/stub"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Config is one simulation.
type Config struct {
	// Dir holds the Postgres cluster and the spill files (a fresh temporary directory).
	Dir string
	// Instances is the generator instances at the last step; the ramp starts at
	// Instances/Steps and adds as many each step.
	Instances, Steps int
	// Rate is each instance's open-loop rate (req/s); 0 makes each instance a closed
	// loop of one user pausing ThinkTime between requests (no schedule to miss: what a
	// busy machine cannot send is simply not sent).
	Rate      float64
	ThinkTime time.Duration
	Hold      time.Duration
	// LateJoiners are instances started by hand once the last step has begun, as
	// cf scale does: they join the running step late.
	LateJoiners int
	// MaxConnections is the database's max_connections.
	MaxConnections int
	// Direct makes each instance open its own pool to the database, as cfbench worker
	// does without --relay; otherwise they go through one relay holding RelayConns.
	Direct     bool
	RelayConns int
	// RelayBin, when set, is a cfbench binary the relay runs as (cfbench relay), in a process of
	// its own (its CPU is then measured); otherwise the relay runs in this process.
	RelayBin string
	Logger   *slog.Logger
}

// Step is what one step's instances did.
type Step struct {
	Index, Planned, Joined, Late, Done int
	// Stored is the step's samples stored (its rate: Stored over the hold).
	Stored int64
	// SkewP50 and SkewP99 are how late the instances that had read the plan in time
	// began the step after its planned start (the database's clock), in milliseconds.
	SkewP50, SkewP99 float64
}

// Result is a simulation's measurements.
type Result struct {
	Steps []Step
	// LateInTime is how many of the LateJoiners registered before the last step ended.
	// Each of those read the plan while the step ran and must have joined it; on a
	// machine too busy to start them within the step, the others find no step to join.
	LateInTime int
	// Sent is what the instances counted (final counters), Stored the rows in
	// samples, Dropped what they counted as lost, Missed the open loop's slots that
	// never went out (the instances could not keep up).
	Sent, Stored, Dropped, Missed int64
	// DiskPerSample is the samples table with its indexes over its rows, in bytes.
	DiskPerSample float64
	// LoadSeconds is the time under load (steps × hold); SamplesPerSec is Stored over it.
	LoadSeconds, SamplesPerSec float64
	// MaxConns and MaxActive are the most client connections open and running a
	// statement at once (pg_stat_activity, every 100 ms, not counting the sampler).
	MaxConns, MaxActive int
	// DBCores is the database's CPU (all its processes) over the run, in cores.
	DBCores float64
	// XactPerSec is the database's committed transactions a second (every statement
	// outside a transaction is one); WALPerSample its WAL bytes per stored sample.
	XactPerSec, WALPerSample float64
	// Relay is what the relay did (zero in Direct mode), RelayCores its CPU when it ran
	// in a process of its own (RelayBin); Seconds the run's wall time.
	Relay      relay.Stats
	RelayCores float64
	Seconds    float64
	// Load1 is the machine's load average (1 min) at the start and the end.
	Load1 [2]string
	// RunErr is the engine's error, if any (a check that tripped is not one).
	RunErr error
}

const token = "capacity-simulation-token"

// Run runs one simulation; ctx bounds it.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	res := &Result{Load1: [2]string{load1(), ""}}
	began := time.Now()
	pg := pgserver.New(pgserver.Options{Dir: cfg.Dir, Fast: true, MaxConnections: cfg.MaxConnections})
	if err := pg.Start(ctx); err != nil {
		return nil, err
	}
	defer pg.Close()
	if err := pg.CreateDatabase(ctx, "capacity"); err != nil {
		return nil, err
	}
	dsn := pg.DSN("capacity")
	store, err := resultsdb.OpenPool(ctx, dsn, 4)
	if err != nil {
		return nil, err
	}
	defer store.Close()

	target, err := serve(stub.Handler(stub.Config{}))
	if err != nil {
		return nil, err
	}
	defer target.Close()

	var (
		backend func(int) worker.Backend
		rel     *runningRelay
		mu      sync.Mutex
		closers []func()
	)
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	if cfg.Direct {
		backend = func(int) worker.Backend {
			s, err := resultsdb.OpenPool(ctx, dsn, 0)
			if err != nil {
				cfg.Logger.Error("open an instance's pool", "err", err)
				return failing{err}
			}
			mu.Lock()
			closers = append(closers, s.Close)
			mu.Unlock()
			return s
		}
	} else {
		var stop func() error
		rel, stop, err = startRelay(ctx, cfg, dsn)
		if err != nil {
			return nil, err
		}
		defer stop()
		backend = func(int) worker.Backend {
			c, err := relay.NewClient(rel.url, token, "")
			if err != nil {
				return failing{err}
			}
			mu.Lock()
			closers = append(closers, c.Close)
			mu.Unlock()
			return c
		}
	}

	mon, err := startMonitor(ctx, dsn, pg.PID())
	if err != nil {
		return nil, err
	}
	sp, text, err := simSpec(cfg, "http://"+target.Addr().String())
	if err != nil {
		return nil, err
	}
	lctx, stopLate := context.WithCancel(ctx)
	late := make(chan []*worker.Worker, 1)
	go func() { late <- startLate(lctx, store, cfg, backend) }()
	out, runErr := engine.Run(ctx, sp, text, engine.Options{Store: store, Logger: cfg.Logger, Backend: backend,
		JoinTimeout: 5 * time.Minute, SpillDir: cfg.Dir})
	stopLate()
	for _, w := range <-late {
		if err := w.Close(); err != nil {
			cfg.Logger.Error("a late joiner did not store everything", "err", err)
		}
	}
	if runErr != nil && !errors.Is(runErr, engine.ErrCheckFailed) {
		res.RunErr = runErr
	}
	m := mon.stop()
	if out == nil || out.Run == nil {
		return nil, fmt.Errorf("the run did not start: %w", runErr)
	}
	res.MaxConns, res.MaxActive, res.DBCores, res.XactPerSec = m.maxConns, m.maxActive, m.cores, m.xactPerSec
	if err := measure(ctx, store, out.Run.ID, cfg.Instances, res); err != nil {
		return nil, err
	}
	if res.Stored > 0 {
		res.WALPerSample = float64(m.wal) / float64(res.Stored)
	}
	res.LoadSeconds = float64(cfg.Steps) * cfg.Hold.Seconds()
	res.SamplesPerSec = float64(res.Stored) / res.LoadSeconds
	if rel != nil {
		if res.Relay, err = rel.stats(ctx); err != nil {
			return nil, fmt.Errorf("read the relay's figures: %w", err)
		}
		res.RelayCores = rel.cores()
	}
	res.Seconds, res.Load1[1] = time.Since(began).Seconds(), load1()
	return res, nil
}

// startLate starts cfg.LateJoiners instances of the run's generator app once its last
// step has begun, and returns them (none when ctx ended first).
func startLate(ctx context.Context, store *resultsdb.Store, cfg Config, backend func(int) worker.Backend) []*worker.Worker {
	if cfg.LateJoiners == 0 {
		return nil
	}
	var app string
	for app == "" {
		if !wait.For(ctx, 50*time.Millisecond) {
			return nil
		}
		store.Pool().QueryRow(ctx, `SELECT rv.generator_app FROM steps st
			JOIN run_variants rv ON rv.run_id = st.run_id AND rv.variant = st.variant
			WHERE st.idx = $1 AND st.started_at < clock_timestamp()`, cfg.Steps-1).Scan(&app)
	}
	var ws []*worker.Worker
	for i := range cfg.LateJoiners {
		w := worker.New(worker.Config{Store: backend(cfg.Instances + i), App: app, Index: cfg.Instances + i, Host: "127.0.0.1",
			SpillDir: cfg.Dir, Logger: cfg.Logger})
		if err := w.Start(context.WithoutCancel(ctx)); err == nil {
			ws = append(ws, w)
		}
	}
	return ws
}

// simSpec is the workload against target ramping to cfg.Instances in cfg.Steps steps.
func simSpec(cfg Config, target string) (*spec.Spec, string, error) {
	per := max(cfg.Instances/cfg.Steps, 1)
	// A few sockets per instance, so that thousands fit in one process.
	model := fmt.Sprintf("model: open\n  rate: %g\n  max_in_flight: 4", cfg.Rate)
	if cfg.Rate <= 0 {
		model = fmt.Sprintf("model: closed\n  users: 1\n  think_time: %s", cfg.ThinkTime)
	}
	text := fmt.Sprintf(`version: 1
name: capacity
variants:
  - name: sim
    url: %s
workload:
  %s
  requests:
    - name: hello
      path: /hello
ramp:
  start: %d
  step: %d
  max: %d
  hold: %s
  warmup: 0s
`, target, model, per, per, per*cfg.Steps, cfg.Hold)
	sp, err := spec.Parse("capacity.yml", []byte(text), ".")
	return sp, text, err
}

// measure reads the steps' joins and the samples of run into res; instance indexes from
// onTime on are the late joiners.
func measure(ctx context.Context, store *resultsdb.Store, run string, onTime int, res *Result) error {
	rows, err := store.Pool().Query(ctx, `
SELECT st.idx, st.instances, count(ws.worker_id), count(*) FILTER (WHERE ws.late_join), count(ws.done_at),
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ws.skew_us) FILTER (WHERE NOT ws.late_join), 0) / 1000,
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ws.skew_us) FILTER (WHERE NOT ws.late_join), 0) / 1000,
       (SELECT count(*) FROM samples s JOIN workers w2 ON w2.id = s.worker_id WHERE w2.run_id = st.run_id AND s.step = st.idx)
FROM steps st JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
LEFT JOIN worker_steps ws ON ws.worker_id = w.id AND ws.step = st.idx
WHERE st.run_id = $1 GROUP BY st.run_id, st.idx, st.instances ORDER BY st.idx`, run)
	if err != nil {
		return fmt.Errorf("read the steps: %w", err)
	}
	res.Steps, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (s Step, err error) {
		err = r.Scan(&s.Index, &s.Planned, &s.Joined, &s.Late, &s.Done, &s.SkewP50, &s.SkewP99, &s.Stored)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("read the steps: %w", err)
	}
	err = store.Pool().QueryRow(ctx, `SELECT count(*) FROM workers w
		JOIN steps st ON st.run_id = w.run_id AND st.variant = w.variant
		WHERE w.run_id = $1 AND w.instance_index >= $2 AND w.started_at < least(st.ends_at, coalesce(st.ended_at, st.ends_at))
		AND st.idx = (SELECT max(idx) FROM steps WHERE run_id = $1)`, run, onTime).Scan(&res.LateInTime)
	if err != nil {
		return fmt.Errorf("count the late joiners: %w", err)
	}
	var disk int64
	err = store.Pool().QueryRow(ctx, `SELECT coalesce(sum(sent), 0)::int8, coalesce(sum(dropped), 0)::int8, coalesce(sum(missed), 0)::int8,
		(SELECT count(*) FROM samples s JOIN workers w2 ON w2.id = s.worker_id WHERE w2.run_id = $1),
		pg_total_relation_size('samples')
		FROM workers WHERE run_id = $1`, run).Scan(&res.Sent, &res.Dropped, &res.Missed, &res.Stored, &disk)
	if err != nil {
		return fmt.Errorf("count the samples: %w", err)
	}
	if res.Stored > 0 {
		res.DiskPerSample = float64(disk) / float64(res.Stored)
	}
	return nil
}

// monitor samples the database's connections every 100 ms on a connection of its own.
type monitor struct {
	stopOnce func() metrics
}

type metrics struct {
	maxConns, maxActive int
	cores, xactPerSec   float64
	wal                 int64
}

func startMonitor(ctx context.Context, dsn string, pid int) (*monitor, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	snap := func() (xact, lsn int64, ticks uint64, at time.Time) {
		conn.QueryRow(ctx, `SELECT (SELECT sum(xact_commit)::int8 FROM pg_stat_database), pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&xact, &lsn)
		ticks, _ = procstat.TreeTicks(pid)
		return xact, lsn, ticks, time.Now()
	}
	x0, l0, t0, at0 := snap()
	var m metrics
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var n, active int
			// Client backends other than this one.
			if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'active')
				FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n, &active); err == nil {
				m.maxConns, m.maxActive = max(m.maxConns, n), max(m.maxActive, active)
			}
		}
	}()
	return &monitor{stopOnce: func() metrics {
		close(stop)
		<-done
		x1, l1, t1, at1 := snap()
		conn.Close(context.WithoutCancel(ctx))
		secs := at1.Sub(at0).Seconds()
		m.cores = float64(t1-t0) / 100 / secs // USER_HZ is 100 on Linux
		m.xactPerSec = float64(x1-x0) / secs
		m.wal = l1 - l0
		return m
	}}, nil
}

func (m *monitor) stop() metrics { return m.stopOnce() }

// serve serves h on a free port of 127.0.0.1 until the listener is closed.
func serve(h http.Handler) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	return ln, nil
}

func load1() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// failing is the backend of an instance whose own connection could not be set up: every
// call fails, as a worker that cannot reach its database does.
type failing struct{ err error }

func (f failing) Assignment(context.Context, string) (*resultsdb.Assignment, error) {
	return nil, f.err
}
func (f failing) JoinRun(context.Context, resultsdb.Worker) (int32, error)         { return 0, f.err }
func (f failing) Heartbeat(context.Context, int32, resultsdb.WorkerCounters) error { return f.err }
func (f failing) JoinStep(context.Context, int32, *resultsdb.Step, time.Time, bool) error {
	return f.err
}
func (f failing) FinishStep(context.Context, int32, int, uint64, uint64) error      { return f.err }
func (f failing) StopWorker(context.Context, int32, resultsdb.WorkerCounters) error { return f.err }
func (f failing) NewSampleWriter(int32, resultsdb.WriterOptions) (*resultsdb.SampleWriter, error) {
	return nil, f.err
}
