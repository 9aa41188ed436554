package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// ErrUnsupported marks a spec the engine cannot run as asked; nothing was started.
var ErrUnsupported = errors.New("not supported")

// ErrAborted is returned when the run was interrupted; what was collected is kept.
var ErrAborted = errors.New("run aborted")

// ErrCheckFailed is returned when a check at level fail tripped; the run is marked failed.
var ErrCheckFailed = errors.New("check failed")

// Options wire the engine to its surroundings.
type Options struct {
	Store    *resultsdb.Store
	Reporter Reporter // nil for none
	Logger   *slog.Logger
	// PollEvery is how often in-process generator instances read the plan (default
	// 500 ms) and how often the engine watches a running step.
	PollEvery time.Duration
	// Deployment runs the spec on a Cloud Foundry (see Deploy); nil runs generators in
	// process against url: variants.
	Deployment *Deployment
	// JoinTimeout bounds the wait for generator instances to join (default 30 s + 10
	// polls in process, 5 min on Cloud Foundry, where instances start containers).
	JoinTimeout time.Duration
	// LookupEnv gives in-process generators the ${NAME}s of header values (default
	// os.LookupEnv); on Cloud Foundry, Deploy sets them on the generator apps.
	LookupEnv func(string) (string, bool)
	// MaxOutage bounds how long the run waits for a results database that went away
	// (default DefaultMaxOutage); then it fails with ErrOutage.
	MaxOutage time.Duration
	// Backend, when set, gives in-process generator instance i its way to the results
	// database instead of Store (the capacity simulation routes them through a relay,
	// as generators at scale are); each call makes one instance's.
	Backend func(i int) worker.Backend
	// SpillDir holds the spill files of in-process generator instances: samples the
	// database cannot take wait there (default the system's temporary directory).
	SpillDir string

	// byHand, in tests, wraps each in-process fleet in one that someone else scales.
	byHand func(Fleet) Fleet
}

// Result is what a finished (or aborted) run left in the store.
type Result struct {
	Run       *resultsdb.Run
	Summaries []resultsdb.StepSummary
	// Stops maps a variant to the stop condition that ended its ramp early.
	Stops map[string]string
	// Findings are the checks that tripped, in order.
	Findings []StepFinding
}

// StepFinding is a check that tripped after a step of a variant.
type StepFinding struct {
	Variant string
	Step    int // 0-based
	Finding
}

