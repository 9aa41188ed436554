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

// capacity marks each step as meeting the SLO or not and returns the capacity.
func capacity(slo *spec.SLO, v *Variant, findings []Finding) *Capacity {
	c := &Capacity{Status: "no_data", Text: "no step with figures"}
	if len(v.Steps) == 0 {
		return c
	}
	var unknownCPU []int
	first := -1
	for i, s := range v.Steps {
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
		if !ok && first < 0 {
			first = i
		}
	}
	if len(unknownCPU) > 0 {
		c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("app CPU unknown in step(s) %s: judged there without the CPU bound", joinInts(unknownCPU)))
	}
	unit := " req/s"
	switch {
	case first == 0:
		s := v.Steps[0]
		c.Status, c.FailedStep = "below_first", s.Step
		c.Text = fmt.Sprintf("< %s%s (step 1 already broke the SLO at %s %s)", num(s.Throughput), unit, load(s.Load), v.LoadUnit)
		c.LimitedBy = slices.Concat(s.SLOBreaches, c.LimitedBy)
	case first < 0:
		s := v.Steps[len(v.Steps)-1]
		c.Status, c.Step, c.Load, c.Throughput = "not_crossed", s.Step, s.Load, s.Throughput
		c.Text = fmt.Sprintf("≥ %s%s (the SLO was never crossed; step %d, the highest, at %s %s)", num(s.Throughput), unit, s.Step, load(s.Load), v.LoadUnit)
	default:
		p, f := v.Steps[first-1], v.Steps[first]
		c.Status, c.Step, c.Load, c.Throughput, c.FailedStep = "crossed", p.Step, p.Load, p.Throughput, f.Step
		// The crossing: where the first bound to break reached its limit, linearly
		// between the two steps.
		frac := 1.0
		pb, fb := bounds(slo, p), bounds(slo, f)
		for i := range fb {
			if !fb[i].known || !pb[i].known || fb[i].value <= fb[i].limit || fb[i].value == pb[i].value {
				continue
			}
			frac = min(frac, math.Max(0, (fb[i].limit-pb[i].value)/(fb[i].value-pb[i].value)))
		}
		x := p.Throughput + frac*(f.Throughput-p.Throughput)
		c.Crossing = &x
		c.Text = fmt.Sprintf("%s%s at %s %s (step %d, measured); the SLO is crossed at about %s%s, interpolated towards step %d",
			num(p.Throughput), unit, load(p.Load), v.LoadUnit, p.Step, num(x), unit, f.Step)
		c.LimitedBy = slices.Concat([]string{fmt.Sprintf("step %d: ", f.Step) + strings.Join(f.SLOBreaches, ", ")}, c.LimitedBy)
		for _, s := range v.Steps[first+1:] {
			if *s.MeetsSLO {
				c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("step %d met the SLO again after it was crossed: the ramp is noisy there", s.Step))
				break
			}
		}
	}
	// Findings of the steps around the limit: the limit may not be the app's.
	for _, fd := range findings {
		if fd.Variant != v.Name || fd.Step == 0 {
			continue
		}
		near := fd.Step == c.Step || fd.Step == c.FailedStep
		if c.Status == "not_crossed" {
			near = fd.Step == c.Step
		}
		if near {
			c.LimitedBy = append(c.LimitedBy, fmt.Sprintf("finding at step %d: %s: %s", fd.Step, fd.Check, fd.Message))
		}
	}
	return c
}

// capacityValue is the capacity as one number (the crossing when crossed, else the
// measured step) and whether it is only a lower bound.
func capacityValue(c *Capacity) (float64, bool, bool) {
	switch {
	case c == nil:
		return 0, false, false
	case c.Status == "crossed" && c.Crossing != nil:
		return *c.Crossing, false, true
	case c.Status == "not_crossed":
		return c.Throughput, true, true
	}
	return 0, false, false
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
