package engine

import (
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func checkF64(v float64) *float64 { return &v }

// wantFinding fails unless f matches: nil when check is "", else that check at level
// with every part in its message.
func wantFinding(t *testing.T, f *Finding, check string, level spec.CheckLevel, parts ...string) {
	t.Helper()
	if check == "" {
		if f != nil {
			t.Fatalf("unexpected finding %+v", *f)
		}
		return
	}
	if f == nil {
		t.Fatalf("no finding, want %s at %s", check, level)
	}
	if f.Check != check || f.Level != level {
		t.Fatalf("finding %s at %s, want %s at %s", f.Check, f.Level, check, level)
	}
	for _, p := range parts {
		if !strings.Contains(f.Message, p) {
			t.Errorf("message %q lacks %q", f.Message, p)
		}
	}
}

func TestCheckColocation(t *testing.T) {
	t.Parallel()
	ih := func(app string, idx int, host string) resultsdb.InstanceHost {
		return resultsdb.InstanceHost{App: app, Index: idx, Host: host}
	}
	apps := []resultsdb.InstanceHost{ih("api", 0, "10.0.0.1"), ih("api", 1, "10.0.0.2"), ih("api", 2, "10.0.0.1"), ih("worker", 0, "10.0.0.5")}
	cases := []struct {
		name  string
		level spec.CheckLevel
		apps  []resultsdb.InstanceHost
		gens  []resultsdb.InstanceHost
		want  spec.CheckLevel // "" for no finding
		parts []string
	}{
		{"hosts apart", spec.CheckFail, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.3"), ih("gen", 1, "10.0.0.4")}, "", nil},
		{"one shared host at fail", spec.CheckFail, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.3"), ih("gen", 1, "10.0.0.1")},
			spec.CheckFail, []string{"share a host: 10.0.0.1 runs app api/0, api/2 and generator gen/1.", "Try: "}},
		{"every shared host is listed, sorted, at warn", spec.CheckWarn, apps,
			[]resultsdb.InstanceHost{ih("gen", 3, "10.0.0.5"), ih("gen", 1, "10.0.0.1"), ih("gen", 0, "10.0.0.1"), ih("gen", 2, "10.0.0.9")},
			spec.CheckWarn, []string{"share 2 hosts: 10.0.0.1 runs app api/0, api/2 and generator gen/0, gen/1; 10.0.0.5 runs app worker/0 and generator gen/3."}},
		{"off", spec.CheckOff, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
		{"unset level is off", "", apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
		{"unknown hosts are no host", spec.CheckFail, []resultsdb.InstanceHost{ih("api", 0, "")}, []resultsdb.InstanceHost{ih("gen", 0, "")}, "", nil},
		{"no generators", spec.CheckFail, apps, nil, "", nil},
		{"no app instances", spec.CheckFail, nil, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := CheckColocation(c.level, c.apps, c.gens)
			if c.want == "" {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, ColocationCheck, c.want, c.parts...)
		})
	}
}

func TestCheckGeneratorCPU(t *testing.T) {
	t.Parallel()
	gen := func(cpu float64, ent *float64) resultsdb.AppMetrics {
		return resultsdb.AppMetrics{App: "gen", Instances: 3, Polls: 4, MeanCPU: cpu, MaxCPU: cpu, MeanEntitlement: ent, MaxEntitlement: ent}
	}
	cases := []struct {
		name  string
		level spec.CheckLevel
		gen   resultsdb.AppMetrics
		trips bool
		parts []string
	}{
		{"entitlement under the limit", spec.CheckWarn, gen(1.5, checkF64(0.79)), false, nil},
		{"entitlement exactly at the limit", spec.CheckWarn, gen(0.1, checkF64(0.8)), true,
			[]string{"generator gen (3 instances) used on average 80% of its CPU entitlement", "may be the bottleneck", "more generator instances", "memory"}},
		{"entitlement over", spec.CheckWarn, gen(0.1, checkF64(1.7)), true, []string{"170% of its CPU entitlement"}},
		{"entitlement decides over cores when known", spec.CheckWarn, gen(0.95, checkF64(0.5)), false, nil},
		{"unknown entitlement, cores under the limit", spec.CheckWarn, gen(0.89, nil), false, nil},
		{"unknown entitlement, cores exactly at the limit", spec.CheckWarn, gen(0.9, nil), true, []string{"0.90 of a core, entitlement unknown"}},
		{"fail is clamped to warn", spec.CheckFail, gen(0.1, checkF64(0.9)), true, nil},
		{"off", spec.CheckOff, gen(2, checkF64(2)), false, nil},
		{"unset level is off", "", gen(2, checkF64(2)), false, nil},
		{"no usage in the step", spec.CheckWarn, resultsdb.AppMetrics{App: "gen"}, false, nil},
		{"one instance", spec.CheckWarn, resultsdb.AppMetrics{App: "gen", Instances: 1, Polls: 1, MeanCPU: 1}, true, []string{"(1 instance)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := CheckGeneratorCPU(c.level, c.gen)
			if !c.trips {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, GeneratorCPUCheck, spec.CheckWarn, c.parts...)
		})
	}
}

func TestCheckFlatThroughput(t *testing.T) {
	t.Parallel()
	step := func(idx, instances, users int, rps float64) resultsdb.StepSummary {
		return resultsdb.StepSummary{Variant: "java", Step: idx, Instances: instances, Users: users, Count: int64(rps * 60), Throughput: rps}
	}
	app := func(cpu float64, ent *float64) resultsdb.AppMetrics {
		return resultsdb.AppMetrics{App: "api", Instances: 2, Polls: 6, MeanCPU: cpu, MaxCPU: cpu, MeanEntitlement: ent}
	}
	prev := step(1, 2, 10, 100)
	idle := app(0.2, checkF64(0.3))
	cases := []struct {
		name      string
		level     spec.CheckLevel
		prev, cur resultsdb.StepSummary
		app       resultsdb.AppMetrics
		trips     bool
		parts     []string
	}{
		{"flat and idle", spec.CheckWarn, prev, step(2, 4, 10, 103), idle, true,
			[]string{"variant java step 2", "from 20 users (2 instances × 10) to 40 (4 × 10)", "from 100.0 to 103.0 req/s (+3.0%",
				"app api used on average 30% of its CPU entitlement", "outside the app", "router", "connection pool", "network"}},
		{"throughput falls", spec.CheckWarn, prev, step(2, 4, 10, 80), idle, true, []string{"(-20.0%"}},
		{"gain exactly at 10% is growth", spec.CheckWarn, prev, step(2, 4, 10, 110), idle, false, nil},
		{"gain just under 10%", spec.CheckWarn, prev, step(2, 4, 10, 109.9), idle, true, nil},
		{"app busy by entitlement", spec.CheckWarn, prev, step(2, 4, 10, 100), app(0.1, checkF64(0.5)), false, nil},
		{"app just under half its entitlement", spec.CheckWarn, prev, step(2, 4, 10, 100), app(3, checkF64(0.49)), true, nil},
		{"unknown entitlement, app idle", spec.CheckWarn, prev, step(2, 4, 10, 100), app(0.49, nil), true, []string{"0.49 of a core, entitlement unknown"}},
		{"unknown entitlement, app at half a core", spec.CheckWarn, prev, step(2, 4, 10, 100), app(0.5, nil), false, nil},
		{"more users per instance is more load", spec.CheckWarn, prev, step(2, 2, 20, 100), idle, true, nil},
		{"same load", spec.CheckWarn, prev, step(2, 1, 20, 100), idle, false, nil},
		{"less load", spec.CheckWarn, prev, step(2, 1, 10, 50), idle, false, nil},
		{"first step: no previous", spec.CheckWarn, resultsdb.StepSummary{}, step(0, 2, 10, 100), idle, false, nil},
		{"previous step served nothing", spec.CheckWarn, step(0, 1, 10, 0), step(1, 2, 10, 0), idle, false, nil},
		{"open loop has no users", spec.CheckWarn, step(0, 1, 0, 100), step(1, 2, 0, 100), idle, false, nil},
		{"no app metrics", spec.CheckWarn, prev, step(2, 4, 10, 100), resultsdb.AppMetrics{App: "api"}, false, nil},
		{"fail is clamped to warn", spec.CheckFail, prev, step(2, 4, 10, 100), idle, true, nil},
		{"off", spec.CheckOff, prev, step(2, 4, 10, 100), idle, false, nil},
		{"unset level is off", "", prev, step(2, 4, 10, 100), idle, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := CheckFlatThroughput(c.level, c.prev, c.cur, c.app)
			if !c.trips {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, FlatThroughputCheck, spec.CheckWarn, c.parts...)
		})
	}
}
