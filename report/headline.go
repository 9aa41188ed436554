package report

import (
	"fmt"
	"slices"
	"strings"
)

// SaturatedCPU is the share of the CPU available to an app's instances (AppUsage's
// Utilisation) from which the headline names the app's CPU as the bottleneck.
const SaturatedCPU = 0.9

// limitingChecks are the checks whose finding at the steps around a variant's limit
// says where the limit is, and the place the headline names for each. They come
// before the figures: a saturated generator or an exhausted pool explains a limit
// that the app's CPU or the latency's layers would put elsewhere.
var limitingChecks = []struct{ check, place string }{
	{"generator-saturation", "the generators"},
	{"colocation", "generators on the app's cells"},
	{"contention", "CPU taken by the cell's neighbours"},
	{"pool-exhaustion", "the database pool"},
	{"plateau", "outside the app"},
	// The same checks' names in runs recorded before they were renamed.
	{"generator-cpu", "the generators"},
	{"flat-throughput", "outside the app"},
}

// headlines are the report's answer, one line per variant of every run asked for
// (Report.Runs), from the figures the report computed: the capacity, the comparison,
// the changes against the baseline.
func headlines(rep *Report) []Headline {
	out := []Headline{}
	for _, r := range rep.Runs {
		if cmp := r.Comparison; cmp != nil && cmp.Repeats > 0 {
			for _, vr := range cmp.Variants {
				out = append(out, configHeadline(r, cmp, vr, len(rep.Runs) > 1))
			}
			continue
		}
		for _, v := range r.Variants {
			h := headline(r, v, rep.Baseline, rep.Changes)
			if len(rep.Runs) > 1 {
				h.Text = fmt.Sprintf("%s (run %s): %s", v.Name, r.ID, h.Text)
			} else {
				h.Text = v.Name + ": " + h.Text
			}
			out = append(out, h)
		}
	}
	return out
}

// configHeadline is the line of one configuration of a run with repeats: the mean of
// its repeats' figures against the reference configuration's, from the comparison.
// The rest (per core, bottleneck, findings) is per repeat, in the sections below.
func configHeadline(r *Run, cmp *Comparison, vr VariantRatios, runID bool) Headline {
	h := Headline{Run: r.ID, Variant: vr.Variant, Measure: "max_throughput", Repeats: vr.Repeats}
	x, ratio, what := vr.MaxThroughput, vr.ThroughputRatio, "req/s at most (no SLO)"
	if r.SLO != nil {
		h.Measure, ratio, what = "capacity", vr.CapacityRatio, "req/s at the SLO"
		if vr.Capacity == nil {
			h.Text = vr.Variant + ": no capacity: not every repeat met the SLO at a step"
			return h
		}
		x = *vr.Capacity
	}
	h.Throughput, h.Basis = &x, "mean"
	name := fmt.Sprintf("%s (mean of %d repeats)", vr.Variant, vr.Repeats)
	if runID {
		name = fmt.Sprintf("%s (run %s, mean of %d repeats)", vr.Variant, r.ID, vr.Repeats)
	}
	h.Text = fmt.Sprintf("%s: %s %s", name, num(x), what)
	if vr.Variant != cmp.Reference && ratio != nil {
		h.Reference, h.Ratio = cmp.Reference, ratio
		h.Text += fmt.Sprintf(", %.2f× %s", *ratio, cmp.Reference)
	}
	return h
}

