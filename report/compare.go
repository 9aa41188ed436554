package report

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

func ratio(a, b float64) *float64 {
	if a == 0 || b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return nil
	}
	r := a / b
	return &r
}

func maxThroughput(v *Variant) float64 {
	var m float64
	for _, s := range v.Steps {
		m = max(m, s.Throughput)
	}
	return m
}

func cpuPerRequest(s *Step) float64 {
	if s.App == nil || s.App.CPUTotalCores == nil || s.Throughput == 0 {
		return 0
	}
	return *s.App.CPUTotalCores / s.Throughput
}

// capacityRatio is a capacity x over the reference's, and how sure it is when either is a
// lower bound (an SLO not crossed): x ≥ its figure makes the ratio at least x/ref, a
// reference ≥ its figure makes it at most; two lower bounds make it unknown (nil).
func capacityRatio(x float64, lower bool, ref float64, refLower, self bool) (*float64, string) {
	switch {
	case self:
		return ratio(x, ref), ""
	case lower && refLower:
		return nil, ""
	case lower:
		return ratio(x, ref), "at_least"
	case refLower:
		return ratio(x, ref), "at_most"
	}
	return ratio(x, ref), ""
}

// boundedRatio writes a ratio with its bound: "≥ 2.10×", "≤ 0.50×", "1.30×"; "–" for none.
func boundedRatio(r *float64, bound string) string {
	if r == nil {
		return "–"
	}
	return map[string]string{"at_least": "≥ ", "at_most": "≤ "}[bound] + fmt.Sprintf("%.2f×", *r)
}

// compareVariants sets every variant of a run against the first.
func compareVariants(vs []*Variant) *Comparison {
	if len(vs) < 2 {
		return nil
	}
	ref := vs[0]
	c := &Comparison{Reference: ref.Name}
	refCap, refLower, refOK := capacityValue(ref.Capacity)
	for _, v := range vs {
		r := VariantRatios{Variant: v.Name, MaxThroughput: maxThroughput(v), Steps: []StepRatios{}}
		r.ThroughputRatio = ratio(r.MaxThroughput, maxThroughput(ref))
		if x, lower, ok := capacityValue(v.Capacity); ok {
			r.Capacity, r.CapacityBasis = &x, capacityBasis(v.Capacity)
			if lower {
				r.CapacityBound = "at_least"
			}
			if refOK {
				r.CapacityRatio, r.CapacityRatioBound = capacityRatio(x, lower, refCap, refLower, v == ref)
			}
		}
		for _, s := range v.Steps {
			j := slices.IndexFunc(ref.Steps, func(o *Step) bool { return o.Step == s.Step })
			if j < 0 {
				continue
			}
			o := ref.Steps[j]
			r.Steps = append(r.Steps, StepRatios{Step: s.Step, ThroughputRatio: ratio(s.Throughput, o.Throughput),
				MeanRatio: ratio(s.MeanUS, o.MeanUS), P99Ratio: ratio(float64(s.P99US), float64(o.P99US)),
				CPUPerRequestRatio: ratio(cpuPerRequest(s), cpuPerRequest(o))})
		}
		c.Variants = append(c.Variants, r)
	}
	return c
}

// latencyMetrics are the per-step figures a change and a threshold may name.
var latencyMetrics = []string{"mean", "p50", "p90", "p99", "p999"}

// Metrics are the figures --fail-on may name.
var Metrics = append([]string{"capacity", "throughput"}, latencyMetrics...)

func stepFigure(s *Step, metric string) float64 {
	switch metric {
	case "mean":
		return s.MeanUS
	case "p50":
		return float64(s.P50US)
	case "p90":
		return float64(s.P90US)
	case "p99":
		return float64(s.P99US)
	case "p999":
		return float64(s.P999US)
	}
	return 0
}

func change(base, val float64) *float64 {
	if base == 0 {
		return nil
	}
	c := (val - base) / base
	return &c
}

// changes compares each run's variants with the baseline's of the same name: the
// capacity, the highest throughput, and per latency figure the worst change over the
// steps both have (latency is worse when higher).
func changes(base *Run, runs []*Run) []Change {
	var out []Change
	for _, r := range runs {
		if r.ID == base.ID {
			continue
		}
		for _, v := range r.Variants {
			bv := variantNamed(base.Variants, v.Name)
			if bv == nil {
				continue
			}
			if x, xb, ok := capacityValue(v.Capacity); ok {
				if y, yb, ok := capacityValue(bv.Capacity); ok {
					out = append(out, Change{Run: r.ID, Variant: v.Name, Metric: "capacity", Baseline: y, Value: x, Change: change(y, x), Unit: "req/s", Bound: xb || yb,
						BaselineBasis: capacityBasis(bv.Capacity), Basis: capacityBasis(v.Capacity)})
				}
			}
			if len(v.Steps) > 0 && len(bv.Steps) > 0 {
				x, y := maxThroughput(v), maxThroughput(bv)
				out = append(out, Change{Run: r.ID, Variant: v.Name, Metric: "throughput", Baseline: y, Value: x, Change: change(y, x), Unit: "req/s"})
			}
			for _, m := range latencyMetrics {
				var worst *Change
				for _, s := range v.Steps {
					j := slices.IndexFunc(bv.Steps, func(o *Step) bool { return o.Step == s.Step })
					if j < 0 || s.Count == 0 || bv.Steps[j].Count == 0 {
						continue
					}
					y, x := stepFigure(bv.Steps[j], m), stepFigure(s, m)
					c := Change{Run: r.ID, Variant: v.Name, Metric: m, Step: s.Step, Baseline: y, Value: x, Change: change(y, x), Unit: "us"}
					if worst == nil || c.Change != nil && (worst.Change == nil || *c.Change > *worst.Change) {
						worst = &c
					}
				}
				if worst != nil {
					out = append(out, *worst)
				}
			}
		}
	}
	return out
}

