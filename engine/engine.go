// Package engine runs a benchmark spec: it creates the run, walks the ramp step by step,
// keeps the generators loaded, records step boundaries, applies stop conditions and
// leaves every sample in the results store.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
	"github.com/cf-benchmark/cf-benchmark/worker"
)

// ErrUnsupported marks a spec the engine cannot run yet; nothing was started.
var ErrUnsupported = errors.New("not supported yet")

// ErrAborted is returned when the run was interrupted; what was collected is kept.
var ErrAborted = errors.New("run aborted")

// Options wire the engine to its surroundings.
type Options struct {
	Store    *resultsdb.Store
	Progress io.Writer // one line per finished step; nil for none
	Logger   *slog.Logger
	// PollEvery is how often generator instances read the plan (default 500 ms).
	PollEvery time.Duration
}

// Result is what a finished (or aborted) run left in the store.
type Result struct {
	Run       *resultsdb.Run
	Summaries []resultsdb.StepSummary
	// Stops maps a variant to the stop condition that ended its ramp early.
	Stops map[string]string
}

// Check reports why sp cannot run with the in-process generators, or nil.
func Check(sp *spec.Spec) error {
	for _, v := range sp.Variants {
		if v.URL == "" {
			return fmt.Errorf("variant %s: pushing a manifest to Cloud Foundry is %w; give the variant a url: of a running target", v.Name, ErrUnsupported)
		}
	}
	return nil
}

// Run executes sp. specText is stored with the run for reproducibility. Variants run one
// after the other so they do not compete for the machine. When ctx is cancelled the run is
// marked aborted and ErrAborted is returned together with the partial Result.
func Run(ctx context.Context, sp *spec.Spec, specText string, opts Options) (*Result, error) {
	if err := Check(sp); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 500 * time.Millisecond
	}
	store := opts.Store
	run, err := store.CreateRun(ctx, sp.Name, sp.File, specText, time.Now())
	if err != nil {
		return nil, err
	}
	res := &Result{Run: run, Stops: map[string]string{}}
	fmt.Fprintf(opts.Progress, "run %s: %s, %d variant(s), %d step(s) each\n", run.ID, sp.Name, len(sp.Variants), len(sp.Ramp.Steps()))

	var runErr error
	for i := range sp.Variants {
		if ctx.Err() != nil {
			break
		}
		v := &sp.Variants[i]
		stop, err := runVariant(ctx, sp, v, run, opts)
		if err != nil {
			runErr = err
			break
		}
		if stop != "" {
			res.Stops[v.Name] = stop
		}
	}

	status, reason := resultsdb.RunCompleted, ""
	switch {
	case ctx.Err() != nil:
		status, reason, runErr = resultsdb.RunAborted, "interrupted", ErrAborted
	case runErr != nil:
		status, reason = resultsdb.RunFailed, runErr.Error()
	case len(res.Stops) > 0:
		status, reason = resultsdb.RunStopped, "stop condition reached"
	}
	final := context.WithoutCancel(ctx)
	if err := store.FinishRun(final, run.ID, status, reason); err != nil && runErr == nil {
		runErr = err
	}
	run.Status, run.Reason = status, reason
	if sums, err := store.StepSummaries(final, run.ID); err == nil {
		res.Summaries = sums
	} else if runErr == nil {
		runErr = err
	}
	return res, runErr
}

