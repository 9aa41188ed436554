package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Fault is a fault the spec injected (ramp.faults) and what it cost: how long until the
// instance it hit ran again, how long until the step's p99 was back within its
// pre-fault level (resultsdb.FaultRecovery.Back has the rule), the requests that
// failed after it by class, and the p99 before it against the p99 from it until back.
type Fault struct {
	Variant string    `json:"variant"`
	Step    int       `json:"step"`
	At      time.Time `json:"at"`
	// OffsetS is when it was applied, in seconds from the step's start.
	OffsetS float64 `json:"offset_s"`
	Action  string  `json:"action"`
	// What it hit, in words: "instance 1 of stub-fast", "cell cell-1", "the router".
	What      string   `json:"what"`
	Instances []string `json:"instances,omitempty"`
	// Error says why it was not applied; the figures below are then empty.
	Error string `json:"error,omitempty"`
	// RunningAgainS is how long after it the instances it hit ran again; nil when it
	// hit none (the router) or they did not within the step (NotRunningAgain).
	RunningAgainS   *float64 `json:"running_again_s,omitempty"`
	NotRunningAgain bool     `json:"not_running_again,omitempty"`
	// Recovery is what resultsdb.FaultRecovery.Back found: back, undisturbed,
	// not_back or no_baseline; BackS how long after the fault the p99 was back (back).
	Recovery string   `json:"recovery"`
	BackS    *float64 `json:"back_s,omitempty"`
	// DisturbedS counts the seconds after it that were not within the pre-fault level.
	DisturbedS int `json:"disturbed_s"`
	// P99BeforeUS is the pre-fault level (the step's p99 from its warm-up's end to the
	// fault, or to its first fault), P99LimitUS the most a second's p99 may have to be within it, P99DuringUS
	// the p99 from the fault until back (to the step's end when not back).
	P99BeforeUS int64 `json:"p99_before_us"`
	P99LimitUS  int64 `json:"p99_limit_us"`
	P99DuringUS int64 `json:"p99_during_us"`
	// RequestsAfter and FailedAfter count the requests from the fault to the step's
	// end (or its next fault), and those that failed; FailedByClass splits them as a step's errors.
	RequestsAfter int64            `json:"requests_after"`
	FailedAfter   int64            `json:"failed_after"`
	FailedByClass map[string]int64 `json:"failed_by_class,omitempty"`
	// PerSecond is each second after the fault: its p99 and failed requests.
	PerSecond []FaultSecond `json:"per_second,omitempty"`
}

// FaultSecond is one second after a fault.
type FaultSecond struct {
	Requests int64 `json:"requests"`
	Failed   int64 `json:"failed"`
	P99US    int64 `json:"p99_us"`
	Good     bool  `json:"good"`
}

// faults turns the run's injected faults into the report's, and marks their steps as
// disturbed.
func (b *q) faults(r *Run) {
	if len(b.rows.Faults) == 0 {
		return
	}
	vs := r.Variants
	out := make([]Fault, 0, len(b.rows.Faults))
	for _, rf := range b.rows.Faults {
		f := Fault{Variant: rf.Variant, Step: rf.Idx + 1, At: rf.At.UTC(), Action: rf.Action, Instances: rf.Instances, Error: rf.Error}
		var app string
		for _, rv := range b.rows.Variants {
			if rv.Name == rf.Variant {
				app = rv.App
				if rf.App == "generator" {
					app = rv.GeneratorApp
				}
			}
		}
		f.What = faultWhat(rf, app)
		for _, st := range b.rows.Steps {
			if st.Variant == rf.Variant && st.Idx == rf.Idx {
				f.OffsetS = rf.At.Sub(b.rows.Run.Epoch).Seconds() - st.StartS
			}
		}
		hitsInstance := rf.Action == "restart-instance" || rf.Action == "crash" || rf.Action == "oom" || rf.Action == "evacuate"
		switch {
		case rf.RunningAgain != nil:
			s := rf.RunningAgain.Seconds()
			f.RunningAgainS = &s
		case hitsInstance && rf.Error == "":
			f.NotRunningAgain = true
		}
		if rf.Error == "" {
			rec := rf.Recovery
			back, state := rec.Back()
			f.Recovery = string(state)
			if state == resultsdb.RecoveryBack {
				s := back.Seconds()
				f.BackS = &s
			}
			f.DisturbedS = rec.Disturbed()
			f.P99BeforeUS, f.P99LimitUS, f.P99DuringUS = rec.Before.P99.Microseconds(), rec.Limit().Microseconds(), rec.During.P99.Microseconds()
			f.RequestsAfter, f.FailedAfter = rec.After.Count, rec.After.Errors
			if len(rec.ErrorsByClass) > 0 {
				f.FailedByClass = rec.ErrorsByClass
			}
			for i, s := range rec.Seconds {
				f.PerSecond = append(f.PerSecond, FaultSecond{Requests: s.Count, Failed: s.Errors, P99US: s.P99.Microseconds(), Good: rec.Good(i)})
			}
			if v := variantNamed(vs, f.Variant); v != nil {
				if j := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == f.Step }); j >= 0 {
					v.Steps[j].Disturb(Disturbance{Cause: "fault:" + f.Action, Text: "a " + f.Action + " of " + f.What + " was injected"})
				}
			}
		}
		out = append(out, f)
	}
	r.Faults, r.FaultRule = out, FaultRule
}

