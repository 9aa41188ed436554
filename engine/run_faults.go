package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Faults on purpose (spec ramp.faults): at each scheduled offset into a step the engine
// applies the fault, records when and what it hit, and polls the process stats until
// the instance hit runs again. Each becomes a run event of kind FaultEvent, whose
// evidence the report's section per fault reads (resultsdb.FaultRecovery measures the
// requests around it). Not to be confused with faults_test.go, the database's faults.

// FaultEvent is the kind of the run event of an injected fault.
const FaultEvent = resultsdb.FaultEventKind

// faultPlatform is what injecting faults needs of a Cloud Foundry (*platform.CF).
type faultPlatform interface {
	Chaos(ctx context.Context, req platform.ChaosRequest) (platform.ChaosResult, error)
	RestartInstance(ctx context.Context, appGUID, processType string, index int) error
	Instances(ctx context.Context, processGUID string) (desired int, stats []resource.ProcessStat, err error)
}

var _ faultPlatform = (*platform.CF)(nil)

// injector applies the faults of one step of one leg.
type injector struct {
	pf faultPlatform
	// apps are the variant's apps a fault may name: its app under test (nil for a url:
	// variant) and its generator app.
	apps map[spec.FaultTarget]*platform.App
	// step is the step as stored (database clock); local is its start on this
	// machine's clock, ends its planned end likewise.
	step       resultsdb.Step
	local, end time.Time
	// pollEvery is how often the stats are read after a fault (default 250 ms).
	pollEvery time.Duration
	record    func(resultsdb.Event)
	note      func(string)
}

// injectFaults starts applying the faults scheduled in step st of leg, in the
// background, and returns a function that waits until they are applied and watched
// (at the latest the step's end; sooner when ctx ends). Without faults, or without a
// Cloud Foundry, it does nothing.
func (r *runner) injectFaults(ctx context.Context, leg spec.Leg, st resultsdb.Step) (wait func()) {
	faults := r.sp.Ramp.FaultsIn(st.Index)
	dep := r.opts.Deployment
	if len(faults) == 0 || dep == nil {
		return func() {}
	}
	d := dep.variant(leg.Variant.Name)
	dbNow, err := r.now(ctx)
	if err != nil {
		r.opts.Reporter.Note(fmt.Sprintf("%s: the faults of step %d were not applied: the results database's clock could not be read: %v", leg.Name, st.Index+1, err))
		return func() {}
	}
	local := time.Now().Add(st.Started.Sub(dbNow))
	apps := map[spec.FaultTarget]*platform.App{spec.FaultApp: d.app}
	if d.fleet != nil {
		apps[spec.FaultGenerator] = d.fleet.app
	}
	in := &injector{pf: dep.cf, apps: apps,
		step: st, local: local, end: local.Add(st.Ends.Sub(st.Started)),
		record: func(e resultsdb.Event) {
			e.RunID = r.run.ID
			r.record(context.WithoutCancel(ctx), e)
		},
		note: func(msg string) { r.opts.Reporter.Note(leg.Name + ": " + msg) },
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		in.run(ctx, faults)
	}()
	return wg.Wait
}

// run applies faults at their offsets, each watched in a goroutine of its own so that
// a slow recovery does not delay the next fault, and returns when all are recorded.
func (in *injector) run(ctx context.Context, faults []spec.Fault) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, f := range faults {
		if !wait.For(ctx, time.Until(in.local.Add(f.At))) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.record(in.inject(ctx, f))
		}()
	}
}

// hitInstance is an instance a fault hit whose return the injector waits for.
type hitInstance struct {
	app    *platform.App
	index  int
	guid   string // the guid the instance had before (or when) it was hit; "" unknown
	uptime int    // its uptime before, in seconds; -1 unknown
}