// headline is one variant's line, without its name in front.
func headline(r *Run, v *Variant, base *Run, changes []Change) Headline {
	h := Headline{Run: r.ID, Variant: v.Name, Measure: "max_throughput"}
	var at *Step    // the step the figure rests on
	var limit []int // the steps around the limit: where the bottleneck shows
	var near []int  // the findings there
	var parts []string
	stepOf := func(n int) *Step {
		if i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == n }); i >= 0 {
			return v.Steps[i]
		}
		return nil
	}
	if c := v.Capacity; c != nil {
		h.Measure = "capacity"
		x, lower, ok := capacityValue(c)
		switch {
		case ok:
			h.Throughput, h.Step, h.Basis = &x, c.Step, c.Basis
			words := capacityBasis(c)
			if lower {
				h.Bound, words = "at_least", words+"; not crossed"
			}
			parts = append(parts, fmt.Sprintf("%s%s req/s at the SLO (%s)", map[bool]string{true: "≥ "}[lower], num(x), words))
			at = stepOf(c.Step)
		case c.Status == "below_first":
			s := stepOf(c.FailedStep) // the first step judged
			h.Throughput, h.Bound, h.Step = &s.Throughput, "below", s.Step
			parts = append(parts, fmt.Sprintf("< %s req/s at the SLO (no step met it; step %d broke it)", num(s.Throughput), s.Step))
		default:
			parts = append(parts, c.Text)
		}
		limit, near = []int{c.FailedStep, c.Step}, c.Findings
	} else if len(v.Steps) > 0 {
		i := 0
		for j, s := range v.Steps {
			if s.Throughput > v.Steps[i].Throughput {
				i = j
			}
		}
		at = v.Steps[i]
		h.Throughput, h.Step, h.Basis = &at.Throughput, at.Step, "measured"
		errs := ""
		if at.ErrorRate > 0 {
			errs = fmt.Sprintf(", %s%% errors", pct(at.ErrorRate))
		}
		parts = append(parts, fmt.Sprintf("%s req/s at most (step %d, measured%s; no SLO)", num(at.Throughput), at.Step, errs))
		limit = []int{at.Step}
		if i+1 < len(v.Steps) {
			limit = append(limit, v.Steps[i+1].Step)
		}
		near = findingsNear(r.Findings, v.Name, limit...)
	} else {
		parts = append(parts, "no step with figures")
	}

	var ratios []string
	if cmp := r.Comparison; cmp != nil && cmp.Repeats == 0 && cmp.Reference != v.Name {
		if i := slices.IndexFunc(cmp.Variants, func(x VariantRatios) bool { return x.Variant == v.Name }); i >= 0 {
			h.Reference, h.Ratio = cmp.Reference, cmp.Variants[i].ThroughputRatio
			if h.Measure == "capacity" {
				h.Ratio, h.RatioBound = cmp.Variants[i].CapacityRatio, cmp.Variants[i].CapacityRatioBound
			}
			if h.Ratio != nil {
				ratios = append(ratios, boundedRatio(h.Ratio, h.RatioBound)+" "+cmp.Reference)
			}
		}
	}
	if base != nil && base.ID != r.ID {
		metric := map[string]string{"capacity": "capacity", "max_throughput": "throughput"}[h.Measure]
		if i := slices.IndexFunc(changes, func(c Change) bool { return c.Run == r.ID && c.Variant == v.Name && c.Metric == metric }); i >= 0 {
			if c := changes[i]; c.Baseline > 0 {
				x := c.Value / c.Baseline
				h.BaselineRun, h.BaselineRatio = base.ID, &x
				ratios = append(ratios, fmt.Sprintf("%.2f× the baseline's", x))
			}
		}
	}
	if len(ratios) > 0 {
		parts[0] += ", " + strings.Join(ratios, ", ")
	}
	if at != nil && at.App != nil && at.App.ThroughputPerCore != nil {
		h.ThroughputPerCore = at.App.ThroughputPerCore
		parts = append(parts, fmt.Sprintf("%s req/s per core at step %d", num(*h.ThroughputPerCore), at.Step))
	}
	if len(v.Steps) > 0 {
		h.Bottleneck, h.BottleneckEvidence = bottleneck(r, v, limit, stepOf)
		if h.Bottleneck == "" {
			parts = append(parts, "bottleneck: not judged ("+h.BottleneckEvidence+")")
		} else {
			parts = append(parts, fmt.Sprintf("bottleneck: %s (%s)", h.Bottleneck, h.BottleneckEvidence))
		}
	}
	if c := v.Capacity; c != nil {
		h.Disturbed = c.Disturbed
	} else if at != nil && at.Disturbed() {
		h.Disturbed = []int{at.Step}
	}
	for _, n := range h.Disturbed {
		if s := stepOf(n); s != nil {
			parts = append(parts, fmt.Sprintf("step %d disturbed: %s", n, disturbances(s)))
		}
	}
	var named []string
	for _, i := range near {
		f := r.Findings[i]
		if !slices.Contains(h.LimitedBy, f.Check) {
			h.LimitedBy, h.Findings = append(h.LimitedBy, f.Check), append(h.Findings, i)
			named = append(named, fmt.Sprintf("%s (step %d)", f.Check, f.Step))
		}
	}
	if len(named) > 0 {
		parts = append(parts, "limited by: "+strings.Join(named, ", "))
	}
	h.Text = strings.Join(parts, "; ")
	return h
}

