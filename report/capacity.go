package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// latencyOf is the step's figure for the statistic, in µs.
func latencyOf(s *Step, stat spec.LatencyStatistic) float64 {
	switch stat {
	case spec.StatP50:
		return float64(s.P50US)
	case spec.StatP90:
		return float64(s.P90US)
	case spec.StatP99:
		return float64(s.P99US)
	case spec.StatP999:
		return float64(s.P999US)
	}
	return s.MeanUS
}

// bound is one limit of an SLO as judged on a step: its value, the limit, and how to
// say a breach.
type bound struct {
	value, limit float64
	known        bool
	cpu          bool
	say          func() string
}

func bounds(slo *spec.SLO, s *Step) []bound {
	var out []bound
	if slo.MaxLatency > 0 {
		v, l := latencyOf(s, slo.Latency), float64(slo.MaxLatency/time.Microsecond)
		out = append(out, bound{value: v, limit: l, known: s.Count > 0, say: func() string {
			return fmt.Sprintf("%s %s ms > %s ms", slo.Latency, ms(v), ms(l))
		}})
	}
	if slo.MaxErrorRate != nil {
		v, l := s.ErrorRate, *slo.MaxErrorRate
		out = append(out, bound{value: v, limit: l, known: s.Count > 0, say: func() string {
			return fmt.Sprintf("errors %s%% > %s%%", pct(v), pct(l))
		}})
	}
	if slo.MaxAppCPUCores != nil {
		b := bound{limit: *slo.MaxAppCPUCores, cpu: true}
		if s.App != nil && s.App.CPUMeanCores != nil && s.App.CPUPoints > 0 {
			b.value, b.known = *s.App.CPUMeanCores, true
		}
		v, l := b.value, b.limit
		b.say = func() string { return fmt.Sprintf("app CPU %.2f > %g cores per instance", v, l) }
		out = append(out, b)
	}
	return out
}