// inject applies f, waits until the instances it hit run again (or the step ends) and
// returns the event that records it: at when it was applied (database clock), its
// evidence the action, what it hit and how long until it ran again.
func (in *injector) inject(ctx context.Context, f spec.Fault) resultsdb.Event {
	ev := map[string]any{"action": string(f.Action), "offset_ms": f.At.Milliseconds()}
	e := resultsdb.Event{Variant: in.step.Variant, Step: in.step.Index, Kind: FaultEvent, Level: "info", Evidence: ev}
	var hit []hitInstance
	if f.Action.HitsInstance() {
		ev["app"], ev["index"] = string(f.App), f.Index
		app := in.apps[f.App]
		if app == nil {
			return in.failed(e, f, time.Now(), fmt.Errorf("variant %s has no %s app to hit", in.step.Variant, f.App))
		}
		ev["app_name"] = app.Name
		w := hitInstance{app: app, index: f.Index, uptime: -1}
		if _, stats, err := in.pf.Instances(ctx, app.ProcessGUID); err == nil {
			if s, ok := statOf(stats, f.Index); ok {
				w.guid, w.uptime = s.InstanceGuid, s.Uptime
			}
		}
		hit = append(hit, w)
	}
	if f.Cell != "" {
		ev["cell"] = f.Cell
	}
	fired := time.Now()
	var res platform.ChaosResult
	var err error
	if f.Action == spec.FaultRestartInstance {
		err = in.pf.RestartInstance(ctx, hit[0].app.GUID, "web", f.Index)
	} else {
		req := platform.ChaosRequest{Action: string(f.Action), Cell: f.Cell}
		if f.Action.HitsInstance() {
			req.AppGUID, req.ProcessType, req.Index = hit[0].app.GUID, "web", f.Index
		}
		res, err = in.pf.Chaos(ctx, req)
	}
	if err != nil {
		return in.failed(e, f, fired, err)
	}
	e.At = in.dbTime(fired)
	var guids, cells []string
	for _, i := range res.Instances {
		guids, cells = append(guids, i.InstanceGUID), append(cells, i.Cell)
		if f.Action.HitsInstance() {
			hit[0].guid = i.InstanceGUID // the chaos API names the instance it hit
			continue
		}
		for _, app := range in.apps { // an evacuation: watch the instances of ours it moved
			if app != nil && app.GUID == i.AppGUID {
				hit = append(hit, hitInstance{app: app, index: i.Index, guid: i.InstanceGUID, uptime: -1})
			}
		}
	}
	if len(guids) > 0 {
		ev["instance_guids"], ev["cells"] = guids, cells
	}
	e.Message = f.Describe()
	if len(guids) > 0 {
		e.Message += fmt.Sprintf(": hit instance %s", joinComma(guids))
	}
	in.note(e.Message)
	if len(hit) == 0 {
		return e
	}
	back, ok := in.waitRunning(ctx, hit, fired)
	if ok {
		ev["running_again_ms"] = back.Milliseconds()
		e.Message += fmt.Sprintf("; running again after %s", back.Round(100*time.Millisecond))
	} else {
		e.Message += "; not running again within the step"
	}
	in.note(e.Message)
	return e
}

// failed is the event of a fault that could not be applied: a warning, with why.
func (in *injector) failed(e resultsdb.Event, f spec.Fault, fired time.Time, err error) resultsdb.Event {
	e.At, e.Level = in.dbTime(fired), "warn"
	e.Evidence["error"] = err.Error()
	e.Message = fmt.Sprintf("%s: not applied: %v", f.Describe(), err)
	in.note(e.Message)
	return e
}

// dbTime is local time t on the database's clock, which the step's times are on.
func (in *injector) dbTime(t time.Time) time.Time { return in.step.Started.Add(t.Sub(in.local)) }

