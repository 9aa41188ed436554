// Package worker is one load-generator instance that follows the results database. It
// polls the plan for its app (the newest running run that names it), registers itself
// for that run, heartbeats, and runs each step in the window the engine planned, on the
// database's clock so that all instances change steps together. An instance that
// appears mid-step (cf scale) joins the running step at once. Samples stream to the
// database; on Close (SIGTERM on CF) it stops issuing, lets requests in flight finish
// within a bound, stores everything and marks itself stopped.
//
// The same code runs pushed to Cloud Foundry (cmd/cfbench: cfbench worker) and in process, where
// the engine starts instances itself for url: variants.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Backend is the instance's way to the results database: the database itself
// (*resultsdb.Store, one pool per instance) or a relay that many instances share
// (package relay), which keeps the database's connections few however many instances
// run. Its methods are called concurrently; an error means the call may be repeated
// later (the worker retries, a sample writer keeps its samples).
type Backend interface {
	Assignment(ctx context.Context, app string) (*resultsdb.Assignment, error)
	JoinRun(ctx context.Context, w resultsdb.Worker) (int32, error)
	Heartbeat(ctx context.Context, id int32, c resultsdb.WorkerCounters) error
	JoinStep(ctx context.Context, id int32, st *resultsdb.Step, joined time.Time, late bool) error
	FinishStep(ctx context.Context, id int32, step int, sent, missed uint64) error
	StopWorker(ctx context.Context, id int32, c resultsdb.WorkerCounters) error
	NewSampleWriter(worker int32, opts resultsdb.WriterOptions) (*resultsdb.SampleWriter, error)
}

var _ Backend = (*resultsdb.Store)(nil)

