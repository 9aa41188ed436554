package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// fakeFaults is a foundation whose instance 1 of each app, once hit, shows
// polls×STARTING then RUNNING with a new guid.
type fakeFaults struct {
	mu       sync.Mutex
	hit      bool
	polls    int
	chaos    []platform.ChaosRequest
	restarts []string
	refuse   error
}

func (f *fakeFaults) Chaos(_ context.Context, req platform.ChaosRequest) (platform.ChaosResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return platform.ChaosResult{}, f.refuse
	}
	f.chaos, f.hit = append(f.chaos, req), true
	res := platform.ChaosResult{Action: req.Action, At: time.Now()}
	switch req.Action {
	case "crash", "oom":
		res.Instances = []platform.ChaosInstance{{AppGUID: req.AppGUID, Index: req.Index, InstanceGUID: "old-1", Cell: "cell-0"}}
	case "evacuate":
		res.Instances = []platform.ChaosInstance{{AppGUID: "app-g", Index: 1, InstanceGUID: "old-1", Cell: req.Cell}, {AppGUID: "someone-else", Index: 0, InstanceGUID: "x"}}
	}
	return res, nil
}

func (f *fakeFaults) RestartInstance(_ context.Context, appGUID, processType string, index int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts, f.hit = append(f.restarts, appGUID+"/"+processType), true
	return nil
}

func (f *fakeFaults) Instances(_ context.Context, processGUID string) (int, []resource.ProcessStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	one := resource.ProcessStat{Index: 1, State: "RUNNING", InstanceGuid: "old-1", Uptime: 100}
	if f.hit {
		if f.polls > 0 {
			f.polls--
			one = resource.ProcessStat{Index: 1, State: "STARTING", InstanceGuid: "new-1"}
		} else {
			one = resource.ProcessStat{Index: 1, State: "RUNNING", InstanceGuid: "new-1", Uptime: 0}
		}
	}
	return 2, []resource.ProcessStat{{Index: 0, State: "RUNNING", InstanceGuid: "i-0", Uptime: 100}, one}, nil
}

