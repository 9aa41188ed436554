package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// ramp walks the steps of one leg (a variant in one repeat): scale the fleet, wait for
// the instances, plan the step, watch it, wait for every sample, then judge it (stop
// conditions, checks). The results name the leg (leg.Name); the deployment knows its
// variant (v.Name), whose app and generators every repeat shares.
func (r *runner) ramp(ctx context.Context, leg spec.Leg, fleet Fleet) error {
	store, sp, v, name := r.opts.Store, r.sp, leg.Variant, leg.Name
	steps := sp.Levels()
	var prev *resultsdb.StepSummary
	asked := 0 // the generator instances the ramp last asked for
	for idx, level := range steps {
		if level.AppInstances > 0 {
			if err := r.scaleApp(ctx, v.Name, level.AppInstances); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		planned := level.Generators
		want, err := r.instancesFor(ctx, fleet, planned, asked)
		if err != nil {
			return err
		}
		asked = want
		if want != planned {
			r.opts.Reporter.Note(fmt.Sprintf("%s: step %d keeps the %d generator instances scaled by hand (the ramp planned %d)", name, idx+1, want, planned))
		}
		if err := scale(ctx, fleet, want); err != nil {
			return fmt.Errorf("scale the generators of %s to %d: %w", name, want, err)
		}
		if err := r.waitLive(ctx, name, want); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		st, err := r.planStep(ctx, name, idx, want, level)
		if err != nil {
			return err
		}
		r.opts.Reporter.Note(fmt.Sprintf("%s: step %d/%d starts: %s, for %s (the first %s warm-up)",
			name, idx+1, len(steps), levelNote(sp, level, want), sp.Ramp.Hold, sp.Ramp.Warmup))
		faultsDone := r.injectFaults(ctx, leg, st)
		seen, err := r.watchStep(ctx, st, fleet, want)
		if err != nil {
			return err
		}
		if err := r.waitStepDone(ctx, st); err != nil {
			return err
		}
		faultsDone()
		ended := time.Now()
		final := context.WithoutCancel(ctx)
		var load resultsdb.StepLoad
		if err := r.db(final, "read what became of the generators", func(ctx context.Context) (err error) {
			load, err = store.StepLoad(ctx, r.run.ID, name, idx, r.settled(staleAfterOutage))
			return err
		}); err != nil {
			return err
		}
		if !load.Ended.IsZero() && load.Ended.Before(ended) {
			// Every generator left before the planned end: the step's load, and so
			// its measured window, ended then.
			ended = load.Ended
		}
		r.flushTimings(final, leg, idx)
		r.checkInstances(final, &st)
		if err := r.db(final, "record the instances seen", func(ctx context.Context) error {
			return store.SetInstancesSeen(ctx, r.run.ID, name, idx, seen)
		}); err != nil {
			return err
		}
		// The end is recorded first: the step's figures are computed once, over the
		// step's planned window, and every reader after this sees the same ones.
		if err := r.db(final, "record the step's end", func(ctx context.Context) error {
			return store.EndStep(ctx, r.run.ID, name, idx, ended, "")
		}); err != nil {
			return err
		}
		if dep := r.opts.Deployment; dep != nil {
			dep.settleMetrics(final, st.Ends)
		}
		var sum resultsdb.StepSummary
		if err := r.db(final, "compute the step's figures", func(ctx context.Context) (err error) {
			sum, err = store.ComputeStepMetrics(ctx, r.run.ID, name, idx, r.roles(v, fleet))
			return err
		}); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		rep := StepReport{StepSummary: sum, Steps: len(steps), Left: r.timeLeft(leg, len(steps)-idx-1)}
		if load.Left > 0 || load.Joined == 0 {
			// The step ran with less load than planned, or none, taken away by
			// someone or something else: its figures answer no question of the ramp,
			// and the checks (plateau, stall) would misread them.
			f := generatorsLost(load, st, want)
			r.finding(name, idx, f)
			rep.Left = 0 // the run ends here
			r.opts.Reporter.Step(rep)
			return fmt.Errorf("%w: %s step %d: %s", ErrGeneratorsLost, name, idx+1, f.Message)
		}
		checkErr := r.checkStep(ctx, leg, fleet, prev, sum)
		rep.Stop = stopReason(sp.Ramp.Stop, prev, sum)
		if rep.Stop != "" {
			if err := r.db(final, "record the stop reason", func(ctx context.Context) error {
				return store.SetStopReason(ctx, r.run.ID, name, idx, rep.Stop)
			}); err != nil {
				return err
			}
		}
		r.opts.Reporter.Step(rep)
		if checkErr != nil {
			return checkErr
		}
		if rep.Stop != "" {
			r.res.Stops[name] = rep.Stop
			r.event(name, idx, "stop", "info", rep.Stop)
			return nil
		}
		prev = &sum
	}
	return nil
}

// ErrGeneratorsLost is returned when generator instances that joined a step stopped
// before its end without the run asking (scaled down or stopped by someone else, or
// dead), or when none of those live at its plan joined it: the run ends failed, not
// completed, and says which step and how many.
var ErrGeneratorsLost = errors.New("generator instances taken away")

// GeneratorsLostCheck names the finding of a step whose generators were taken away.
const GeneratorsLostCheck = "generators_lost"

// generatorsLost is the finding of step st, which asked for asked instances, whose
// instances load says were taken away.
func generatorsLost(load resultsdb.StepLoad, st resultsdb.Step, asked int) Finding {
	ev := map[string]any{"joined": load.Joined, "left": load.Left, "asked": asked}
	if load.Joined == 0 {
		// They were live when the step was planned (waitLive), and none read the plan.
		return Finding{Check: GeneratorsLostCheck, Level: spec.CheckFail, Evidence: ev, Message: fmt.Sprintf(
			"none of the %d generator instances asked for joined the step: they were live when it was planned, then taken away (scaled down or stopped by someone else, or dead) or cut off from the results database before they read its plan",
			asked)}
	}
	msg := fmt.Sprintf("%d of the %d generator instances that joined left before the step's end (scaled down or stopped by someone else, or dead)",
		load.Left, load.Joined)
	if !load.Ended.IsZero() {
		ran := load.Ended.Sub(st.Started).Round(100 * time.Millisecond)
		msg += fmt.Sprintf(": its load ended %s into the step, which was planned for %s, and its rate is over the time it ran",
			ran, st.Ends.Sub(st.Started))
		ev["ran_ms"] = load.Ended.Sub(st.Started).Milliseconds()
	}
	return Finding{Check: GeneratorsLostCheck, Level: spec.CheckFail, Message: msg, Evidence: ev}
}

// instancesFor is how many instances a step with planned instances runs, the ramp having
// asked for asked before it: more when a user scaled the generators up by hand since,
// so their instances keep loading the target. A ramp that plans fewer than it asked
// before (app instances going down) gets fewer.
func (r *runner) instancesFor(ctx context.Context, fleet Fleet, planned, asked int) (int, error) {
	have, err := fleet.Desired(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the generator instances of %s: %w", fleet.App(), err)
	}
	if have == asked {
		return planned, nil
	}
	return max(planned, have), nil
}

// timeLeft is at least how long the rest of the run takes: the remaining steps of this
// leg and every step of the legs after it.
func (r *runner) timeLeft(leg spec.Leg, stepsLeft int) time.Duration {
	legs := r.sp.Legs()
	after := 0
	for i := len(legs) - 1; i >= 0 && legs[i].Name != leg.Name; i-- {
		after++
	}
	return time.Duration(stepsLeft+after*len(r.sp.Levels())) * r.sp.Ramp.Hold
}

// watchStep follows a planned step until its window ends: it notices a user scaling the
// generators by hand (recorded as an event; the new instances join the step by
// themselves) and returns the most instances seen alive.
func (r *runner) watchStep(ctx context.Context, st resultsdb.Step, fleet Fleet, asked int) (seen int, err error) {
	store := r.opts.Store
	now, err := r.now(ctx)
	if err != nil {
		return 0, err
	}
	end := time.Now().Add(st.Ends.Sub(now))
	every := max(r.opts.PollEvery, time.Second)
	last := asked
	for {
		if live, err := store.LiveWorkers(ctx, st.RunID, st.Variant); err == nil {
			seen = max(seen, live)
			if r.away {
				r.back, r.away = time.Now(), false
			}
		} else if ctx.Err() == nil {
			// The instances go on; the step's end waits for them once it is back.
			r.away = r.away || store.Retryable(ctx, err)
			r.opts.Logger.Warn("count live generator instances", "err", err)
		}
		r.watchNodes(ctx)
		if d, err := fleet.Desired(ctx); err == nil && d != last {
			msg := fmt.Sprintf("%s: generator instances changed by hand from %d to %d during step %d", st.Variant, last, d, st.Index+1)
			r.opts.Reporter.Note(msg)
			r.event(st.Variant, st.Index, "scale", "info", msg)
			last = d
		}
		left := time.Until(end)
		if left <= 0 {
			return seen, nil
		}
		if !wait.For(ctx, min(left, every)) {
			return seen, nil
		}
	}
}

// now reads the database's clock, through an outage.
func (r *runner) now(ctx context.Context) (t time.Time, err error) {
	err = r.db(ctx, "a step boundary", func(ctx context.Context) error {
		t, err = r.opts.Store.Now(ctx)
		return err
	})
	return t, err
}

// staleAfterOutage is how long the database must be back before an instance whose
// heartbeat is old (resultsdb.StepProgress's 10 s) is taken as gone: a heartbeat
// period and a reconnect more than that.
const staleAfterOutage = 15 * time.Second

// waitStepDone waits until the step's window is over and every instance that took part
// has stored its samples; instances that stopped are not waited for. One that went
// silent is, up to the bound: it may be dead, or only cut off from the database on its
// own path (a relay or a tunnel that lost it, while ours works), and then it comes back
// with its samples. Ending the wait at its silence made such a step's figures miss
// them and failed the run as if it had been taken away. An outage of the database
// holds the wait (the instances keep their samples meanwhile) and extends its bound.
func (r *runner) waitStepDone(ctx context.Context, st resultsdb.Step) error {
	now, err := r.now(ctx)
	if err != nil {
		return err
	}
	if !wait.For(ctx, st.Ends.Sub(now)) {
		return nil
	}
	bound := r.sp.Workload.Timeout + 15*time.Second
	deadline := time.Now().Add(bound)
	var looked time.Time // when watchNodes last looked
	for {
		var p resultsdb.StepProgress
		err := r.db(ctx, "read the step's progress", func(ctx context.Context) (err error) {
			p, err = r.opts.Store.StepProgress(ctx, st.RunID, st.Variant, st.Index)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !r.back.IsZero() {
			deadline = later(deadline, r.back.Add(bound+staleAfterOutage))
		}
		if time.Since(looked) >= time.Second {
			r.watchNodes(ctx)
			looked = time.Now()
		}
		if p.Joined > 0 && p.Done+p.Stopped >= p.Joined {
			if p.Stopped > 0 {
				r.opts.Logger.Warn("generator instances stopped during the step; their stored samples count", "variant", st.Variant, "step", st.Index+1, "stopped", p.Stopped)
			}
			return nil
		}
		if time.Now().After(deadline) {
			r.opts.Logger.Warn("not every generator instance stored its samples in time", "variant", st.Variant, "step", st.Index+1, "joined", p.Joined, "done", p.Done)
			return nil
		}
		if !wait.For(ctx, 50*time.Millisecond) {
			return nil
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// roles are the apps whose container metrics a step of v includes: its app under test
// (none for a url: variant) and its generator app.
func (r *runner) roles(v *spec.Variant, fleet Fleet) []resultsdb.AppRole {
	dep := r.opts.Deployment
	if dep == nil {
		return nil
	}
	var roles []resultsdb.AppRole
	if d := dep.variant(v.Name); d.app != nil {
		roles = append(roles, resultsdb.AppRole{Name: d.app.Name, Role: resultsdb.RoleApp, HostCores: dep.hostCores})
	}
	return append(roles, resultsdb.AppRole{Name: fleet.App(), Role: resultsdb.RoleGenerator, HostCores: dep.hostCores})
}

// checkStep runs the checks on a finished step's figures, records what trips and
// returns ErrCheckFailed when a check at level fail tripped.
func (r *runner) checkStep(ctx context.Context, leg spec.Leg, fleet Fleet, prev *resultsdb.StepSummary, cur resultsdb.StepSummary) error {
	checks, v := r.sp.Checks, leg.Variant
	contention, notJudged := CheckContention(checks.Contention, cur)
	if notJudged != "" && prev == nil { // once per variant: it holds for every step
		r.opts.Reporter.Note(leg.Name + ": " + notJudged)
		r.event(leg.Name, cur.Step, "not_judged", "info", notJudged)
	}
	poolSize := 0
	if dep := r.opts.Deployment; dep != nil {
		poolSize = dep.variant(v.Name).poolSize
	}
	found := []*Finding{
		CheckGeneratorSaturation(checks.GeneratorSaturation, cur, r.sp.Workload.Tick),
		CheckPoolExhaustion(checks.PoolExhaustion, cur, poolSize),
		contention,
		CheckStall(checks.Stall, cur),
	}
	if prev != nil {
		found = deferPlateau(append(found, CheckPlateau(checks.Plateau, *prev, cur)))
	}
	if dep := r.opts.Deployment; dep != nil && dep.variant(v.Name).app != nil {
		apps := dep.appNames()
		hosts, err := r.opts.Store.LatestHosts(ctx, r.run.ID, append(slices.Clone(apps), fleet.App()))
		if err != nil {
			r.opts.Logger.Warn("read the hosts for the co-location check", "variant", leg.Name, "step", cur.Step+1, "err", err)
		} else {
			var appHosts []resultsdb.InstanceHost
			for _, a := range apps {
				appHosts = append(appHosts, hosts[a]...)
			}
			found = append(found, CheckColocation(checks.Colocation, appHosts, hosts[fleet.App()]))
		}
	}
	var failed error
	for _, f := range found {
		if f == nil {
			continue
		}
		r.finding(leg.Name, cur.Step, *f)
		if f.Level == spec.CheckFail {
			failed = fmt.Errorf("%w: %s: %s", ErrCheckFailed, f.Check, f.Message)
		}
	}
	r.checkNeighbours(ctx, leg.Name, cur.Step)
	return failed
}

// finding records a finding of a step (idx 0-based; -1 for the whole variant) and
// reports it.
func (r *runner) finding(variant string, idx int, f Finding) {
	r.res.Findings = append(r.res.Findings, StepFinding{Variant: variant, Step: idx, Finding: f})
	ev := resultsdb.Event{RunID: r.run.ID, At: time.Now(), Variant: variant, Step: idx, Kind: "check", Level: string(f.Level),
		Message: f.Message, Check: f.Check, Evidence: f.Evidence}
	if err := r.opts.Store.AddEvent(context.Background(), ev); err != nil {
		r.opts.Logger.Warn("record a finding", "check", f.Check, "err", err)
	}
	r.opts.Reporter.Finding(variant, idx, f)
}

// loadOf says what each generator instance sends, for progress lines.
func loadOf(w *spec.Workload) string {
	switch {
	case w.Model == spec.ModelOpen && w.RatePer == spec.RatePerTotal:
		return fmt.Sprintf("%g req/s in all", w.Rate)
	case w.Model == spec.ModelOpen:
		return fmt.Sprintf("%g req/s each", w.Rate)
	case w.Model == spec.ModelCount:
		return fmt.Sprintf("%d users each, %d requests in all", w.Users, w.RequestsPerInstance)
	}
	return fmt.Sprintf("%d users each", w.Users)
}

// scaleTimeout bounds one scale request, which is let finish when the run is interrupted.
const scaleTimeout = time.Minute

// scale asks fleet for n instances and lets the request finish even when ctx ends
// (Ctrl-C): an abandoned request can still land after the fleet's Stop and leave the
// generators up.
func scale(ctx context.Context, fleet Fleet, n int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scaleTimeout)
	defer cancel()
	return fleet.Scale(ctx, n)
}