// Config describes one instance.
type Config struct {
	Store Backend
	// App is the generator app name whose plan the instance follows.
	App string
	// Index, GUID and Host identify the instance (CF_INSTANCE_INDEX, CF_INSTANCE_GUID,
	// CF_INSTANCE_IP on CF).
	Index int
	GUID  string
	Host  string
	// PollEvery is how often the plan is read and a heartbeat sent (default 500 ms): a
	// new instance joins a running step within about this time.
	PollEvery time.Duration
	// SpillDir, when set, holds a spill file for samples the database cannot take.
	SpillDir string
	// Grace bounds Close: requests in flight get 3/8 of it to finish (then they are
	// aborted and recorded as canceled), storing samples the rest (default 8 s, inside
	// CF's 10 s between SIGTERM and SIGKILL).
	Grace time.Duration
	// Writer tunes the sample writer; SpillPath is set from SpillDir.
	Writer resultsdb.WriterOptions
	Logger *slog.Logger
	// LookupEnv expands ${NAME} in the workload's header values (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Worker is one instance. It follows the lifecycle of package lifecycle: Close stops it
// gracefully (requests in flight get part of Config.Grace, every sample is stored); the
// end of Start's context stops it abruptly (requests in flight are aborted and recorded
// as canceled, then the samples are stored as on Close). Database errors are logged and
// retried; they never stop it.
type Worker struct {
	cfg   Config
	life  lifecycle.State
	clock clockOffset // the loop's own
}

var _ lifecycle.Part = (*Worker)(nil)

// New returns an instance that is not started yet.
func New(cfg Config) *Worker {
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 500 * time.Millisecond
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 8 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = cfg.Logger.With("app", cfg.App, "index", cfg.Index)
	return &Worker{cfg: cfg}
}

// Start starts following the plan in the background and returns at once; it fails only
// when the worker was started or closed before.
func (w *Worker) Start(ctx context.Context) error {
	if err := w.life.Begin(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	stopping := w.life.Stopping()
	go func() { w.life.Stopped(w.loop(ctx, stopping)) }()
	return nil
}

// Close stops the instance gracefully and waits until it is stopped (at most about
// Config.Grace). The error says what could not be stored.
func (w *Worker) Close() error { return w.life.Close() }

// Wait blocks until the instance has stopped; the error says what could not be stored.
func (w *Worker) Wait() error { return w.life.Wait() }

// Run is Start followed by Wait.
func (w *Worker) Run(ctx context.Context) error { return lifecycle.Run(ctx, w) }

func (w *Worker) loop(ctx context.Context, stopping <-chan struct{}) error {
	var (
		cur     *membership
		broken  string // a run this instance could not join; not retried
		refused string // a run the database said is not running; retried, said once
	)
	leave := func() error {
		if cur == nil {
			return nil
		}
		err := cur.leave(context.WithoutCancel(ctx), w.cfg.Grace)
		cur = nil
		return err
	}
	tick := time.NewTicker(w.cfg.PollEvery)
	defer tick.Stop()
	failures := 0
	for {
		a, offset, err := w.poll(ctx)
		switch {
		case err != nil:
			// Keep going: a running step goes on, samples spill, the next poll retries.
			if failures++; failures == 1 || failures%20 == 0 {
				w.cfg.Logger.Warn("read the run plan", "err", err, "failures", failures)
			}
		case cur != nil && (a == nil || a.RunID != cur.runID || a.Variant != cur.variant):
			// A new run, or the next repeat of the variant (its steps count from 1
			// again): the instance takes part in it as a new worker.
			if err := leave(); err != nil {
				w.cfg.Logger.Error("leave run", "err", err)
			}
		}
		if err == nil {
			failures = 0
			if a != nil && cur == nil && a.RunID != broken {
				var again *retryJoin
				cur, err = w.join(ctx, a, offset)
				switch {
				case errors.Is(err, resultsdb.ErrRunNotRunning):
					// Ended, or its process is gone. One that rode out an outage of
					// the database heartbeats again within seconds: joined then.
					if refused != a.RunID {
						w.cfg.Logger.Info("not joining a run that is not running", "run", a.RunID, "err", err)
						refused = a.RunID
					}
				case errors.As(err, &again):
					// The database (or relay) did not answer: the next poll tries again.
					w.cfg.Logger.Warn("join run; retrying", "run", a.RunID, "err", err)
				case err != nil:
					w.cfg.Logger.Error("join run; waiting for the next one", "run", a.RunID, "err", err)
					broken = a.RunID
				}
			}
			if cur != nil {
				cur.update(ctx, a, offset)
			}
		}
		select {
		case <-stopping:
			return leave()
		case <-ctx.Done():
			return leave() // requests in flight were aborted with ctx
		case <-tick.C:
		}
	}
}

// dbCallTimeout bounds one read or write of the plan, a heartbeat or a step record: a
// database that accepts the connection and then says nothing counts as away, and the
// next poll tries again.
const dbCallTimeout = 10 * time.Second

// poll reads the assignment and the offset of the database's clock over ours.
func (w *Worker) poll(ctx context.Context) (*resultsdb.Assignment, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, dbCallTimeout)
	defer cancel()
	before := time.Now()
	a, err := w.cfg.Store.Assignment(ctx, w.cfg.App)
	if err != nil || a == nil {
		return nil, 0, err
	}
	rtt := time.Since(before)
	return a, w.clock.add(a.DBNow.Sub(before.Add(rtt/2)), rtt), nil
}

// clockOffset estimates the offset of the database's clock over ours from the polls.
// One poll's estimate assumes its answer was read halfway through its round trip, so
// it is off by up to half the round trip: a poll that waited seconds (for a busy
// database, or a relay's connection) would put the instance's step seconds off. So, as
// NTP does, the estimate is that of the poll with the shortest round trip among the
// recent ones. Clocks drift by parts per million: over clockPolls polls that is nothing.
type clockOffset struct {
	recent [clockPolls]clockSample
	n      int // polls seen
}

// clockSample is one poll's estimate of the offset and its round trip.
type clockSample struct{ offset, rtt time.Duration }

const clockPolls = 64

// add records a poll's estimate and returns the best recent one.
func (c *clockOffset) add(offset, rtt time.Duration) time.Duration {
	c.recent[c.n%clockPolls] = clockSample{offset, rtt}
	c.n++
	best := c.recent[0]
	for _, r := range c.recent[1:min(c.n, clockPolls)] {
		if r.rtt < best.rtt {
			best = r
		}
	}
	return best.offset
}

// retryJoin is a join that failed on the way to the database, not on the run's plan:
// the instance tries again at its next poll.
type retryJoin struct{ err error }

func (e *retryJoin) Error() string { return e.err.Error() }
func (e *retryJoin) Unwrap() error { return e.err }

// membership is the instance's part in one run.
type membership struct {
	w        *Worker
	runID    string
	variant  string
	id       int32
	workload Workload
	gen      *loadgen.Generator
	writer   *resultsdb.SampleWriter
	ctx      context.Context // requests; cancelled to abort those in flight
	abort    context.CancelFunc
	last     int // index of the last step begun, -1 before the first
	phase    *phase
	log      *slog.Logger
}

type phase struct {
	stop chan struct{}
	done chan struct{}
}

func (w *Worker) join(ctx context.Context, a *resultsdb.Assignment, offset time.Duration) (*membership, error) {
	wl, err := ParseWorkload(a.Workload)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, dbCallTimeout)
	id, err := w.cfg.Store.JoinRun(rctx, resultsdb.Worker{RunID: a.RunID, Variant: a.Variant, AppName: w.cfg.App,
		InstanceIndex: w.cfg.Index, InstanceGUID: w.cfg.GUID, Host: w.cfg.Host})
	cancel()
	if errors.Is(err, resultsdb.ErrRunNotRunning) {
		return nil, err
	}
	if err != nil {
		return nil, &retryJoin{err}
	}
	opts := w.cfg.Writer
	if opts.Logger == nil {
		opts.Logger = w.cfg.Logger
	}
	if w.cfg.SpillDir != "" {
		opts.SpillPath = filepath.Join(w.cfg.SpillDir, resultsdb.SpillName(a.RunID, id))
	}
	// Sample times count from the run's epoch, on this host's clock.
	lookup := w.cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	cfg, err := wl.config(a.TargetURL, a.TraceTag, uint32(id), a.Epoch.Add(-offset), lookup)
	if err != nil {
		return nil, err
	}
	cfg.Rate = wl.perInstanceRate(a.Step, a.Live+1)
	writer, err := w.cfg.Store.NewSampleWriter(id, opts)
	if err != nil {
		return nil, err
	}
	writer.Start(context.WithoutCancel(ctx))
	gen, err := loadgen.New(cfg, writer)
	if err != nil {
		// Nothing was recorded: closing removes the spill file it opened.
		return nil, errors.Join(err, writer.Close(ctx))
	}
	reqCtx, abort := context.WithCancel(ctx)
	m := &membership{w: w, runID: a.RunID, variant: a.Variant, id: id, workload: wl, gen: gen, writer: writer, ctx: reqCtx, abort: abort, last: -1,
		log: w.cfg.Logger.With("run", a.RunID, "worker", id)}
	m.log.Info("joined run", "variant", a.Variant, "model", wl.Model)
	return m, nil
}

