package engine

import (
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Reporter receives what a user watches while a run goes on. The engine calls it from
// one goroutine at a time; a Reporter must not block for long (it writes a line).
type Reporter interface {
	// Started reports the run's creation, before any load.
	Started(run *resultsdb.Run, sp *spec.Spec)
	// Note is a line about what the engine does now (pushing, scaling, waiting).
	Note(msg string)
	// Step reports a finished step.
	Step(StepReport)
	// Finding reports a check that tripped.
	Finding(variant string, step int, f Finding)
}

// StepReport is what a finished step looked like.
type StepReport struct {
	resultsdb.StepSummary
	// Steps is the number of steps of the variant's ramp; Left the time the remaining
	// steps of the run will take at least.
	Steps int
	Left  time.Duration
	// Stop is the stop condition that ends the variant's ramp here, or "".
	Stop string
}

type discardReporter struct{}

func (discardReporter) Started(*resultsdb.Run, *spec.Spec) {}
func (discardReporter) Note(string)                        {}
func (discardReporter) Step(StepReport)                    {}
func (discardReporter) Finding(string, int, Finding)       {}
func (discardReporter) Done(Stage, *Outcome)               {}

var _ SessionReporter = discardReporter{}