// waitRunning polls the stats until every instance hit runs again (RUNNING, and a new
// instance: another guid, an uptime that restarted, or a state seen other than
// RUNNING meanwhile) and returns how long after fired that was; false when the step
// ended (or ctx did) first.
func (in *injector) waitRunning(ctx context.Context, hit []hitInstance, fired time.Time) (time.Duration, bool) {
	every := in.pollEvery
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	down := make([]bool, len(hit))
	back := make([]bool, len(hit))
	for {
		now := time.Now()
		all := true
		for i, w := range hit {
			if back[i] {
				continue
			}
			_, stats, err := in.pf.Instances(ctx, w.app.ProcessGUID)
			s, ok := statOf(stats, w.index)
			switch {
			case err != nil: // no answer says nothing
				all = false
			case !ok: // the instance is gone for now
				down[i], all = true, false
			case s.State != "RUNNING":
				down[i] = true
				all = false
			case down[i] || (w.guid != "" && s.InstanceGuid != "" && s.InstanceGuid != w.guid) || (w.uptime >= 0 && s.Uptime < w.uptime):
				back[i] = true
			default:
				all = false
			}
		}
		if all {
			return now.Sub(fired), true
		}
		if time.Now().After(in.end) || !wait.For(ctx, every) {
			return 0, false
		}
	}
}

// statOf is the stats of instance index.
func statOf(stats []resource.ProcessStat, index int) (resource.ProcessStat, bool) {
	for _, s := range stats {
		if s.Index == index {
			return s, true
		}
	}
	return resource.ProcessStat{}, false
}

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// chaosChecker is what says whether a foundation has the local foundation's chaos API
// (*platform.CF).
type chaosChecker interface {
	ChaosSupported(ctx context.Context) bool
}

// faultErrors are the problems of p's faults where it runs, before anything starts:
// faults need a Cloud Foundry (a landscape), an instance fault an instance the app
// runs, and every action but restart-instance the local foundation's chaos API, which
// cf (nil: not judged) may lack (chaosErrors).
func faultErrors(ctx context.Context, p *Plan, cf any) spec.Errors {
	sp := p.spec
	if len(sp.Ramp.Faults) == 0 {
		return nil
	}
	if sp.Landscape == nil {
		return spec.Errors{sp.Errorf("ramp.faults", "needs a run on Cloud Foundry (a landscape section): a fault hits an instance, a cell or the router of the foundation")}
	}
	return append(manifestIndexErrors(p), chaosErrors(ctx, sp, cf)...)
}

// chaosErrors are the faults of sp that need the local foundation's chaos API (every
// action but restart-instance) where cf (nil: not judged) lacks it.
func chaosErrors(ctx context.Context, sp *spec.Spec, cf any) spec.Errors {
	cc, ok := cf.(chaosChecker)
	if !ok || sp.Landscape == nil {
		return nil
	}
	var errs spec.Errors
	supported := -1
	for _, f := range sp.Ramp.Faults {
		if !f.Action.NeedsChaos() {
			continue
		}
		if supported < 0 {
			supported = 0
			if cc.ChaosSupported(ctx) {
				supported = 1
			}
		}
		if supported == 0 {
			errs = append(errs, sp.Errorf(f.Field+".action", "%s needs the local foundation's chaos API, and the foundation logged in to has none (its API root has no cfbench_chaos link): on any other Cloud Foundry only restart-instance works", f.Action))
		}
	}
	return errs
}

// manifestIndexErrors are the instance faults of the app under test whose index is not
// an instance its manifest runs (where neither the spec's matrix nor a ramp of app
// instances says how many: spec.Parse judged those).
func manifestIndexErrors(p *Plan) spec.Errors {
	sp := p.spec
	var errs spec.Errors
	levels := sp.Levels()
	for _, f := range sp.Ramp.Faults {
		if !f.Action.HitsInstance() || f.App != spec.FaultApp || f.Step >= len(levels) || levels[f.Step].AppInstances > 0 {
			continue
		}
		for i, v := range sp.Variants {
			if v.Manifest == "" || v.Instances > 0 || (i > 0 && sp.Variants[i-1].Field == v.Field) {
				continue
			}
			r, err := p.resolve(v, v.Env)
			if err != nil {
				continue // Preflight says why the manifest cannot be pushed
			}
			if f.Index >= r.Instances {
				errs = append(errs, sp.Errorf(f.Field+".index", "must be an instance of variant %s's app: its manifest runs %d instance(s) (indexes 0 to %d), got %d",
					v.Name, r.Instances, r.Instances-1, f.Index))
			}
		}
	}
	return errs
}
