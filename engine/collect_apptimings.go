package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// flushTimings takes the in-app timings every running instance of the leg's app recorded
// during step idx and stores them (collectors.app_timings). An instance that cannot be
// flushed, or that had to drop rows, is recorded as a warning event: the step's other
// data stands.
func (r *runner) flushTimings(ctx context.Context, leg spec.Leg, idx int) {
	dep := r.opts.Deployment
	if dep == nil {
		return
	}
	d, name := dep.variant(leg.Variant.Name), leg.Name
	if d.timings == nil {
		return
	}
	// Also after an interrupt (ctx is then not cancelled): the instances hold the rows
	// until flushed. Bounded, so an unreachable app does not hold the run up.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, stats, err := dep.cf.Instances(ctx, d.app.ProcessGUID)
	if err != nil {
		r.warnTimings(name, idx, fmt.Sprintf("app timings of %s not flushed: %v", d.app.Name, err))
		return
	}
	var rows, dropped int64
	flushed := 0
	for _, st := range stats {
		if st.State != "RUNNING" {
			continue
		}
		f := resultsdb.AppTimingFlush{RunID: r.run.ID, Variant: name, Step: idx, AppName: d.app.Name, Instance: st.Index, At: time.Now()}
		b, err := d.timings.Flush(ctx, st.Index)
		if err != nil {
			f.Err = err.Error()
			if rerr := r.opts.Store.RecordFailedFlush(ctx, &f); rerr != nil {
				r.opts.Logger.Warn("record a failed app timings flush", "err", rerr)
			}
			r.warnTimings(name, idx, err.Error())
			continue
		}
		f.Dropped = b.Dropped
		if err := r.opts.Store.StoreAppTimings(ctx, &f, b.Rows); err != nil {
			// The instance has cleared what it handed over: say so, it is lost.
			r.warnTimings(name, idx, fmt.Sprintf("%d app timings of %s/%d lost: %v", len(b.Rows), d.app.Name, st.Index, err))
			continue
		}
		flushed++
		rows += int64(f.Stored)
		dropped += b.Dropped
	}
	if dropped > 0 {
		r.warnTimings(name, idx, fmt.Sprintf("%s dropped %d app timings in step %d (buffer full): raise CFBENCH_TIMINGS_CAPACITY in its manifest", d.app.Name, dropped, idx+1))
	}
	r.opts.Logger.Debug("app timings flushed", "variant", name, "step", idx+1, "instances", flushed, "rows", rows)
}

func (r *runner) warnTimings(variant string, step int, msg string) {
	r.opts.Reporter.Note("warning: " + msg)
	r.event(variant, step, "app_timings", "warn", msg)
}

// App environment of the in-app timings (apps/README.md): recording on from the start,
// and the endpoints guarded by a token of this run.
const (
	envTimings      = "CFBENCH_TIMINGS"
	envTimingsToken = "CFBENCH_TIMINGS_TOKEN"
)

// timingsEnv is the environment v's app is pushed with: the spec's, plus, when app
// timings are collected, the switch and a new token (remembered in dv).
func timingsEnv(sp *spec.Spec, v spec.Variant, dv *deployedVariant) map[string]string {
	if !sp.Collectors.AppTimings.Enabled {
		return v.Env
	}
	token := rand.Text()
	env := maps.Clone(v.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[envTimings], env[envTimingsToken] = "on", token
	dv.timingsToken = token
	return env
}
