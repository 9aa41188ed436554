package report

import (
	"math"
	"slices"
)

// configs groups a run's variants by the configuration they repeat, in the order the
// configurations first ran; nil when no variant is a repeat (the run has no repeat:).
func configs(vs []*Variant) (names []string, byConfig map[string][]*Variant) {
	if !slices.ContainsFunc(vs, func(v *Variant) bool { return v.Repeat > 0 }) {
		return nil, nil
	}
	byConfig = map[string][]*Variant{}
	for _, v := range vs {
		c := v.Config
		if c == "" {
			c = v.Name
		}
		if _, seen := byConfig[c]; !seen {
			names = append(names, c)
		}
		byConfig[c] = append(byConfig[c], v)
	}
	return names, byConfig
}

// statOf summarises xs (not empty).
func statOf(xs []float64) Stat {
	s := slices.Sorted(slices.Values(xs))
	st := Stat{N: len(s), Min: s[0], Max: s[len(s)-1]}
	if n := len(s); n%2 == 1 {
		st.Median = s[n/2]
	} else {
		st.Median = (s[n/2-1] + s[n/2]) / 2
	}
	for _, x := range s {
		st.Mean += x / float64(len(s))
	}
	if len(s) > 1 {
		var ss float64
		for _, x := range s {
			ss += (x - st.Mean) * (x - st.Mean)
		}
		st.SD = math.Sqrt(ss / float64(len(s)-1))
	}
	return st
}

// overlaps reports whether the ranges of a and b have a value in common: a difference
// between them is then inside what the repeats of either spread over.
func overlaps(a, b Stat) bool { return a.Min <= b.Max && b.Min <= a.Max }

// repeatSpread is, per configuration and step, the spread of the throughput and the
// p99 over the repeats that have the step with requests.
func repeatSpread(vs []*Variant) []RepeatSpread {
	names, byConfig := configs(vs)
	var out []RepeatSpread
	for _, c := range names {
		var steps []int
		for _, v := range byConfig[c] {
			for _, s := range v.Steps {
				if !slices.Contains(steps, s.Step) {
					steps = append(steps, s.Step)
				}
			}
		}
		slices.Sort(steps)
		for _, n := range steps {
			rs := RepeatSpread{Config: c, Step: n, Variants: []string{}}
			var tput, p99 []float64
			for _, v := range byConfig[c] {
				i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == n })
				if i < 0 || v.Steps[i].Count == 0 {
					continue
				}
				rs.Variants = append(rs.Variants, v.Name)
				tput, p99 = append(tput, v.Steps[i].Throughput), append(p99, float64(v.Steps[i].P99US))
			}
			if len(tput) == 0 {
				continue
			}
			rs.Throughput, rs.P99US = statOf(tput), statOf(p99)
			out = append(out, rs)
		}
	}
	return out
}

// spreadOf finds the spread of config's step n.
func spreadOf(rs []RepeatSpread, config string, n int) *RepeatSpread {
	i := slices.IndexFunc(rs, func(r RepeatSpread) bool { return r.Config == config && r.Step == n })
	if i < 0 {
		return nil
	}
	return &rs[i]
}

// compareConfigs sets the configurations of a run with repeats side by side against
// the first: each configuration's figures are the means over its repeats, and every
// step says whether its difference from the reference is inside the repeats' spread.
func compareConfigs(vs []*Variant, spread []RepeatSpread) *Comparison {
	names, byConfig := configs(vs)
	if len(names) < 2 {
		return nil
	}
	means := make([]*Variant, len(names))
	for i, c := range names {
		means[i] = meanVariant(c, byConfig[c], spread)
	}
	cmp := compareVariants(means)
	cmp.Repeats = len(byConfig[names[0]])
	for i := range cmp.Variants {
		r := &cmp.Variants[i]
		r.Repeats = len(byConfig[r.Variant])
		for j := range r.Steps {
			st := &r.Steps[j]
			a, b := spreadOf(spread, r.Variant, st.Step), spreadOf(spread, cmp.Reference, st.Step)
			if a == nil || b == nil || a.Throughput.N < 2 || b.Throughput.N < 2 {
				continue // one value is no spread
			}
			in, p99In := overlaps(a.Throughput, b.Throughput), overlaps(a.P99US, b.P99US)
			st.ThroughputInSpread, st.P99InSpread = &in, &p99In
		}
	}
	return cmp
}

// meanVariant is a configuration as the mean of its repeats: per step the mean
// throughput, mean latency, p99 and app CPU; the capacity the mean of the repeats'
// when every repeat has one.
func meanVariant(config string, reps []*Variant, spread []RepeatSpread) *Variant {
	m := &Variant{Name: config, Steps: []*Step{}}
	for _, rs := range spread {
		if rs.Config != config {
			continue
		}
		s := &Step{Step: rs.Step, Throughput: rs.Throughput.Mean, P99US: int64(math.Round(rs.P99US.Mean))}
		var means, cpu []float64
		for _, v := range reps {
			i := slices.IndexFunc(v.Steps, func(x *Step) bool { return x.Step == rs.Step })
			if i < 0 || v.Steps[i].Count == 0 {
				continue
			}
			means = append(means, v.Steps[i].MeanUS)
			if a := v.Steps[i].App; a != nil && a.CPUTotalCores != nil {
				cpu = append(cpu, *a.CPUTotalCores)
			}
		}
		s.MeanUS = statOf(means).Mean
		if len(cpu) == len(means) {
			c := statOf(cpu).Mean
			s.App = &AppUsage{CPUTotalCores: &c}
		}
		m.Steps = append(m.Steps, s)
	}
	var caps []float64
	bound := false
	for _, v := range reps {
		x, b, ok := capacityValue(v.Capacity)
		if !ok {
			return m
		}
		caps, bound = append(caps, x), bound || b
	}
	if len(caps) > 0 {
		c := statOf(caps).Mean
		m.Capacity = &Capacity{Status: "crossed", Value: c, Basis: "mean"}
		if bound {
			m.Capacity.Status = "not_crossed"
		}
	}
	return m
}