func (m *membership) counters() resultsdb.WorkerCounters {
	return resultsdb.WorkerCounters{Sent: m.gen.Sent(), Stored: m.writer.Written(), Spilled: m.writer.Spilled(),
		Missed: m.gen.Missed(), Dropped: m.writer.Dropped()}
}

// update heartbeats, follows the live instance count and begins a new step.
func (m *membership) update(ctx context.Context, a *resultsdb.Assignment, offset time.Duration) {
	hctx, cancel := context.WithTimeout(ctx, dbCallTimeout)
	defer cancel()
	if err := m.w.cfg.Store.Heartbeat(hctx, m.id, m.counters()); err != nil {
		m.log.Warn("heartbeat", "err", err)
	}
	if a.Step != nil || m.workload.Rate > 0 { // between steps of a ramp of rates, keep the last step's
		m.gen.SetRate(m.workload.perInstanceRate(a.Step, a.Live))
	}
	if m.phase != nil {
		select {
		case <-m.phase.done:
			m.phase = nil
		default:
			return // the previous step is still finishing
		}
	}
	if a.Step == nil || a.Step.Index <= m.last {
		return
	}
	m.last = a.Step.Index
	m.phase = m.begin(ctx, *a.Step, offset, a.DBNow.After(a.Step.Started))
}