// runVariant walks the ramp of one variant with generator instances started in process.
// They follow the plan in the results DB exactly as pushed generators do; the engine
// only writes the plan and waits for the results.
func runVariant(ctx context.Context, sp *spec.Spec, v *spec.Variant, run *resultsdb.Run, opts Options) (stop string, err error) {
	store := opts.Store
	app := fmt.Sprintf("cfbench-local-%s-%s", run.ID, v.Name)
	wl := worker.FromSpec(&sp.Workload)
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: v.Name, GeneratorApp: app,
		TargetURL: v.URL, Workload: wl.Marshal()}); err != nil {
		return "", err
	}
	var insts []*worker.Worker
	defer func() {
		for _, in := range insts {
			if cerr := in.Close(); cerr != nil && err == nil && !errors.Is(cerr, context.Canceled) {
				err = fmt.Errorf("generator of %s: %w", v.Name, cerr)
			}
		}
	}()

	steps := sp.Ramp.Steps()
	var prev *resultsdb.StepSummary
	for idx, n := range steps {
		for len(insts) < n {
			in := worker.New(worker.Config{Store: store, App: app, Index: len(insts), Host: "127.0.0.1",
				PollEvery: opts.PollEvery, Logger: opts.Logger})
			in.Start(ctx)
			insts = append(insts, in)
		}
		if err := waitLive(ctx, store, run.ID, v.Name, n, opts.PollEvery); err != nil {
			return "", err
		}
		st, err := planStep(ctx, store, sp, run.ID, v.Name, idx, n, opts.PollEvery)
		if err != nil {
			return "", err
		}
		if err := waitStepDone(ctx, store, st, sp.Workload.Timeout, opts); err != nil {
			return "", err
		}
		ended := time.Now()
		final := context.WithoutCancel(ctx)
		sum, err := store.StepSummary(final, run.ID, v.Name, idx)
		if err == nil {
			stop = stopReason(sp.Ramp.Stop, prev, sum)
		}
		if eerr := store.EndStep(final, run.ID, v.Name, idx, ended, stop); eerr != nil && err == nil {
			err = eerr
		}
		if err != nil {
			return "", err
		}
		if ctx.Err() != nil {
			return "", nil
		}
		left := time.Duration(len(steps)-idx-1) * sp.Ramp.Hold
		fmt.Fprintln(opts.Progress, report.StepLine(sum, len(steps), left))
		if stop != "" {
			fmt.Fprintf(opts.Progress, "%s: stopping the ramp: %s\n", v.Name, stop)
			return stop, nil
		}
		prev = &sum
	}
	return "", nil
}

// waitLive waits until n instances of the variant heartbeat.
func waitLive(ctx context.Context, store *resultsdb.Store, runID, variant string, n int, poll time.Duration) error {
	deadline := time.Now().Add(30*time.Second + 10*poll)
	for {
		live, err := store.LiveWorkers(ctx, runID, variant)
		if err != nil {
			return err
		}
		if live >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("variant %s: %d of %d generator instances joined the run within %s", variant, live, n, 30*time.Second+10*poll)
		}
		if !wait.For(ctx, poll/2) {
			return ctx.Err()
		}
	}
}

// planStep writes step idx with a start far enough ahead that every live instance reads
// it before it begins, so all of them start together.
func planStep(ctx context.Context, store *resultsdb.Store, sp *spec.Spec, runID, variant string, idx, n int, poll time.Duration) (resultsdb.Step, error) {
	now, err := store.Now(ctx)
	if err != nil {
		return resultsdb.Step{}, err
	}
	start := now.Add(2*poll + 100*time.Millisecond)
	st := resultsdb.Step{RunID: runID, Variant: variant, Index: idx, Instances: n, Users: sp.Workload.Users,
		Started: start, WarmupUntil: start.Add(sp.Ramp.Warmup), Ends: start.Add(sp.Ramp.Hold)}
	return st, store.StartStep(ctx, st)
}

// waitStepDone waits until the step's window is over and every instance that took part
// has stored its samples; instances that stopped heartbeating are not waited for.
func waitStepDone(ctx context.Context, store *resultsdb.Store, st resultsdb.Step, timeout time.Duration, opts Options) error {
	now, err := store.Now(ctx)
	if err != nil {
		return err
	}
	if !wait.For(ctx, st.Ends.Sub(now)) {
		return nil
	}
	deadline := time.Now().Add(timeout + 15*time.Second)
	for {
		p, err := store.StepProgress(ctx, st.RunID, st.Variant, st.Index)
		if err != nil {
			return err
		}
		if p.Joined > 0 && p.Done+p.Stale >= p.Joined {
			if p.Stale > 0 {
				opts.Logger.Warn("generator instances stopped during the step; their stored samples count", "variant", st.Variant, "step", st.Index, "stale", p.Stale)
			}
			return nil
		}
		if time.Now().After(deadline) {
			opts.Logger.Warn("not every generator instance stored its samples in time", "variant", st.Variant, "step", st.Index, "joined", p.Joined, "done", p.Done)
			return nil
		}
		if !wait.For(ctx, 50*time.Millisecond) {
			return nil
		}
	}
}