// bottleneck names where a variant's limit is, judged at the steps around it (the
// step that broke the SLO first, then the one the figure rests on), and why: what
// disturbed the first of them (Step.Disturbances); a finding that locates it
// (limitingChecks); the SLO's app CPU bound broken; the app's CPU at
// SaturatedCPU or more of what is available; the layer of the latency decomposition
// with the largest mean. "" with the reason when none of them can be judged.
func bottleneck(r *Run, v *Variant, limit []int, stepOf func(int) *Step) (string, string) {
	// The step where the limit shows (the one that broke the SLO, or without an SLO
	// the best) measured what disturbed it as much as the load: that comes first. An
	// instance killed out of memory there is the app's memory; anything else is named
	// as it is, not as a figure it bent.
	if len(limit) > 0 && limit[0] > 0 {
		if s := stepOf(limit[0]); s != nil && s.Disturbed() {
			for _, d := range s.Disturbances {
				if d.Cause == "instance_oom" {
					return "app memory", fmt.Sprintf("%s at step %d", d.Text, s.Step)
				}
			}
			return "what disturbed the step", fmt.Sprintf("at step %d %s", s.Step, disturbances(s))
		}
	}
	for _, lc := range limitingChecks {
		for _, n := range limit {
			if i := slices.IndexFunc(r.Findings, func(f Finding) bool { return f.Variant == v.Name && f.Step == n && n > 0 && f.Check == lc.check }); i >= 0 {
				return lc.place, fmt.Sprintf("finding %s at step %d", lc.check, n)
			}
		}
	}
	var steps []*Step
	for _, n := range limit {
		if s := stepOf(n); s != nil && n > 0 {
			steps = append(steps, s)
		}
	}
	for _, s := range steps {
		if a := s.App; a != nil && a.CPUMeanCores != nil && r.SLO != nil && r.SLO.MaxAppCPUCores != nil && *a.CPUMeanCores > *r.SLO.MaxAppCPUCores {
			return "app CPU", fmt.Sprintf("%.2f cores per instance at step %d, over the SLO's %g", *a.CPUMeanCores, s.Step, *r.SLO.MaxAppCPUCores)
		}
	}
	for _, s := range steps {
		if a := s.App; a != nil && a.Utilisation != nil && *a.Utilisation >= SaturatedCPU {
			return "app CPU", fmt.Sprintf("%.0f%% of the CPU available at step %d", 100**a.Utilisation, s.Step)
		}
	}
	for _, s := range steps {
		if d := s.Decomposition; d != nil {
			i := slices.IndexFunc(d.Layers, func(l Layer) bool { return l.Name == d.Dominant })
			return d.Dominant, fmt.Sprintf("%s of %s ms per request at step %d", ms(d.Layers[i].MeanUS), ms(d.ClientMeanUS), s.Step)
		}
	}
	cpu, top := "app CPU against what is available unknown", -1.0
	for _, s := range steps {
		if a := s.App; a != nil && a.Utilisation != nil && *a.Utilisation > top {
			top = *a.Utilisation
			cpu = fmt.Sprintf("app CPU at most %.0f%% of what is available", 100*top)
		}
	}
	return "", cpu + "; no latency decomposition"
}

// findingsNear are the indexes of the findings of variant at the given steps (0s are
// skipped), in the order recorded.
func findingsNear(findings []Finding, variant string, steps ...int) []int {
	var out []int
	for i, f := range findings {
		if f.Variant == variant && f.Step > 0 && slices.Contains(steps, f.Step) {
			out = append(out, i)
		}
	}
	return out
}