// Run executes sp. specText is stored with the run for reproducibility. Variants run one
// after the other so they do not compete for the cells; with repeat: N all of them run
// N times, interleaved (spec.Legs), each repeat a variant of its own in the results. When ctx is cancelled the run is
// marked aborted, the generators are stopped and ErrAborted is returned together with
// the partial Result; a failing check at level fail returns ErrCheckFailed likewise.
//
// Run checks sp where it runs (Check, and the header values' variables); RunSession,
// whose Preflight judged the spec already, runs it without.
func Run(ctx context.Context, sp *spec.Spec, specText string, opts Options) (*Result, error) {
	if err := Check(sp, opts.Deployment != nil); err != nil {
		return nil, err
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Deployment == nil {
		if err := checkHeaderVars(sp, opts.LookupEnv); err != nil {
			return nil, err
		}
	}
	return run(ctx, sp, specText, opts)
}

// run is Run of a spec judged already.
func run(ctx context.Context, sp *spec.Spec, specText string, opts Options) (*Result, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Reporter == nil {
		opts.Reporter = discardReporter{}
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 500 * time.Millisecond
	}
	if opts.JoinTimeout <= 0 {
		opts.JoinTimeout = 30*time.Second + 10*opts.PollEvery
		if opts.Deployment != nil {
			opts.JoinTimeout = 5 * time.Minute
		}
	}
	if opts.MaxOutage <= 0 {
		opts.MaxOutage = DefaultMaxOutage
	}
	if opts.SpillDir == "" {
		opts.SpillDir = os.TempDir()
	}
	if opts.Deployment == nil { // in-process generators spill here
		if err := os.MkdirAll(opts.SpillDir, 0o700); err != nil {
			return nil, fmt.Errorf("spill directory: %w", err)
		}
	}
	store := opts.Store
	AbortDeadRuns(ctx, store, opts.Deployment.cleaner(), opts.Reporter.Note, opts.Logger)
	if opts.Deployment == nil {
		recoverSpills(ctx, store, opts.SpillDir, opts.Reporter.Note, opts.Logger)
	}
	run, err := store.CreateRun(ctx, sp.Name, sp.File, specText, time.Now())
	if err != nil {
		return nil, err
	}
	res := &Result{Run: run, Stops: map[string]string{}}
	opts.Reporter.Started(run, sp)

	outer := ctx
	ctx, cancelBeat := context.WithCancelCause(ctx)
	defer cancelBeat(nil)
	stopBeat := heartbeat(ctx, cancelBeat, store, run.ID, opts.Logger)
	eventsCtx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEvents()
	r := &runner{sp: sp, run: run, opts: opts, res: res, eventsCtx: eventsCtx}
	runErr := r.variants(ctx)
	stopBeat()
	if errors.Is(runErr, ErrOutage) {
		// The database has been away for the whole bound: one more attempt each to
		// record the end, then the error. The run stays "running" with an old
		// heartbeat if they fail, and the next status or run marks it aborted.
		stopEvents()
	}
	r.events.Wait()
	if errors.Is(runErr, ErrOutage) {
		r.opts.MaxOutage = time.Nanosecond
	}

	final := context.WithoutCancel(ctx)
	if !errors.Is(runErr, ErrOutage) {
		r.judgeLoss(final)
	}
	status, reason := resultsdb.RunCompleted, ""
	switch {
	case ctx.Err() != nil && outer.Err() == nil:
		// Another process took the run for dead (its heartbeat was old: a long
		// outage of the results database) and marked it aborted.
		status, reason, runErr = resultsdb.RunAborted, context.Cause(ctx).Error(), ErrAborted
	case ctx.Err() != nil:
		status, reason, runErr = resultsdb.RunAborted, "interrupted", ErrAborted
	case runErr != nil:
		status, reason = resultsdb.RunFailed, runErr.Error()
	case len(res.Stops) > 0:
		status, reason = resultsdb.RunStopped, "stop condition reached"
	}
	if err := r.db(final, "record the run's end", func(ctx context.Context) error {
		return store.FinishRun(ctx, run.ID, status, reason)
	}); err != nil && runErr == nil {
		runErr = err
	}
	run.Status, run.Reason = status, reason
	if err := r.db(final, "read the step summaries", func(ctx context.Context) (err error) {
		res.Summaries, err = store.StepSummaries(ctx, run.ID)
		return err
	}); err != nil && runErr == nil {
		runErr = err
	}
	return res, runErr
}

// runner is one run in progress.
type runner struct {
	sp   *spec.Spec
	run  *resultsdb.Run
	opts Options
	res  *Result
	// back is when the results database last came back after an outage (zero: none
	// yet); away says that a read outside db (watching a step) found it away. Only the
	// run's goroutine touches them.
	back time.Time
	away bool
	// nodeAway is since when a node of a Citus results database has not answered
	// (zero: every node answers; watchNodes).
	nodeAway time.Time
	// instances watches the run's app instances (run_instances.go); nil when not.
	instances *instanceWatcher
	// events are the run's events still being recorded (event); eventsCtx ends their
	// retries early, when the run gives up on the database.
	events    sync.WaitGroup
	eventsCtx context.Context
}

// variants runs every variant's ramp, each with its own fleet, and stops the fleets
// whatever happens (scaled to 0 on Cloud Foundry), also when ctx was cancelled.
func (r *runner) variants(ctx context.Context) (err error) {
	dep := r.opts.Deployment
	if dep != nil {
		stopMetrics := dep.startMetrics(ctx, r.run.ID, r.sp.Collectors.ContainerMetrics.Interval, r.opts.Logger)
		defer stopMetrics()
		stopDBWatch := dep.startDBWatch(ctx, r.run.ID, r.sp.Collectors.ContainerMetrics.Interval, r.opts.Reporter.Note, r.opts.Logger)
		defer stopDBWatch()
	}
	if dep != nil && usesDrain(r.sp) {
		rd, err := dep.startDrain(ctx, r.sp, r.run.ID, r.opts.Reporter.Note)
		if err != nil {
			return err
		}
		// The drain goes whatever happens: a failed or interrupted run must not leave
		// a drain bound to the apps (nor its credentials in a service instance).
		defer func() {
			if rerr := rd.remove(ctx); rerr != nil {
				r.event("", -1, "drain", "fail", rerr.Error())
				err = errors.Join(err, rerr)
			}
		}()
		defer func() {
			if ctx.Err() == nil {
				rd.settle(ctx, r.sp.Collectors.RouterLogs.Delay, r.opts.Reporter.Note)
			}
		}()
	}
	r.watchInstances(ctx)
	defer r.checkInstances(context.WithoutCancel(ctx), nil)
	return r.legs(ctx)
}

// legs runs every leg of the spec (variants × repeats) in turn, each with its fleet.
func (r *runner) legs(ctx context.Context) error {
	dep := r.opts.Deployment
	r.checkNeighbours(ctx, "", -1)
	for _, leg := range r.sp.Legs() {
		if ctx.Err() != nil {
			return nil
		}
		v := leg.Variant
		rv := resultsdb.RunVariant{RunID: r.run.ID, Variant: leg.Name, TargetURL: v.URL, Listed: v.Listed(), Matrix: matrixCell(v),
			Config: v.Name, Repeat: leg.Repeat}
		wl := worker.FromSpec(&r.sp.Workload)
		var fleet Fleet
		if dep != nil {
			d := dep.variant(v.Name)
			rv.TargetURL, wl.ConnectTo = d.target.URL, d.target.ConnectTo
			if d.app != nil {
				rv.AppName, rv.AppGUID, rv.App = d.app.Name, d.app.GUID, d.config
			}
			fleet = d.fleet
		} else {
			fctx, cancel := context.WithCancel(ctx)
			defer cancel()
			// One generator app per variant, as on Cloud Foundry: its instances follow
			// the newest repeat.
			fleet = &localFleet{app: fmt.Sprintf("cfbench-local-%s-%s", r.run.ID, v.Name), store: r.opts.Store,
				backend: r.opts.Backend, poll: r.opts.PollEvery, log: r.opts.Logger, lookupEnv: r.opts.LookupEnv, spillDir: r.opts.SpillDir, ctx: fctx}
			if r.opts.byHand != nil {
				fleet = r.opts.byHand(fleet)
			}
		}
		rv.GeneratorApp, rv.Workload = fleet.App(), wl.Marshal()
		if err := r.db(ctx, "record the variant", func(ctx context.Context) error { return r.opts.Store.AddRunVariant(ctx, rv) }); err != nil {
			return err
		}
		if r.sp.Repeat > 1 {
			r.opts.Reporter.Note(fmt.Sprintf("%s: repeat %d of %d of %s", leg.Name, leg.Repeat, r.sp.Repeat, v.Name))
		}
		err := r.ramp(ctx, leg, fleet)
		if aerr := r.restoreApp(ctx, v); aerr != nil {
			r.event(leg.Name, -1, "scale", "warn", aerr.Error())
			r.opts.Reporter.Note("warning: " + aerr.Error())
		}
		// The fleet goes down even when the run was interrupted: generators left
		// running would go on loading the target (and idle on CF, costing quota).
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		serr := fleet.Stop(stopCtx)
		cancel()
		if serr != nil {
			serr = fmt.Errorf("stop the generators of %s: %w", leg.Name, serr)
			r.event(leg.Name, -1, "scale", "fail", serr.Error())
		}
		if err = errors.Join(err, serr); err != nil {
			return err
		}
	}
	return nil
}

// matrixCell is v's matrix settings by dimension; nil without a matrix.
func matrixCell(v *spec.Variant) map[string]string {
	if len(v.Matrix) == 0 {
		return nil
	}
	m := make(map[string]string, len(v.Matrix))
	for _, s := range v.Matrix {
		m[s.Key] = s.Value
	}
	return m
}

// event records a run event, as record does: failing to record it is logged, never
// fatal.
func (r *runner) event(variant string, step int, kind, level, msg string) {
	ev := resultsdb.Event{RunID: r.run.ID, At: time.Now(), Variant: variant, Step: step, Kind: kind, Level: level, Message: msg}
	// In its own goroutine, so that a database that is away holds up only this record
	// (retried within the outage bound), not the run; the run's end waits for it.
	bound := r.opts.MaxOutage
	r.events.Add(1)
	go func() {
		defer r.events.Done()
		r.recordWithin(r.eventsCtx, ev, bound)
	}()
}

// waitLive waits until n instances of the variant heartbeat.
func (r *runner) waitLive(ctx context.Context, variant string, n int) error {
	deadline := time.Now().Add(r.opts.JoinTimeout)
	for {
		var live int
		err := r.db(ctx, "count the live generator instances", func(ctx context.Context) (err error) {
			live, err = r.opts.Store.LiveWorkers(ctx, r.run.ID, variant)
			return err
		})
		if err != nil {
			return err
		}
		if !r.back.IsZero() {
			// The instances could not heartbeat while the database was away.
			deadline = later(deadline, r.back.Add(r.opts.JoinTimeout))
		}
		if live >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("variant %s: %d of %d generator instances joined the run within %s", variant, live, n, r.opts.JoinTimeout)
		}
		if !wait.For(ctx, r.opts.PollEvery/2) {
			return ctx.Err()
		}
	}
}
