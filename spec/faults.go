package spec

import (
	"fmt"
	"time"
)

// FaultAction is what a scheduled fault does (docs/spec.md, "Faults").
type FaultAction string

// The fault actions. FaultRestartInstance goes through the Cloud Controller's API and
// works on any Cloud Foundry; the others need the local foundation's chaos API (its API
// root's cfbench_chaos link), which a run checks for before it starts.
const (
	// FaultRestartInstance stops one instance through the CC API (DELETE
	// /v3/processes/:guid/instances/:index); Diego starts it again.
	FaultRestartInstance FaultAction = "restart-instance"
	// FaultCrash makes an instance's process exit, as an app that crashes.
	FaultCrash FaultAction = "crash"
	// FaultOOM kills an instance at its memory limit, reported as CF reports an OOM.
	FaultOOM FaultAction = "oom"
	// FaultEvacuate evacuates a cell: its instances start elsewhere first, then stop.
	FaultEvacuate FaultAction = "evacuate"
	// FaultRestartRouter drains and restarts the router.
	FaultRestartRouter FaultAction = "restart-router"
)

// FaultTarget is the app of a variant a fault hits.
type FaultTarget string

const (
	// FaultApp is the variant's app under test (the default).
	FaultApp FaultTarget = "app"
	// FaultGenerator is the variant's generator app.
	FaultGenerator FaultTarget = "generator"
)

// NeedsChaos says whether a fault needs the local foundation's chaos API: every action
// but restart-instance does.
func (a FaultAction) NeedsChaos() bool { return a != FaultRestartInstance }

// HitsInstance says whether the action hits one instance of an app (App and Index),
// rather than a cell or the router.
func (a FaultAction) HitsInstance() bool {
	return a == FaultRestartInstance || a == FaultCrash || a == FaultOOM
}

// Fault is one fault a ramp schedules: at At into step Step of every leg (every variant,
// every repeat), so that variants are compared under the same disturbance.
type Fault struct {
	// Step is the 0-based ramp step (the spec writes it 1-based, as reports name steps).
	Step int
	// At is the offset into the step, after its warm-up and before its end.
	At     time.Duration
	Action FaultAction
	// App and Index are the instance an instance fault hits (App FaultApp, Index 0 when
	// the spec does not say); unset for evacuate and restart-router.
	App   FaultTarget
	Index int
	// Cell is the cell (the local foundation's cell or isolation segment name) an
	// evacuation empties; "" for the other actions.
	Cell string
	// Field is the fault's place in the spec ("ramp.faults[0]"), for Errorf.
	Field string
}

// maxFaults bounds ramp.faults.
const maxFaults = 64

// faults decodes ramp.faults; the rules that need the rest of the spec are faultRules.
func (d *decoder) faults(dst *[]Fault) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		switch {
		case !ok:
			return
		case len(items) > maxFaults:
			d.errorf(v, "lists %d faults, at most %d are allowed", len(items), maxFaults)
			return
		}
		for _, it := range items {
			f := Fault{App: FaultApp, Field: it.path}
			step, before := 0, len(d.errs)
			got, ok := d.object(it,
				required("step", d.integer(&step, 1, maxSteps)),
				required("at", d.duration(&f.At, 0)),
				required("action", enum(d, &f.Action, FaultRestartInstance, FaultCrash, FaultOOM, FaultEvacuate, FaultRestartRouter)),
				optional("app", enum(d, &f.App, FaultApp, FaultGenerator)),
				optional("index", d.integer(&f.Index, 0, maxInstances-1)),
				optional("cell", d.str(&f.Cell)),
			)
			if !ok {
				continue
			}
			f.Step = step - 1
			if f.Action == "" {
				continue // the action did not decode: nothing to judge
			}
			if f.Action == FaultEvacuate {
				d.requiredWith(got, it.path, "action", "cell", "action evacuate (the cell to evacuate)")
			} else {
				d.onlyWith(got, false, "action evacuate", "cell")
			}
			if !f.Action.HitsInstance() {
				d.onlyWith(got, false, "actions restart-instance, crash and oom (which hit one instance)", "app", "index")
				f.App, f.Index = "", 0
			}
			if len(d.errs) == before {
				// A fault with problems of its own is not judged against the rest.
				*dst = append(*dst, f)
			}
		}
	}
}

