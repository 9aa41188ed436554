package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// This file is the level planner: what a step of the ramp asks of the platform (the
// app's instances), of the generators (instances, users, rate in all) and how it is
// written into the run's plan. run_ramp.go walks the steps.

// planStep writes step idx of variant at level l with a start far enough ahead of the
// write that every live instance reads it before it begins, so all of them start
// together; n is the generator instances the step runs (the level's, or more scaled by
// hand). It returns the plan as stored: after an outage that lost the answer to the
// first attempt, that attempt's plan is the one the instances follow.
func (r *runner) planStep(ctx context.Context, variant string, idx, n int, l spec.Level) (st resultsdb.Step, err error) {
	asked := resultsdb.Step{RunID: r.run.ID, Variant: variant, Index: idx, Instances: n, Users: l.Users, Rate: l.Rate, AppInstances: l.AppInstances}
	err = r.db(ctx, "plan the step", func(ctx context.Context) (err error) {
		st, err = r.opts.Store.PlanStep(ctx, asked, 2*r.opts.PollEvery+100*time.Millisecond, r.sp.Ramp.Warmup, r.sp.Ramp.Hold)
		return err
	})
	return st, err
}

// scaleApp scales the app under test of variant to n instances for a step and waits
// until they run (a scale down is done at once). A url: variant has no app: the spec
// refuses a ramp of app instances for it.
func (r *runner) scaleApp(ctx context.Context, variant string, n int) error {
	dep := r.opts.Deployment
	if dep == nil || dep.variant(variant).app == nil {
		return fmt.Errorf("variant %s: no app under test to scale to %d instances", variant, n)
	}
	app := dep.variant(variant).app
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scaleTimeout)
	err := dep.cf.Scale(sctx, app.ProcessGUID, n)
	cancel()
	if err != nil {
		return fmt.Errorf("scale the app %s of %s to %d instances: %w", app.Name, variant, n, err)
	}
	timeout := dep.startTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	if err := dep.cf.WaitRunning(ctx, app.ProcessGUID, n, timeout); err != nil {
		return fmt.Errorf("variant %s: %w", variant, err)
	}
	return nil
}

// restoreApp scales the app under test of a ramp of app instances back to the first
// level once its ramp is over, so that the next variant's ramp has the quota it was
// planned with (PlanOf).
func (r *runner) restoreApp(ctx context.Context, v *spec.Variant) error {
	levels := r.sp.Levels()
	if r.sp.Ramp.Kind() != spec.LevelAppInstances || len(levels) == 0 {
		return nil
	}
	dep := r.opts.Deployment
	if dep == nil || dep.variant(v.Name).app == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scaleTimeout)
	defer cancel()
	app := dep.variant(v.Name).app
	if err := dep.cf.Scale(ctx, app.ProcessGUID, levels[0].AppInstances); err != nil {
		return fmt.Errorf("scale the app %s of %s back to %d instances: %w", app.Name, v.Name, levels[0].AppInstances, err)
	}
	return nil
}

// levelNote says what a step runs, for progress lines: "700 req/s in all over 2
// generator instances (350 each)".
func levelNote(sp *spec.Spec, l spec.Level, n int) string {
	w := &sp.Workload
	app := ""
	if l.AppInstances > 0 {
		app = fmt.Sprintf("%d app instance(s), ", l.AppInstances)
	}
	switch {
	case l.Rate > 0:
		return fmt.Sprintf("%s%g req/s in all over %d generator instance(s) (%.4g each)", app, l.Rate, n, l.Rate/float64(max(n, 1)))
	case sp.Ramp.Kind() == spec.LevelUsers:
		return fmt.Sprintf("%s%d users in all (%d each of %d generator instance(s))", app, l.Users*n, l.Users, n)
	}
	return fmt.Sprintf("%s%d generator instance(s), %s", app, n, loadOf(w))
}
