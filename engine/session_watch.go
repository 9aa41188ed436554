package engine

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/dashboard"
	"github.com/cf-benchmark/cf-benchmark/report/metrics"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// FlagError is a flag's value the engine cannot use; Flag names it as the command
// line does.
type FlagError struct {
	Flag string
	Err  error
}

func (e *FlagError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// WatchOptions ask for the ways to show a run as it goes.
type WatchOptions struct {
	// Dashboard asks for the live page, at DashboardAddr ("" for 127.0.0.1 and a free
	// port; a bare port or host as dashboard.ListenAddr reads them).
	Dashboard     bool
	DashboardAddr string
	// Metrics is where the run's figures go: prometheus[:ADDR] or otlp=URL; "" for
	// nowhere.
	Metrics string
}

// Watch shows a run as it goes: on its dashboard, in its metrics; from the run's
// start, and then its report. The zero of each part is off.
type Watch struct {
	dashAddr string
	target   *metrics.Target
	dash     *dashboard.Server
	out      metrics.Output
}

// NewWatch checks o; it starts nothing. A value it cannot use gives a *FlagError, the
// dashboard's checked first.
func NewWatch(o WatchOptions) (*Watch, error) {
	w := &Watch{}
	if o.Dashboard {
		addr, err := dashboard.ListenAddr(o.DashboardAddr)
		if err != nil {
			return nil, &FlagError{"dashboard", err}
		}
		w.dashAddr = addr
	}
	if o.Metrics != "" {
		t, err := metrics.ParseTarget(o.Metrics)
		if err != nil {
			return nil, &FlagError{"metrics", err}
		}
		w.target = &t
	}
	return w, nil
}

// Start starts the dashboard, then the metrics, those asked for; when one fails
// nothing is left running. Close stops them.
func (w *Watch) Start(ctx context.Context, log *slog.Logger) error {
	if w.dashAddr != "" {
		srv := dashboard.New(dashboard.Config{Addr: w.dashAddr, Logger: log})
		if err := srv.Start(ctx); err != nil {
			return err
		}
		w.dash = srv
	}
	if w.target != nil {
		// The SDK reports a failed push through its global handler: to the log, not stderr.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("metrics: OTLP push failed; trying again at the next", "err", err) }))
		out, err := metrics.New(*w.target, metrics.Config{Logger: log})
		if err == nil {
			err = out.Start(ctx)
		}
		if err != nil {
			w.Close()
			return err
		}
		w.out = out
	}
	return nil
}

// Close stops the metrics, then the dashboard.
func (w *Watch) Close() {
	if w.out != nil {
		w.out.Close()
		w.out = nil
	}
	if w.dash != nil {
		w.dash.Close()
		w.dash = nil
	}
}

// DashboardURL is where the started dashboard is; "" when there is none.
func (w *Watch) DashboardURL() string {
	if w.dash == nil {
		return ""
	}
	return w.dash.URL()
}

// Metrics says where the started metrics go (a URL to scrape or push to) and how:
// "prometheus" or "otlp"; "" when there are none.
func (w *Watch) Metrics() (where, kind string) {
	if w.out == nil {
		return "", ""
	}
	return w.out.Where(), w.target.Kind
}

// watcher is what shows a run as it goes: dashboard.Server, metrics.Output.
type watcher interface {
	Watch(run *report.LiveRun)
	Finish(rep *report.Report, reportErr error)
}

// Reporter is next, and the run shown on what w started from its start to its
// report; next alone when w started nothing. store is the results database when the
// caller has it (otherwise it is known once the session has deployed).
func (w *Watch) Reporter(next SessionReporter, store *resultsdb.Store) SessionReporter {
	var to []watcher
	if w.dash != nil {
		to = append(to, w.dash)
	}
	if w.out != nil {
		to = append(to, w.out)
	}
	if len(to) == 0 {
		return next
	}
	return &watching{SessionReporter: next, to: to, store: store}
}

// Follow shows run id, under way in another process, on the dashboard until it ends
// (the page then shows its report) or ctx ends.
func (w *Watch) Follow(ctx context.Context, store *resultsdb.Store, id string) error {
	return w.dash.Follow(ctx, store, id)
}

// watching shows a session's run as it goes (on its dashboard, in its metrics): from
// the run's start, and its report when the session wrote it.
type watching struct {
	SessionReporter
	to    []watcher
	store *resultsdb.Store // the results database, once known
}

func (w *watching) Started(run *resultsdb.Run, sp *spec.Spec) {
	w.SessionReporter.Started(run, sp)
	if w.store != nil {
		live := report.NewLiveRun(w.store, run.ID) // one read a second for every view
		for _, t := range w.to {
			t.Watch(live)
		}
	}
}

func (w *watching) Done(stage Stage, o *Outcome) {
	switch stage {
	case StageDeploy:
		w.store = o.Store
	case StageReport:
		for _, t := range w.to {
			t.Finish(o.Report, o.ReportErr)
		}
	}
	w.SessionReporter.Done(stage, o)
}
