package engine

import (
	"testing"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestCheckNeighbours(t *testing.T) {
	t.Parallel()
	on := spec.DefaultChecks().Neighbours
	noisy := platform.AppCPU{Name: "stub-noisy", Space: "apps", Instances: 1, Cores: 0.93, Hosts: []string{"cell-apps"}}
	old := platform.AppCPU{Name: "bulletin-java-30", Space: "apps", Instances: 2, Cores: 0.25, Hosts: []string{"cell-a", "cell-b"}}
	idle := platform.AppCPU{Name: "other-tunnel", Space: "loadgen", Instances: 1, Cores: 0.004}
	for _, tc := range []struct {
		name  string
		c     spec.Neighbours
		apps  []platform.AppCPU
		check string
		parts []string
		named []string
	}{
		{"none", on, nil, "", nil, nil},
		// Idle apps beside the run are no finding: a clean run trips none.
		{"idle apps only", on, []platform.AppCPU{idle, {Name: "stopped-ish", Cores: 0}}, "", nil, nil},
		{"one busy app", on, []platform.AppCPU{idle, noisy}, NeighboursCheck,
			[]string{"an app that is not part of the run used CPU in the step", "stub-noisy (space apps) 0.93 cores on 1 instance(s) on cell-apps", "Try: cf stop"},
			[]string{"stub-noisy"}},
		{"busiest first, the total", on, []platform.AppCPU{old, idle, noisy}, NeighboursCheck,
			[]string{"2 apps that are not part of the run used 1.18 cores in all in the step: stub-noisy", "; bulletin-java-30 (space apps) 0.25 cores on 2 instance(s) on cell-a, cell-b"},
			[]string{"stub-noisy", "bulletin-java-30"}},
		{"except", spec.Neighbours{Level: spec.CheckWarn, CPUAbove: 0.1, Except: []string{"stub-noisy"}}, []platform.AppCPU{noisy, old}, NeighboursCheck,
			[]string{"an app that is not part of the run used CPU in the step: bulletin-java-30"}, []string{"bulletin-java-30"}},
		{"threshold", spec.Neighbours{Level: spec.CheckWarn, CPUAbove: 0.5}, []platform.AppCPU{old}, "", nil, nil},
		{"off", spec.Neighbours{Level: spec.CheckOff, CPUAbove: 0.1}, []platform.AppCPU{noisy}, "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := CheckNeighbours(tc.c, tc.apps, "in the step")
			wantFinding(t, f, tc.check, spec.CheckWarn, tc.parts...)
			if f == nil {
				return
			}
			apps := f.Evidence["apps"].([]map[string]any)
			if len(apps) != len(tc.named) {
				t.Fatalf("evidence apps %v, want %v", apps, tc.named)
			}
			total := 0.0
			for i, a := range apps {
				if a["app"] != tc.named[i] {
					t.Errorf("evidence app %d is %v, want %s", i, a["app"], tc.named[i])
				}
				total += a["cpu_cores"].(float64)
			}
			if f.Evidence["cpu_cores"] != total || f.Evidence["cpu_above"] != tc.c.CPUAbove {
				t.Errorf("evidence total %v (apps add up to %v), threshold %v", f.Evidence["cpu_cores"], total, f.Evidence["cpu_above"])
			}
		})
	}
}

// TestOursIsTheRunsApps: the run's own apps (apps under test in the apps space; the
// generator apps, tunnel, relay and drain of this spec in the generators space) are
// never neighbours; an app of the same name in another space is.
func TestOursIsTheRunsApps(t *testing.T) {
	t.Parallel()
	sp := &spec.Spec{Name: "study"}
	for _, oneSpace := range []bool{false, true} {
		land := &platform.Landscape{Apps: platform.Space{GUID: "s-apps"}, Generators: platform.Space{GUID: "s-gen"}}
		if oneSpace {
			land.Generators.GUID = land.Apps.GUID
		}
		d := &Deployment{Landscape: land, ownApps: []string{TunnelApp(sp), RelayApp(sp), DrainApp(sp)},
			variants: map[string]*deployedVariant{
				"java": {app: &platform.App{Name: "bulletin-java"}, fleet: &cfFleet{app: &platform.App{Name: GeneratorApp(sp, "java")}}},
				"site": {fleet: &cfFleet{app: &platform.App{Name: GeneratorApp(sp, "site")}}},
			}, order: []string{"java", "site"}}
		for _, tc := range []struct {
			space, name string
			want        bool
		}{
			{"s-apps", "bulletin-java", true},
			{land.Generators.GUID, "study-gen-java", true},
			{land.Generators.GUID, "study-gen-site", true},
			{land.Generators.GUID, "study-tunnel", true},
			{land.Generators.GUID, "study-relay", true},
			{land.Generators.GUID, "study-drain", true},
			{"s-apps", "bulletin-node", false},
			{"s-other", "bulletin-java", false},
			{land.Generators.GUID, "other-tunnel", false},
		} {
			if got := d.ours(tc.space, tc.name); got != tc.want {
				t.Errorf("one space %v: ours(%s, %s) = %v, want %v", oneSpace, tc.space, tc.name, got, tc.want)
			}
		}
	}
}
