package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// faultSpec is a spec of app instances in two steps with the given ramp.faults.
func faultSpec(faults string) string {
	return `version: 1
name: f
landscape: {org: o, apps: {space: apps}, generators: {space: gens}}
variants:
  - name: a
    manifest: m.yml
workload:
  model: open
  rate: 10
  requests: [{name: r, path: /}]
ramp:
  app_instances: [3, 3]
  hold: 30s
  warmup: 5s
  faults:
` + faults
}

// TestFaults: ramp.faults decodes into 0-based steps with their defaults, and FaultsIn
// gives a step's faults by offset.
func TestFaults(t *testing.T) {
	t.Parallel()
	s, err := Parse("spec.yml", []byte(faultSpec(`    - {step: 2, at: 20s, action: evacuate, cell: cell-1}
    - {step: 2, at: 10s, action: crash, index: 1}
    - {step: 1, at: 6s, action: restart-instance, app: generator}
    - {step: 1, at: 7s, action: restart-router}
`)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := []Fault{
		{Step: 1, At: 20 * time.Second, Action: FaultEvacuate, Cell: "cell-1", Field: "ramp.faults[0]"},
		{Step: 1, At: 10 * time.Second, Action: FaultCrash, App: FaultApp, Index: 1, Field: "ramp.faults[1]"},
		{Step: 0, At: 6 * time.Second, Action: FaultRestartInstance, App: FaultGenerator, Field: "ramp.faults[2]"},
		{Step: 0, At: 7 * time.Second, Action: FaultRestartRouter, Field: "ramp.faults[3]"},
	}
	if !reflect.DeepEqual(s.Ramp.Faults, want) {
		t.Fatalf("faults\n%+v\nwant\n%+v", s.Ramp.Faults, want)
	}
	if got := s.Ramp.FaultsIn(1); len(got) != 2 || got[0].Action != FaultCrash || got[1].Action != FaultEvacuate {
		t.Errorf("faults in step 2 %+v, want the crash then the evacuation", got)
	}
	if d := want[1].Describe(); d != "crash of instance 1 of the app under test, 10s into step 2" {
		t.Errorf("describe %q", d)
	}
	if !FaultCrash.NeedsChaos() || FaultRestartInstance.NeedsChaos() {
		t.Error("only restart-instance works without the chaos API")
	}
}

// TestFaultErrors: each wrong fault is a problem at its line and field.
func TestFaultErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, faults, want string }{
		{"unknown action", "    - {step: 1, at: 10s, action: kill}\n", "spec.yml:16:26: ramp.faults[0].action: must be one of restart-instance, crash, oom, evacuate, restart-router"},
		{"step beyond the ramp", "    - {step: 3, at: 10s, action: crash}\n", "ramp.faults[0].step: must be one of the ramp's steps, 1 to 2, got 3"},
		{"at after the step", "    - {step: 1, at: 30s, action: crash}\n", "ramp.faults[0].at: must be before the step's end (hold 30s), got 30s"},
		{"at in the warm-up", "    - {step: 1, at: 2s, action: crash}\n", "ramp.faults[0].at: must be after the step's warm-up (5s)"},
		{"index beyond the instances", "    - {step: 1, at: 10s, action: oom, index: 3}\n", "ramp.faults[0].index: must be an instance of variant a's app in step 1: it runs 3 instance(s) (indexes 0 to 2), got 3"},
		{"generator index", "    - {step: 1, at: 10s, action: crash, app: generator, index: 3}\n", "ramp.faults[0].index: must be an instance step 1 has: it runs 3 generator instance(s)"},
		{"evacuate without cell", "    - {step: 1, at: 10s, action: evacuate}\n", "ramp.faults[0].cell: is required with action evacuate"},
		{"cell without evacuate", "    - {step: 1, at: 10s, action: crash, cell: c}\n", "ramp.faults[0].cell: only valid with action evacuate"},
		{"index with the router", "    - {step: 1, at: 10s, action: restart-router, index: 1}\n", "ramp.faults[0].index: only valid with actions restart-instance, crash and oom"},
		{"missing at", "    - {step: 1, action: crash}\n", "ramp.faults[0].at: is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("spec.yml", []byte(faultSpec(tc.faults)), t.TempDir())
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err %v, want spec errors", err)
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || errs[0].Line != 16 {
				t.Errorf("errors\n%v\nwant one at line 16 containing\n%s", err, tc.want)
			}
		})
	}
}

// TestFaultOnURLVariant: an instance fault of the app under test needs a pushed app.
func TestFaultOnURLVariant(t *testing.T) {
	t.Parallel()
	y := "version: 1\nname: f\nvariants:\n  - name: a\n    url: http://127.0.0.1:1\nworkload:\n  model: open\n  rate: 1\n  requests: [{name: r, path: /}]\n" +
		"ramp:\n  rates: [1]\n  hold: 10s\n  faults:\n    - {step: 1, at: 5s, action: crash}\n"
	_, err := Parse("spec.yml", []byte(y), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "spec.yml:14:") || !strings.Contains(err.Error(), "ramp.faults[0].action: crash hits an instance of the app under test, but variant a has a url") {
		t.Errorf("err %v", err)
	}
}