// capacity marks each step as meeting the SLO or not and returns the capacity: never
// below the throughput of a step that met the SLO. Its Step is the step that met the
// SLO with the most throughput; when the first step to fail after it gained
// throughput, the crossing is interpolated between that failure and the step that met
// the SLO just before it, and counts where it lies above Step's measured figure.
func capacity(slo *spec.SLO, v *Variant, findings []Finding) *Capacity {
	c := &Capacity{Status: "no_data", Text: "no step with figures"}
	if len(v.Steps) == 0 {
		return c
	}
	var unknownCPU, unjudged []int
	first, best := -1, -1 // the first step judged; the step that met the SLO with the most throughput
	for i, s := range v.Steps {
		// A step where no request completed has no figure to judge: it neither met the
		// SLO (a capacity of "≥ 0 req/s") nor broke it. Its MeetsSLO stays nil.
		if s.Count == 0 {
			unjudged = append(unjudged, s.Step)
			continue
		}
		if first < 0 {
			first = i
		}
		ok := true
		for _, b := range bounds(slo, s) {
			if !b.known {
				if b.cpu {
					unknownCPU = append(unknownCPU, s.Step)
				}
				continue
			}
			if b.value > b.limit {
				ok = false
				s.SLOBreaches = append(s.SLOBreaches, b.say())
			}
		}
		s.MeetsSLO = &ok
		if ok && (best < 0 || s.Throughput > v.Steps[best].Throughput) {
			best = i
		}
	}
	if first < 0 {
		c.Text = "no request completed in any step"
		return c
	}
	failed := -1 // the first step after best that failed
	for i := best + 1; i < len(v.Steps); i++ {
		if breaks(v.Steps[i]) {
			failed = i
			break
		}
	}
	if len(unjudged) > 0 {
		c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("no request completed in step(s) %s: not judged", joinInts(unjudged)))
	}
	if len(unknownCPU) > 0 {
		c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("app CPU unknown in step(s) %s: judged there without the CPU bound", joinInts(unknownCPU)))
	}
	unit := " req/s"
	switch {
	case best < 0:
		s := v.Steps[first]
		c.Status, c.FailedStep = "below_first", s.Step
		c.Text = fmt.Sprintf("< %s%s (no step met the SLO; step %d broke it at %s %s)", num(s.Throughput), unit, s.Step, load(s.Load), v.LoadUnit)
		c.LimitedBy = slices.Concat(s.SLOBreaches, c.LimitedBy)
	case failed < 0:
		s := v.Steps[best]
		c.Status, c.Step, c.Load, c.Throughput = "not_crossed", s.Step, s.Load, s.Throughput
		c.Value, c.Basis = s.Throughput, "measured"
		c.Text = fmt.Sprintf("≥ %s%s (step %d, measured, at %s %s; no step after it broke the SLO)", num(s.Throughput), unit, s.Step, load(s.Load), v.LoadUnit)
	default:
		b, f := v.Steps[best], v.Steps[failed]
		p := v.Steps[best] // the last step before the failure that met the SLO, as every judged one from best on did
		for i := failed - 1; i > best; i-- {
			if v.Steps[i].MeetsSLO != nil {
				p = v.Steps[i]
				break
			}
		}
		c.Status, c.Step, c.Load, c.Throughput, c.FailedStep = "crossed", b.Step, b.Load, b.Throughput, f.Step
		c.Value, c.Basis = b.Throughput, "measured"
		c.Text = fmt.Sprintf("%s%s at %s %s (step %d, measured)", num(b.Throughput), unit, load(b.Load), v.LoadUnit, b.Step)
		if x, ok := crossing(slo, p, f); ok && x > b.Throughput {
			c.Crossing, c.CrossingFrom = &x, p.Step
			c.Value, c.Basis = x, "interpolated"
			c.Text = fmt.Sprintf("about %s%s (the SLO crossed between step %d and step %d, interpolated); step %d measured %s%s at %s %s",
				num(x), unit, p.Step, f.Step, b.Step, num(b.Throughput), unit, load(b.Load), v.LoadUnit)
		} else if f.Throughput <= b.Throughput {
			c.Text += fmt.Sprintf("; step %d broke the SLO at %s%s, no more throughput", f.Step, num(f.Throughput), unit)
		}
		c.LimitedBy = slices.Concat([]string{fmt.Sprintf("step %d: ", f.Step) + strings.Join(f.SLOBreaches, ", ")}, c.LimitedBy)
	}
	// Steps that broke the SLO before the best one, or met it again after the failure:
	// the ramp is noisy there.
	if i := slices.IndexFunc(v.Steps[:max(best, 0)], breaks); i >= 0 {
		c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("step %d broke the SLO before step %d met it: the ramp is noisy there", v.Steps[i].Step, c.Step))
	}
	if failed >= 0 {
		if i := slices.IndexFunc(v.Steps[failed+1:], func(s *Step) bool { return s.MeetsSLO != nil && *s.MeetsSLO }); i >= 0 {
			c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("step %d met the SLO again after it was crossed: the ramp is noisy there", v.Steps[failed+1+i].Step))
		}
	}
	// Findings of the steps around the limit: the limit may not be the app's.
	c.Findings = findingsNear(findings, v.Name, c.Step, c.FailedStep)
	for _, i := range c.Findings {
		fd := findings[i]
		c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("finding at step %d: %s: %s", fd.Step, fd.Check, fd.Message))
	}
	restsOnDisturbed(c, v)
	return c
}

// breaks reports whether a judged step broke the SLO.
func breaks(s *Step) bool { return s.MeetsSLO != nil && !*s.MeetsSLO }

// restsOnDisturbed says in c's Text, and lists in c.Disturbed, which of the steps the
// capacity rests on (the step that met the SLO, the step it is interpolated from, the
// step that broke it) were disturbed.
//
// The figure itself stays as the steps measured it; a disturbed step is not left out
// for a clean one. What disturbed it may be the load's own doing (an instance killed
// for memory at the heaviest step is the app's limit, not an accident), and leaving
// that step out could put the capacity above a load where the app failed. So the
// capacity rests where the SLO says, and says on what.
func restsOnDisturbed(c *Capacity, v *Variant) {
	type rest struct {
		step int
		say  string
	}
	var rests []rest
	if c.Step > 0 {
		rests = append(rests, rest{c.Step, "it rests on step %d, during which %s"})
	}
	if c.Basis == "interpolated" && c.CrossingFrom != c.Step {
		rests = append(rests, rest{c.CrossingFrom, "it is interpolated from step %d, during which %s"})
	}
	if c.FailedStep > 0 {
		rests = append(rests, rest{c.FailedStep, "the SLO broke at step %d, during which %s: the break may be that, not the load"})
	}
	for _, r := range rests {
		i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == r.step })
		if i < 0 || !v.Steps[i].Disturbed() || slices.Contains(c.Disturbed, r.step) {
			continue
		}
		c.Disturbed = append(c.Disturbed, r.step)
		said := fmt.Sprintf(r.say, r.step, disturbances(v.Steps[i]))
		c.Text += "; " + said
		c.LimitedBy = append(c.LimitedBy, "disturbed step: "+said)
	}
}

