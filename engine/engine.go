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
	"net/http"
	"net/url"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
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
	if sp.Workload.Model != spec.ModelClosed {
		return fmt.Errorf("workload model %s is %w by the in-process generator; use model: closed", sp.Workload.Model, ErrUnsupported)
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

// instance is one in-process generator instance with its sample writer.
type instance struct {
	id     int32
	gen    *loadgen.Generator
	writer *resultsdb.SampleWriter
}

func runVariant(ctx context.Context, sp *spec.Spec, v *spec.Variant, run *resultsdb.Run, opts Options) (stop string, err error) {
	target, err := url.Parse(v.URL)
	if err != nil {
		return "", fmt.Errorf("variant %s: url: %w", v.Name, err)
	}
	reqs := requests(sp.Workload.Requests)
	var insts []*instance
	final := context.WithoutCancel(ctx)
	defer func() {
		for _, in := range insts {
			in.gen.Close()
			if cerr := in.writer.Close(final); cerr != nil && err == nil {
				err = fmt.Errorf("store samples of worker %d: %w", in.id, cerr)
			}
			if serr := opts.Store.StopWorker(final, in.id, in.writer.Dropped()); serr != nil && err == nil {
				err = serr
			}
		}
	}()

	steps := sp.Ramp.Steps()
	var prev *resultsdb.StepSummary
	for idx, n := range steps {
		for len(insts) < n {
			in, err := newInstance(ctx, sp, v, run, len(insts), target, reqs, opts)
			if err != nil {
				return "", err
			}
			insts = append(insts, in)
		}
		start := time.Now()
		ph := loadgen.Phase{Step: uint8(idx), WarmupUntil: start.Add(sp.Ramp.Warmup), End: start.Add(sp.Ramp.Hold)}
		if err := opts.Store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: v.Name, Index: idx, Instances: n,
			Users: sp.Workload.Users, Started: start, WarmupUntil: ph.WarmupUntil}); err != nil {
			return "", err
		}
		done := make(chan struct{}, len(insts))
		for _, in := range insts {
			go func() {
				in.gen.RunClosed(ctx, ph)
				done <- struct{}{}
			}()
		}
		for range insts {
			<-done
		}
		ended := time.Now()
		for _, in := range insts {
			if err := in.writer.Flush(final); err != nil {
				return "", fmt.Errorf("store samples of worker %d: %w", in.id, err)
			}
		}
		sum, err := opts.Store.StepSummary(final, run.ID, v.Name, idx)
		if err == nil {
			stop = stopReason(sp.Ramp.Stop, prev, sum)
		}
		if eerr := opts.Store.EndStep(final, run.ID, v.Name, idx, ended, stop); eerr != nil && err == nil {
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

func newInstance(ctx context.Context, sp *spec.Spec, v *spec.Variant, run *resultsdb.Run, index int, target *url.URL, reqs []loadgen.Request, opts Options) (*instance, error) {
	id, err := opts.Store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: v.Name, AppName: "in-process", InstanceIndex: index, Host: "localhost"})
	if err != nil {
		return nil, err
	}
	w, err := opts.Store.NewSampleWriter(id, resultsdb.WriterOptions{Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	w.Start(context.WithoutCancel(ctx))
	wl := &sp.Workload
	gen, err := loadgen.New(loadgen.Config{
		Target: target, Requests: reqs, Users: wl.Users, ThinkTime: wl.ThinkTime, KeepAlive: wl.KeepAlive,
		Timeout: wl.Timeout, CorrelationHeader: wl.CorrelationHeader, TraceTag: run.TraceTag, WorkerID: uint32(id), Epoch: run.Epoch,
	}, w)
	if err != nil {
		w.Close(ctx)
		return nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	return &instance{id: id, gen: gen, writer: w}, nil
}

func requests(in []spec.Request) []loadgen.Request {
	out := make([]loadgen.Request, len(in))
	for i, r := range in {
		h := http.Header{}
		for k, v := range r.Headers {
			h.Set(k, v)
		}
		var body []byte
		if r.Body != "" {
			body = []byte(r.Body)
		}
		out[i] = loadgen.Request{Method: r.Method, Path: r.Path, Header: h, Body: body, Weight: r.Weight}
	}
	return out
}