// faultRules are the rules between the faults and the rest of the spec: a fault's step
// is one of the ramp's, its offset after the warm-up (the pre-fault level is measured
// between the warm-up and the fault) and before the step's end, the instance it hits one
// the step has where the spec says how many, and an instance fault of the app under test
// needs a pushed app.
func faultRules(s *Spec) Errors {
	var errs Errors
	r := &s.Ramp
	levels := s.Levels()
	if len(levels) == 0 {
		return nil // the ramp did not decode: nothing to judge
	}
	for _, f := range r.Faults {
		if f.Step >= len(levels) {
			errs = append(errs, s.Errorf(f.Field+".step", "must be one of the ramp's steps, 1 to %d, got %d", len(levels), f.Step+1))
			continue
		}
		if r.Hold > 0 && f.At >= r.Hold {
			errs = append(errs, s.Errorf(f.Field+".at", "must be before the step's end (hold %s), got %s", r.Hold, f.At))
		} else if f.At <= r.Warmup {
			errs = append(errs, s.Errorf(f.Field+".at", "must be after the step's warm-up (%s): the level the report compares the fault with is measured between the warm-up and the fault; got %s", r.Warmup, f.At))
		}
		if !f.Action.HitsInstance() {
			continue
		}
		level := levels[f.Step]
		switch f.App {
		case FaultGenerator:
			if f.Index >= level.Generators {
				errs = append(errs, s.Errorf(f.Field+".index", "must be an instance step %d has: it runs %d generator instance(s) (indexes 0 to %d), got %d", f.Step+1, level.Generators, level.Generators-1, f.Index))
			}
		default:
			for i := range s.Variants {
				v := &s.Variants[i]
				if i > 0 && s.Variants[i-1].Field == v.Field {
					continue // the cells of a matrix share their problems
				}
				n := v.Instances
				if level.AppInstances > 0 {
					n = level.AppInstances
				}
				switch {
				case v.URL != "":
					errs = append(errs, s.Errorf(f.Field+".action", "%s hits an instance of the app under test, but variant %s has a url (a running target this run did not push): give it a manifest, or hit its generator (app: generator)", f.Action, v.Name))
				case n > 0 && f.Index >= n:
					errs = append(errs, s.Errorf(f.Field+".index", "must be an instance of variant %s's app in step %d: it runs %d instance(s) (indexes 0 to %d), got %d", v.Listed(), f.Step+1, n, n-1, f.Index))
				}
			}
		}
	}
	return errs
}

// FaultsIn are the faults scheduled in step idx (0-based), in the order of their
// offsets.
func (r *Ramp) FaultsIn(idx int) []Fault {
	var out []Fault
	for _, f := range r.Faults {
		if f.Step == idx {
			out = append(out, f)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].At < out[j-1].At; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Describe says what f does, for progress lines and reports: "crash of instance 1 of
// the app under test, 10s into step 2".
func (f Fault) Describe() string {
	what := string(f.Action)
	switch {
	case f.Action.HitsInstance() && f.App == FaultGenerator:
		what = fmt.Sprintf("%s of generator instance %d", f.Action, f.Index)
	case f.Action.HitsInstance():
		what = fmt.Sprintf("%s of instance %d of the app under test", f.Action, f.Index)
	case f.Action == FaultEvacuate:
		what = fmt.Sprintf("evacuation of cell %s", f.Cell)
	}
	return fmt.Sprintf("%s, %s into step %d", what, f.At, f.Step+1)
}