// faultWhat says what a fault hit: "instance 1 of stub-fast", "cell cell-1", "the
// router".
func faultWhat(rf resultsdb.Fault, app string) string {
	switch rf.Action {
	case "restart-router":
		return "the router"
	case "evacuate":
		return "cell " + rf.Cell
	}
	if app == "" {
		app = "the app under test"
		if rf.App == "generator" {
			app = "the generators"
		}
	}
	return fmt.Sprintf("instance %d of %s", rf.Index, app)
}

// Lines are the fault's lines in the text report: what and when, then the recovery,
// then the latency and the failed requests.
func (f *Fault) Lines() []string {
	head := fmt.Sprintf("%s step %d, %.1f s in: %s of %s", f.Variant, f.Step, f.OffsetS, f.Action, f.What)
	if len(f.Instances) > 0 {
		head += " (hit " + strings.Join(f.Instances, ", ") + ")"
	}
	if f.Error != "" {
		return []string{head, "not applied: " + f.Error}
	}
	var rec []string
	switch {
	case f.RunningAgainS != nil:
		rec = append(rec, fmt.Sprintf("running again after %.1f s", *f.RunningAgainS))
	case f.NotRunningAgain:
		rec = append(rec, "not running again within the step")
	}
	switch resultsdb.RecoveryState(f.Recovery) {
	case resultsdb.RecoveryBack:
		rec = append(rec, fmt.Sprintf("p99 back within the pre-fault level after %.0f s (%d of the %d s after the fault outside it)", *f.BackS, f.DisturbedS, len(f.PerSecond)))
	case resultsdb.RecoveryUndisturbed:
		rec = append(rec, "p99 never left the pre-fault level")
	case resultsdb.RecoveryNotBack:
		first := slices.IndexFunc(f.PerSecond, func(s FaultSecond) bool { return !s.Good })
		rec = append(rec, fmt.Sprintf("p99 not recovered within the step: %d of the %d s after the fault were outside the pre-fault level, the first %d s after it, and no %d s window after that was within it",
			f.DisturbedS, len(f.PerSecond), first, resultsdb.RecoveryWindow))
	case resultsdb.RecoveryNoBaseline:
		rec = append(rec, "no requests before the fault to compare with")
	}
	lat := fmt.Sprintf("p99 %s ms before, %s ms from the fault until back", ms(float64(f.P99BeforeUS)), ms(float64(f.P99DuringUS)))
	if f.P99BeforeUS > 0 {
		lat += fmt.Sprintf(" (×%.1f)", float64(f.P99DuringUS)/float64(f.P99BeforeUS))
	}
	failed := fmt.Sprintf("%s of %s requests after it failed", Thousands(float64(f.FailedAfter)), Thousands(float64(f.RequestsAfter)))
	if f.RequestsAfter > 0 && f.FailedAfter > 0 {
		failed += fmt.Sprintf(" (%s%%)", pct(float64(f.FailedAfter)/float64(f.RequestsAfter)))
	}
	if len(f.FailedByClass) > 0 {
		classes := slices.Sorted(maps.Keys(f.FailedByClass))
		parts := make([]string, len(classes))
		for i, c := range classes {
			parts[i] = fmt.Sprintf("%s %s", c, Thousands(float64(f.FailedByClass[c])))
		}
		failed += ": " + strings.Join(parts, ", ")
	}
	return []string{head, strings.Join(rec, "; "), lat + "; " + failed}
}

// FaultRule says how "back" is judged, once under the faults.
var FaultRule = fmt.Sprintf("back: at the start of the first %d s window after the first disturbed second whose requests have a p99 at most %.1f× the pre-fault p99 or %s above it (whichever is higher) and at most %.0f%% more failed requests than before the fault; a second is disturbed by the same rule over its own requests",
	resultsdb.RecoveryWindow, resultsdb.RecoveryP99Factor, resultsdb.RecoveryP99Floor, 100*resultsdb.RecoveryErrorShare)

// faults writes the section of the injected faults; nothing for a run without.
func (t *textWriter) faults(r *Run) {
	if len(r.Faults) == 0 {
		return
	}
	t.printf("\n5a. Faults injected (ramp.faults)\n")
	for i := range r.Faults {
		for j, l := range r.Faults[i].Lines() {
			indent := "  "
			if j > 0 {
				indent = "      "
			}
			t.printf("%s%s\n", indent, l)
		}
	}
	t.printf("  %s\n", FaultRule)
}