// spread is the run-to-run spread of each variant's highest throughput and capacity
// over the runs of the same spec name (baseline included), where there are several.
func spread(rep *Report) []Spread {
	all := slices.Clone(rep.Runs)
	if rep.Baseline != nil && !slices.ContainsFunc(all, func(r *Run) bool { return r.ID == rep.Baseline.ID }) {
		all = append(all, rep.Baseline)
	}
	var names []string
	for _, r := range all {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
	}
	var out []Spread
	for _, name := range names {
		var runs []*Run
		for _, r := range all {
			if r.Name == name {
				runs = append(runs, r)
			}
		}
		if len(runs) < 2 {
			continue
		}
		var variants []string
		for _, r := range runs {
			for _, v := range r.Variants {
				if !slices.Contains(variants, v.Name) {
					variants = append(variants, v.Name)
				}
			}
		}
		for _, vn := range variants {
			for _, metric := range []string{"throughput", "capacity"} {
				s := Spread{Name: name, Variant: vn, Metric: metric}
				for _, r := range runs {
					v := variantNamed(r.Variants, vn)
					if v == nil {
						continue
					}
					x, ok := maxThroughput(v), len(v.Steps) > 0
					if metric == "capacity" {
						x, _, ok = capacityValue(v.Capacity)
					}
					if ok {
						s.Runs, s.Values = append(s.Runs, r.ID), append(s.Values, x)
					}
				}
				if len(s.Values) < 2 {
					continue
				}
				s.Min, s.Max = slices.Min(s.Values), slices.Max(s.Values)
				for _, x := range s.Values {
					s.Mean += x / float64(len(s.Values))
				}
				var ss float64
				for _, x := range s.Values {
					ss += (x - s.Mean) * (x - s.Mean)
				}
				if s.Mean != 0 {
					s.CV = math.Sqrt(ss/float64(len(s.Values)-1)) / s.Mean
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// Threshold is one --fail-on bound on a change against the baseline: Metric may not
// change by more than Limit in the direction of Sign (-1: may not fall by more than
// Limit, e.g. capacity=-10%; +1: may not rise by more, e.g. p99=+20%).
type Threshold struct {
	Metric string
	Sign   int
	// Limit is a fraction (0.1 = 10%).
	Limit float64
	text  string
}

// ErrThreshold is wrapped by ParseThresholds' errors.
var ErrThreshold = errors.New("bad --fail-on threshold")

// ParseThresholds reads a comma-separated list such as "capacity=-10%,p99=+20%".
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok || !slices.Contains(Metrics, name) {
			return nil, fmt.Errorf("%w %q: want METRIC=±N%% with METRIC one of %s, e.g. capacity=-10%%,p99=+20%%", ErrThreshold, part, strings.Join(Metrics, ", "))
		}
		t := Threshold{Metric: name, text: part}
		switch {
		case strings.HasPrefix(val, "+"):
			t.Sign = 1
		case strings.HasPrefix(val, "-"):
			t.Sign = -1
		default:
			return nil, fmt.Errorf("%w %q: the change needs a sign: -N%% (may not fall by more) or +N%% (may not rise by more)", ErrThreshold, part)
		}
		num, isPct := strings.CutSuffix(val[1:], "%")
		x, err := strconv.ParseFloat(num, 64)
		if !isPct || err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%w %q: want a percentage such as %s10%%", ErrThreshold, part, val[:1])
		}
		t.Limit = x / 100
		out = append(out, t)
	}
	return out, nil
}

// judge applies the thresholds to the report's changes. A threshold that finds no
// change to judge fails: a CI gate must not pass on missing data.
func judge(ts []Threshold, rep *Report) []ThresholdResult {
	var out []ThresholdResult
	for _, t := range ts {
		res := ThresholdResult{Spec: t.text}
		var worst *Change
		for i := range rep.Changes {
			c := &rep.Changes[i]
			if c.Metric != t.Metric || c.Change == nil {
				continue
			}
			if worst == nil || float64(t.Sign)**c.Change > float64(t.Sign)**worst.Change {
				worst = c
			}
		}
		switch {
		case rep.Baseline == nil:
			res.Failed, res.Detail = true, "not judged: no --baseline run to compare with"
		case worst == nil:
			res.Failed, res.Detail = true, fmt.Sprintf("not judged: no %s figure in both the baseline and the runs (a capacity needs an slo block in both specs)", t.Metric)
		default:
			where := worst.Variant
			if worst.Step > 0 {
				where += fmt.Sprintf(" step %d", worst.Step)
			}
			res.Failed = float64(t.Sign)**worst.Change > t.Limit
			verb := "within"
			if res.Failed {
				verb = "beyond"
			}
			res.Detail = fmt.Sprintf("%s %+.1f%% in run %s (%s: %s → %s), %s %s", t.Metric, 100**worst.Change, worst.Run, where,
				figureAs(worst.Baseline, worst.Unit, worst.BaselineBasis), figureAs(worst.Value, worst.Unit, worst.Basis), verb, t.text)
			if worst.Bound {
				res.Detail += " (a capacity that was not crossed is a lower bound)"
			}
		}
		out = append(out, res)
	}
	return out
}

// figureAs is figure with how it was found, where that is said ("step 2, measured").
func figureAs(x float64, unit, basis string) string {
	if basis == "" {
		return figure(x, unit)
	}
	return figure(x, unit) + " (" + basis + ")"
}

func figure(x float64, unit string) string {
	if unit == "us" {
		return ms(x) + " ms"
	}
	return num(x) + " " + unit
}
