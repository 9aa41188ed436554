// Package ratesearch finds the highest constant rate a generator holds in an open loop:
// probes double from a start rate until one fails, then bisect between the highest
// rate held and the lowest that failed, on a 250 req/s grid, until the bracket is
// within 2.5% (or 250 req/s), or the probes run out.
package ratesearch

import (
	"context"
	"fmt"
	"time"
)

// Grid is the step rates are rounded to while bisecting.
const Grid = 250

// Prober runs one probe at rate requests per second and says whether the rate held,
// with a verdict for the report ("achieved 49990/s (drift -0.02%), p99 10.76 ms").
type Prober func(ctx context.Context, rate int) (held bool, verdict string)

// Probe is one probe's outcome.
type Probe struct {
	Rate    int
	Held    bool
	Verdict string
}

// Outcome is a search: its probes in order, the highest rate held (0: none) and the
// lowest that failed (0: every probe held; the search ran out before finding the
// ceiling).
type Outcome struct {
	Probes       []Probe
	Held, Failed int
}

// Verdict returns the probe that ran at rate.
func (o Outcome) Verdict(rate int) string {
	for _, p := range o.Probes {
		if p.Rate == rate {
			return p.Verdict
		}
	}
	return ""
}

// Search probes from start, at most max probes; it stops early when ctx ends.
func Search(ctx context.Context, start, max int, probe Prober) Outcome {
	var o Outcome
	for rate := start; len(o.Probes) < max && ctx.Err() == nil; {
		held, verdict := probe(ctx, rate)
		o.Probes = append(o.Probes, Probe{rate, held, verdict})
		if held {
			o.Held = rate
		} else {
			o.Failed = rate
		}
		if o.Failed == 0 {
			rate *= 2
			continue
		}
		lo, hi := o.Held, o.Failed
		if hi-lo <= Grid || hi-lo <= lo/40 {
			break
		}
		rate = (lo + hi) / 2 / Grid * Grid
		if rate <= lo {
			rate = lo + Grid
		}
		if rate >= hi {
			break
		}
	}
	return o
}

// Limits is when a probe holds its rate.
type Limits struct {
	Drift float64       // largest |achieved/target - 1|, 0.01
	P99   time.Duration // p99 must stay under it
}

// Judge says whether a probe at target req/s held it, having achieved ok 2xx responses
// per second with p99 and errors failed requests, and why.
func (l Limits) Judge(target int, achieved float64, p99 time.Duration, errors int64) (bool, string) {
	d := achieved/float64(target) - 1
	held := d > -l.Drift && d < l.Drift && p99 < l.P99 && errors == 0
	return held, fmt.Sprintf("achieved %.0f/s (drift %+.2f%%), p99 %.2f ms, %d errors", achieved, 100*d, float64(p99)/1e6, errors)
}