// begin runs step st in the background: it waits for the step's start, runs the load
// until its end and records how it went once every sample is stored.
func (m *membership) begin(ctx context.Context, st resultsdb.Step, offset time.Duration, late bool) *phase {
	p := &phase{stop: make(chan struct{}), done: make(chan struct{})}
	local := func(t time.Time) time.Time { return t.Add(-offset) }
	ph := loadgen.Phase{Step: uint8(st.Index), Users: st.Users, Start: local(st.Started), Joined: late, WarmupUntil: local(st.WarmupUntil), End: local(st.Ends), Stop: p.stop}
	store := m.w.cfg.Store
	go func() {
		defer close(p.done)
		if !wait.Until(ctx, p.stop, ph.Start) {
			return
		}
		// The join is recorded beside the load, until it is stored: the engine waits
		// for the instances that joined, and one that could not say so in an outage
		// would not be waited for.
		joined := make(chan bool, 1)
		go func() {
			joined <- m.retry(ctx, p.stop, "record step start", st.Index, m.joinStep(&st, time.Now().Add(offset), late))
		}()
		m.log.Info("step begins", "step", st.Index+1, "late", late, "clock_offset", offset, "left", time.Until(ph.End).Round(time.Millisecond))
		sent, missed := m.gen.Sent(), m.gen.Missed()
		m.gen.Run(m.ctx, ph)
		sent, missed = m.gen.Sent()-sent, m.gen.Missed()-missed
		m.log.Info("step's load ended", "step", st.Index+1, "sent", sent, "missed", missed)
		if !<-joined {
			return
		}
		// The step counts as done for the engine only once its samples are stored.
		for {
			fctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := m.writer.Flush(fctx)
			cancel()
			if err == nil {
				fctx, cancel := context.WithTimeout(ctx, dbCallTimeout)
				err = store.FinishStep(fctx, m.id, st.Index, sent, missed)
				cancel()
			}
			if err == nil {
				return
			}
			m.log.Warn("store the step's samples; retrying", "step", st.Index+1, "err", err)
			if !wait.Until(ctx, p.stop, time.Now().Add(time.Second)) {
				return
			}
		}
	}()
	return p
}

// joinStep records that the instance began st at joined (DB clock).
func (m *membership) joinStep(st *resultsdb.Step, joined time.Time, late bool) func(context.Context) error {
	return func(ctx context.Context) error { return m.w.cfg.Store.JoinStep(ctx, m.id, st, joined, late) }
}

// retry calls op, each attempt bounded by dbCallTimeout, once a second until it
// succeeds; false when stop or ctx ended first.
func (m *membership) retry(ctx context.Context, stop <-chan struct{}, what string, step int, op func(context.Context) error) bool {
	for {
		actx, cancel := context.WithTimeout(ctx, dbCallTimeout)
		err := op(actx)
		cancel()
		if err == nil {
			return true
		}
		m.log.Warn(what+"; retrying", "step", step+1, "err", err)
		if !wait.Until(ctx, stop, time.Now().Add(time.Second)) {
			return false
		}
	}
}

// leave ends the instance's part in the run: it stops issuing, gives requests in flight
// part of grace to finish, stores every sample and marks the worker stopped.
func (m *membership) leave(ctx context.Context, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	if p := m.phase; p != nil {
		close(p.stop)
		select {
		case <-p.done:
		case <-time.After(grace * 3 / 8):
			m.abort() // what is still in flight is recorded as canceled
			<-p.done
		}
	}
	m.abort()
	m.gen.Close()
	// The samples get the grace but a reserve: the final counters must get through
	// too, so that the run knows exactly what was not stored.
	reserve := min(grace/8, time.Second)
	flushCtx, cancel := context.WithDeadline(ctx, deadline.Add(-reserve))
	// A database that refuses at once (down, restarting) may be back within the grace.
	retry := backoff.Backoff{First: 100 * time.Millisecond, Max: time.Second}
	for m.writer.Flush(flushCtx) != nil && retry.Wait(flushCtx) {
	}
	err := m.writer.Close(flushCtx)
	cancel()
	c := m.counters()
	stopCtx, cancel := context.WithDeadline(ctx, later(deadline, time.Now().Add(reserve)))
	defer cancel()
	if !m.retry(stopCtx, nil, "record the final counters", m.last, func(ctx context.Context) error { return m.w.cfg.Store.StopWorker(ctx, m.id, c) }) {
		err = errors.Join(err, fmt.Errorf("record the final counters of worker %d: %w", m.id, stopCtx.Err()))
	}
	m.log.Info("left run", "sent", c.Sent, "stored", c.Stored, "not_stored", c.Sent-min(c.Sent, c.Stored),
		"spilled", c.Spilled, "missed", c.Missed, "dropped", c.Dropped)
	return err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