func testInjector(pf faultPlatform, hold time.Duration) (*injector, *[]resultsdb.Event) {
	now := time.Now()
	var events []resultsdb.Event
	var mu sync.Mutex
	in := &injector{pf: pf,
		apps:  map[spec.FaultTarget]*platform.App{spec.FaultApp: {Name: "app", GUID: "app-g", ProcessGUID: "app-p"}, spec.FaultGenerator: {Name: "gen", GUID: "gen-g", ProcessGUID: "gen-p"}},
		step:  resultsdb.Step{Variant: "v", Index: 1, Started: now.Add(-time.Hour), Ends: now.Add(-time.Hour + hold)},
		local: now, end: now.Add(hold), pollEvery: time.Millisecond,
		record: func(e resultsdb.Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
		note:   func(string) {},
	}
	return in, &events
}

// TestInject: each action goes where it should, the instance hit is named, and the
// time until it runs again is recorded once the stats show a new instance running.
func TestInject(t *testing.T) {
	cases := []struct {
		name  string
		fault spec.Fault
		check func(t *testing.T, f *fakeFaults, e resultsdb.Event)
	}{
		{"crash", spec.Fault{Step: 1, At: time.Millisecond, Action: spec.FaultCrash, App: spec.FaultApp, Index: 1}, func(t *testing.T, f *fakeFaults, e resultsdb.Event) {
			if len(f.chaos) != 1 || f.chaos[0] != (platform.ChaosRequest{Action: "crash", AppGUID: "app-g", ProcessType: "web", Index: 1}) {
				t.Errorf("chaos %+v", f.chaos)
			}
			if g := e.Evidence["instance_guids"]; len(g.([]string)) != 1 || g.([]string)[0] != "old-1" {
				t.Errorf("instances %v", g)
			}
		}},
		{"restart-instance of a generator", spec.Fault{Step: 1, At: time.Millisecond, Action: spec.FaultRestartInstance, App: spec.FaultGenerator, Index: 1}, func(t *testing.T, f *fakeFaults, e resultsdb.Event) {
			if len(f.restarts) != 1 || f.restarts[0] != "gen-g/web" || len(f.chaos) != 0 {
				t.Errorf("restarts %v, chaos %v", f.restarts, f.chaos)
			}
		}},
		{"evacuate watches our instances it moved", spec.Fault{Step: 1, At: time.Millisecond, Action: spec.FaultEvacuate, Cell: "cell-0"}, func(t *testing.T, f *fakeFaults, e resultsdb.Event) {
			if f.chaos[0].Cell != "cell-0" || f.chaos[0].AppGUID != "" || e.Evidence["cell"] != "cell-0" {
				t.Errorf("chaos %+v, evidence %v", f.chaos, e.Evidence)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeFaults{polls: 3}
			in, events := testInjector(f, time.Minute)
			in.run(context.Background(), []spec.Fault{c.fault})
			if len(*events) != 1 {
				t.Fatalf("events %+v", *events)
			}
			e := (*events)[0]
			if e.Kind != FaultEvent || e.Level != "info" || e.Variant != "v" || e.Step != 1 || e.Evidence["action"] != string(c.fault.Action) {
				t.Errorf("event %+v", e)
			}
			if _, ok := e.Evidence["running_again_ms"]; !ok || !strings.Contains(e.Message, "running again after") {
				t.Errorf("no time until running again: %+v", e)
			}
			// The event is on the step's (database) clock.
			if d := e.At.Sub(in.step.Started); d < 0 || d > time.Minute {
				t.Errorf("at %s, %s after the step's start", e.At, d)
			}
			c.check(t, f, e)
		})
	}
}

// TestInjectNotBack: an instance that does not run again within the step is said so;
// the router's restart waits for nothing; a refused fault is a warning with why.
func TestInjectNotBack(t *testing.T) {
	f := &fakeFaults{polls: 1 << 30}
	in, events := testInjector(f, 50*time.Millisecond)
	in.run(context.Background(), []spec.Fault{{Step: 1, At: time.Millisecond, Action: spec.FaultOOM, App: spec.FaultApp, Index: 1},
		{Step: 1, At: 2 * time.Millisecond, Action: spec.FaultRestartRouter}})
	if len(*events) != 2 {
		t.Fatalf("events %+v", *events)
	}
	for _, e := range *events {
		switch e.Evidence["action"] {
		case "oom":
			if _, ok := e.Evidence["running_again_ms"]; ok || !strings.Contains(e.Message, "not running again within the step") {
				t.Errorf("oom %+v", e)
			}
		case "restart-router":
			if _, ok := e.Evidence["running_again_ms"]; ok || e.Level != "info" {
				t.Errorf("router %+v", e)
			}
		}
	}

	refused := &fakeFaults{refuse: errors.New("CF-ResourceNotFound")}
	in, events = testInjector(refused, time.Minute)
	in.run(context.Background(), []spec.Fault{{Step: 1, At: time.Millisecond, Action: spec.FaultCrash, App: spec.FaultApp, Index: 1}})
	if len(*events) != 1 || (*events)[0].Level != "warn" || !strings.Contains((*events)[0].Message, "not applied: CF-ResourceNotFound") {
		t.Errorf("events %+v", *events)
	}
}

// chaosless is a foundation without the chaos API.
type chaosless struct{ QuotaReader }

func (chaosless) ChaosSupported(context.Context) bool { return false }

// TestFaultPreflight: faults need Cloud Foundry, and all but restart-instance the
// chaos API, said at the fault's line before anything starts.
func TestFaultPreflight(t *testing.T) {
	y := `version: 1
name: f
landscape: {org: o, apps: {space: apps}, generators: {space: gens}}
results_db: {service_instance: db}
variants:
  - name: a
    manifest: m.yml
workload:
  model: open
  requests: [{name: r, path: /}]
ramp:
  rates: [10, 10]
  hold: 30s
  faults:
    - {step: 2, at: 10s, action: restart-instance}
    - {step: 2, at: 12s, action: crash, index: 0}
`
	sp, err := spec.Parse("lose.yml", []byte(y), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	errs := faultErrors(context.Background(), PlanOf(sp), chaosless{})
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "lose.yml:16:") || !strings.Contains(errs[0].Error(), "ramp.faults[1].action: crash needs the local foundation's chaos API") {
		t.Errorf("errors %v", errs)
	}
	if errs := faultErrors(context.Background(), PlanOf(sp), nil); len(errs) != 0 {
		t.Errorf("without a foundation to ask: %v", errs)
	}

	// An instance the manifest does not run.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.yml"), []byte("applications:\n  - name: app\n    instances: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	y = strings.Replace(y, "action: crash, index: 0}", "action: crash, index: 2}", 1)
	if sp, err = spec.Parse("lose.yml", []byte(y), dir); err != nil {
		t.Fatal(err)
	}
	errs = faultErrors(context.Background(), PlanOf(sp), nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "lose.yml:16:") ||
		!strings.Contains(errs[0].Error(), "ramp.faults[1].index: must be an instance of variant a's app: its manifest runs 2 instance(s) (indexes 0 to 1), got 2") {
		t.Errorf("errors %v", errs)
	}
}
