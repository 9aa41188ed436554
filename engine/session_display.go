package engine

import (
	"log/slog"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// RunStarted is a run as it starts, as a command shows it.
type RunStarted struct {
	ID   string
	Spec *spec.Spec
	// Steps is the number of steps of each variant's ramp.
	Steps int
	// ExportDir is where its CSV files and report go: the spec's export.dir/RUN_ID.
	ExportDir string
}

// Display is what a command shows of a session, in the engine's terms: a
// SessionReporter that is told the run's start as a RunStarted. Its methods are called
// as a SessionReporter's are.
type Display interface {
	Started(RunStarted)
	Note(msg string)
	Step(StepReport)
	Finding(variant string, step int, f Finding)
	Done(Stage, *Outcome)
}

// Displaying is the SessionReporter that shows a session on d.
func Displaying(d Display) SessionReporter { return displaying{d} }

type displaying struct{ Display }

func (d displaying) Started(run *resultsdb.Run, sp *spec.Spec) {
	d.Display.Started(RunStarted{ID: run.ID, Spec: sp, Steps: len(sp.Levels()), ExportDir: filepath.Join(sp.Export.Dir, run.ID)})
}

// Remembering is r, remembering the run in the state dir stateDir from the moment the
// run is created, so that status and export find it while it runs: rec says its name,
// spec file and where its results go (DB); its id and start are set then, and on Cloud
// Foundry its Access once it is deployed. A record that cannot be written is logged.
func Remembering(r SessionReporter, stateDir string, rec RunRecord, log *slog.Logger) SessionReporter {
	return &remembering{SessionReporter: r, dir: stateDir, rec: rec, log: log}
}

type remembering struct {
	SessionReporter
	dir string
	rec RunRecord
	log *slog.Logger
}

func (r *remembering) Started(run *resultsdb.Run, sp *spec.Spec) {
	r.SessionReporter.Started(run, sp)
	r.rec.ID, r.rec.Started = run.ID, run.Epoch
	if err := SaveRunRecord(r.dir, r.rec); err != nil {
		r.log.Warn("status and export will need the database given again", "err", err)
	}
}

func (r *remembering) Done(stage Stage, o *Outcome) {
	if stage == StageDeploy {
		r.rec.Access = o.Access
	}
	r.SessionReporter.Done(stage, o)
}
