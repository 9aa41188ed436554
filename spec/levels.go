package spec

import (
	"fmt"
	"math"
	"strings"
)

// LevelKind is what the steps of a ramp vary. A ramp has exactly one kind; a spec names
// it by the key that lists its levels (docs/spec.md, "Load levels").
type LevelKind string

// The level kinds.
const (
	// LevelGenerators steps generator instances: start, start+step, … max.
	LevelGenerators LevelKind = "generators"
	// LevelRates steps the open loop's offered rate in all (req/s), spread over a fixed
	// number of generator instances.
	LevelRates LevelKind = "rates"
	// LevelUsers steps the closed loop's users in all, spread evenly over a fixed number
	// of generator instances.
	LevelUsers LevelKind = "users"
	// LevelAppInstances steps the app under test's instances, with the generators scaled
	// alike so that the load per app instance stays the same.
	LevelAppInstances LevelKind = "app_instances"
)

// maxRate bounds one level of a rates ramp (req/s in all).
const maxRate = 10_000_000

// Level is one step of a ramp as the engine runs it.
type Level struct {
	// Generators is how many generator instances the step asks for.
	Generators int
	// Users is each generator instance's users (closed and count models; 0 for open).
	Users int
	// Rate is the open loop's rate in all (req/s), split over the live generator
	// instances; 0 leaves the rate to the workload (per instance, or in all with
	// rate_per: total).
	Rate float64
	// AppInstances is the app under test's instance count in the step; 0 leaves the
	// apps as pushed.
	AppInstances int
}

// Kind is what the ramp's steps vary.
func (r *Ramp) Kind() LevelKind {
	switch {
	case len(r.Rates) > 0:
		return LevelRates
	case len(r.Users) > 0:
		return LevelUsers
	case len(r.AppInstances) > 0:
		return LevelAppInstances
	}
	return LevelGenerators
}

// Levels are the steps of s's ramp, in order. A validated spec has 1 to 255.
func (s *Spec) Levels() []Level {
	r, w := &s.Ramp, &s.Workload
	gens := max(r.Generators, 1)
	var out []Level
	switch r.Kind() {
	case LevelRates:
		for _, rate := range r.Rates {
			out = append(out, Level{Generators: gens, Rate: rate})
		}
	case LevelUsers:
		for _, u := range r.Users {
			out = append(out, Level{Generators: gens, Users: u / gens})
		}
	case LevelAppInstances:
		for _, n := range r.AppInstances {
			out = append(out, Level{Generators: n * gens, Users: w.Users, AppInstances: n})
		}
	default:
		for _, n := range r.Steps() {
			out = append(out, Level{Generators: n, Users: w.Users})
		}
	}
	return out
}

// PeakGenerators is the most generator instances a step of the ramp asks for.
func (s *Spec) PeakGenerators() int {
	n := 0
	for _, l := range s.Levels() {
		n = max(n, l.Generators)
	}
	return n
}

// Describe says what the ramp's levels are, for plans and progress lines: "rates 350,
// 700, 1,000 req/s in all over 2 generator instances".
func (r *Ramp) Describe() string {
	gens := max(r.Generators, 1)
	switch r.Kind() {
	case LevelRates:
		return fmt.Sprintf("rates %s req/s in all over %d generator instance(s)", joinNumbers(r.Rates), gens)
	case LevelUsers:
		return fmt.Sprintf("users %s in all over %d generator instance(s)", joinNumbers(r.Users), gens)
	case LevelAppInstances:
		return fmt.Sprintf("app instances %s, %d generator instance(s) per app instance", joinNumbers(r.AppInstances), gens)
	}
	steps := r.Steps()
	if len(steps) == 0 {
		return "no steps"
	}
	return fmt.Sprintf("generator instances %d to %d", steps[0], steps[len(steps)-1])
}

