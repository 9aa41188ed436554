package command

import (
	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// watching shows a session's run as it goes (on its dashboard, in its metrics): from
// the run's start, and its report when the session wrote it.
type watching struct {
	engine.SessionReporter
	to    []watcher
	store *resultsdb.Store // the results database, once known
}

// watcher is what shows a run as it goes: dashboard.Server, metrics.Output.
type watcher interface {
	Watch(run *report.LiveRun)
	Finish(rep *report.Report, reportErr error)
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

func (w *watching) Done(stage engine.Stage, o *engine.Outcome) {
	switch stage {
	case engine.StageDeploy:
		w.store = o.Store
	case engine.StageReport:
		for _, t := range w.to {
			t.Finish(o.Report, o.ReportErr)
		}
	}
	w.SessionReporter.Done(stage, o)
}