// disturbances says what disturbed s: "instance 0 of stub-fast crashed, and ...".
func disturbances(s *Step) string {
	texts := make([]string, len(s.Disturbances))
	for i, d := range s.Disturbances {
		texts[i] = d.Text
	}
	if len(texts) > 1 {
		return strings.Join(texts[:len(texts)-1], ", ") + " and " + texts[len(texts)-1]
	}
	return strings.Join(texts, "")
}

// instanceVerbs are the instance_* findings (engine/instances.go) and what each says
// happened to the instance.
var instanceVerbs = map[string]string{
	"instance_crashed":   "crashed",
	"instance_oom":       "was killed for memory (OOM)",
	"instance_restarted": "was restarted",
	"instance_moved":     "was moved to another cell",
}

// markDisturbed marks the steps during which an instance of the variant's app under
// test or of its generator app crashed, was killed for memory, restarted or moved (an
// instance_* finding whose figures name the app and its role). Those of the tunnel and
// the relay are findings but disturb no step's figures: the samples wait and are
// stored, none is lost or slowed.
func markDisturbed(r *Run) {
	for i, f := range r.Findings {
		verb, ok := instanceVerbs[f.Check]
		if !ok || f.Step <= 0 {
			continue
		}
		v := variantNamed(r.Variants, f.Variant)
		if v == nil {
			continue
		}
		app, _ := f.Figures["app"].(string)
		role, _ := f.Figures["role"].(string)
		if app == "" || !(role == "app" && app == v.App || role == "generator" && app == v.GeneratorApp) {
			continue
		}
		j := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == f.Step })
		if j < 0 {
			continue
		}
		who := "an instance of " + app
		if idx, ok := f.Figures["index"].(float64); ok && idx >= 0 {
			who = fmt.Sprintf("instance %d of %s", int(idx), app)
		}
		v.Steps[j].Disturb(Disturbance{Cause: f.Check, Text: who + " " + verb, Finding: &i})
	}
}

// crossing is the throughput at which the first of the SLO's bounds to break in f
// reached its limit, linearly between p (which met the SLO) and f; false when f gained
// no throughput over p or no broken bound is known in both.
func crossing(slo *spec.SLO, p, f *Step) (float64, bool) {
	if f.Throughput <= p.Throughput {
		return 0, false
	}
	frac, found := 1.0, false
	pb, fb := bounds(slo, p), bounds(slo, f)
	for i := range fb {
		if !fb[i].known || !pb[i].known || fb[i].value <= fb[i].limit || fb[i].value == pb[i].value {
			continue
		}
		frac, found = min(frac, math.Max(0, (fb[i].limit-pb[i].value)/(fb[i].value-pb[i].value))), true
	}
	return p.Throughput + frac*(f.Throughput-p.Throughput), found
}

// capacityValue is the capacity as one number (Capacity.Value: never below a step
// that met the SLO) and whether it is only a lower bound (the SLO was not crossed).
func capacityValue(c *Capacity) (float64, bool, bool) {
	switch {
	case c == nil:
		return 0, false, false
	case c.Status == "crossed":
		return c.Value, false, true
	case c.Status == "not_crossed":
		return c.Value, true, true
	}
	return 0, false, false
}

// capacityBasis says how a capacity was found, in a few words: "step 2, measured",
// "interpolated between steps 3 and 4", "mean of the repeats".
func capacityBasis(c *Capacity) string {
	switch c.Basis {
	case "measured":
		return fmt.Sprintf("step %d, measured", c.Step)
	case "interpolated":
		return fmt.Sprintf("interpolated between steps %d and %d", c.CrossingFrom, c.FailedStep)
	case "mean":
		return "mean of the repeats"
	}
	return ""
}

// num formats a rate with thousands separators and sensible precision.
func num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case math.Abs(x) >= 100:
		return Thousands(x)
	case math.Abs(x) >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// Thousands formats x rounded to an integer with thousands separators: 103,666.
func Thousands(x float64) string {
	s := strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ms formats microseconds as milliseconds, as Millis does.
func ms(us float64) string {
	return Millis(time.Duration(us * float64(time.Microsecond)))
}

// pct formats a fraction as a percentage without a sign.
func pct(f float64) string {
	p := 100 * f
	switch {
	case p == 0:
		return "0"
	case p < 0.1:
		return strconv.FormatFloat(p, 'f', 3, 64)
	case p < 10:
		return strconv.FormatFloat(p, 'f', 2, 64)
	}
	return strconv.FormatFloat(p, 'f', 1, 64)
}