func joinNumbers[T int | float64](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// levelKeys are the ramp's keys that list levels, one of which a ramp has.
var levelKeys = []string{"max", "rates", "users", "app_instances"}

// rampLevels checks that the ramp names exactly one kind of level and that the level
// lists are consistent with generators; the rest of the ramp was decoded by ramp.
func (d *decoder) rampLevels(v value, got fieldSet, r *Ramp) {
	var kinds []string
	for _, k := range levelKeys {
		if _, ok := got[k]; ok {
			kinds = append(kinds, k)
		}
	}
	switch {
	case len(kinds) == 0:
		d.errorf(v, "needs its levels: max (generator instances from start to max), rates (req/s in all), users (in all) or app_instances")
		return
	case len(kinds) > 1:
		d.errorf(got[kinds[1]], "give one kind of level, not both %s and %s: a ramp varies one thing at a time", kinds[0], kinds[1])
		return
	}
	byMax := kinds[0] == "max"
	d.onlyWith(got, byMax, "max (the generator instances from start to max)", "start", "step")
	d.onlyWith(got, !byMax, "rates, users or app_instances (with max, start/step/max are the generator instances)", "generators")
	gens := max(r.Generators, 1)
	if u, ok := got["users"]; ok {
		for i, n := range r.Users {
			at := value{pos: u.node.Content[i], path: fmt.Sprintf("%s[%d]", u.path, i)}
			switch {
			case n%gens != 0:
				d.errorf(at, "must be a multiple of generators (%d): the users are split evenly over the generator instances; got %d", gens, n)
			case n/gens > maxUsers:
				d.errorf(at, "makes %d users per generator instance, at most %d are allowed: raise generators", n/gens, maxUsers)
			}
		}
	}
	if a, ok := got["app_instances"]; ok && gens*maxOf(r.AppInstances) > maxInstances {
		d.errorf(a, "asks for %d generator instances at its peak (%d per app instance), at most %d are allowed", gens*maxOf(r.AppInstances), gens, maxInstances)
	}
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// levelList decodes a list of 1 to maxSteps levels, each decoded by item.
func (d *decoder) levelList(v value, item func(value)) {
	items, ok := d.list(v)
	switch {
	case !ok:
		return
	case len(items) == 0:
		d.errorf(v, "must list at least one level")
		return
	case len(items) > maxSteps:
		d.errorf(v, "lists %d levels, at most %d are allowed", len(items), maxSteps)
		return
	}
	for _, it := range items {
		item(it)
	}
}

func (d *decoder) rates(dst *[]float64) func(value) {
	return func(v value) {
		d.levelList(v, func(it value) {
			var x float64
			d.number(&x, func(x float64) bool { return x > 0 && x <= maxRate }, fmt.Sprintf("a rate in req/s greater than 0 and at most %d", maxRate))(it)
			*dst = append(*dst, x)
		})
	}
}

func (d *decoder) ints(dst *[]int, hi int) func(value) {
	return func(v value) {
		d.levelList(v, func(it value) {
			var n int
			d.integer(&n, 1, hi)(it)
			*dst = append(*dst, n)
		})
	}
}

// levelRules are the rules between a ramp's levels and the rest of the spec, checked
// once the whole spec is decoded; has says whether the spec file has a field path.
func levelRules(s *Spec, has func(string) bool) Errors {
	var errs Errors
	r, w := &s.Ramp, &s.Workload
	if w.Model == "" {
		return nil // the workload did not decode: nothing to judge
	}
	notWith := func(field, why string) {
		if has("workload." + field) {
			errs = append(errs, s.Errorf("workload."+field, "not allowed with ramp.%s: %s", r.Kind(), why))
		}
	}
	if w.Model == ModelOpen && r.Kind() != LevelRates && !has("workload.rate") {
		e := s.Errorf("workload.model", "is required with model open (or give the ramp rates)")
		e.Path = "workload.rate"
		errs = append(errs, e)
	}
	switch r.Kind() {
	case LevelRates:
		if w.Model != ModelOpen {
			errs = append(errs, s.Errorf("ramp.rates", "needs workload model open (an open loop offers these rates whatever the answers), got %s", w.Model))
		}
		notWith("rate", "each step's rate in all is the ramp's")
		notWith("rate_per", "each step's rate is in all, spread over the generator instances")
		w.Rate, w.RatePer = 0, RatePerTotal
	case LevelUsers:
		if w.Model != ModelClosed {
			errs = append(errs, s.Errorf("ramp.users", "needs workload model closed (users that each wait for their answer), got %s", w.Model))
		}
		notWith("users", "each step's users in all are the ramp's")
		// The most users one instance runs: its connection pool is sized by it.
		w.Users = maxOf(r.Users) / max(r.Generators, 1)
	case LevelAppInstances:
		if w.Model == ModelOpen && w.RatePer == RatePerTotal {
			errs = append(errs, s.Errorf("workload.rate_per", "must be instance with ramp.app_instances: the load per app instance stays the same only when every generator instance adds its rate"))
		}
		for i := range s.Variants {
			v := &s.Variants[i]
			first := i == 0 || s.Variants[i-1].Field != v.Field // the cells of a matrix share its problems
			switch {
			case v.URL != "":
				errs = append(errs, s.Errorf("ramp.app_instances", "scales the apps under test, but variant %s has a url (a running target this run cannot scale): give it a manifest, or use another ramp", v.Name))
			case has(v.Field + ".matrix.instances"):
				if first {
					errs = append(errs, s.Errorf(v.Field+".matrix.instances", "not allowed with ramp.app_instances: the ramp sets the app's instances step by step"))
				}
			default:
				v.Instances = r.AppInstances[0] // pushed as the first step runs it
			}
		}
	}
	return errs
}

// offeredTotal is a level's offered rate in all for an open workload, n generator
// instances live; NaN for a closed loop.
func (l Level) offeredTotal(w *Workload, n int) float64 {
	switch {
	case w.Model != ModelOpen:
		return math.NaN()
	case l.Rate > 0:
		return l.Rate
	case w.RatePer == RatePerTotal:
		return w.Rate
	}
	return w.Rate * float64(n)
}

// Offered is the rate in all a level offers with its planned generator instances (open
// loop), and false for a closed loop.
func (s *Spec) Offered(l Level) (float64, bool) {
	x := l.offeredTotal(&s.Workload, l.Generators)
	return x, !math.IsNaN(x)
}
