package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

type fakeQuotas []platform.Quota

func (f fakeQuotas) Quotas(context.Context, string, ...string) ([]platform.Quota, error) {
	return f, nil
}

// A matrix of three 800 MB apps and a ramp to 4 generators: the plan counts every app
// (they all run for the whole run) and one variant's generators, and a space quota of
// 2 GB refuses it in one line saying by how much.
func TestPlanAgainstLimitsAndQuotas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yml"), []byte("applications:\n- name: app\n  memory: 800M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := `version: 1
name: plan
landscape: {org: o, apps: {space: a}, generators: {space: g}}
results_db: {service_instance: r}
variants:
  - name: pool
    manifest: app.yml
    matrix: {env: {POOL: [30, 60, 90]}}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 4, hold: 10s}
limits: {duration: 5m, memory: 10G, instances: 7}
`
	sp, err := spec.Parse(filepath.Join(dir, "plan.yml"), []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	p := PlanOf(sp)
	if p.Variants != 3 || p.Levels != 4 || p.Duration.Seconds() != 120 || p.Apps.MemoryMB != 2400 || p.Apps.Instances != 3 ||
		p.Generators.MemoryMB != 4*256+64 || p.Generators.Instances != 5 {
		t.Fatalf("plan %+v", p)
	}
	if s := p.String(); !strings.Contains(s, "space a at its peak: 2400 MB in 3 instance(s)") {
		t.Errorf("plan line %q", s)
	}
	two, ten := 2048, 10
	_, err = Preflight(context.Background(), sp, nil, fakeQuotas{{Of: "org o", Name: "default"}, {Of: "space a", Name: "small", TotalMemoryMB: &two},
		{Of: "space g", Name: "gen", TotalInstances: &ten}})
	var errs spec.Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("Preflight = %v, want the instances limit and the space quota", err)
	}
	want := []string{
		"plan.yml:11:37: limits.instances: the plan runs 8 instances at its peak (apps 3, generators and tunnel 5), 1 over the limit 7",
		"plan.yml:3:21: landscape.apps: the plan holds 2400 MB in space a at its peak, 352 MB over the quota \"small\" of space a (2048 MB): drop variants",
	}
	for i, e := range errs {
		if got := strings.TrimPrefix(e.Error(), dir+"/"); !strings.HasPrefix(got, want[i]) {
			t.Errorf("problem %d = %q\nwant prefix    %q", i+1, got, want[i])
		}
	}
}

// Repeats multiply the time under load, and limits.duration says so.
func TestPlanCountsRepeats(t *testing.T) {
	t.Parallel()
	text := `version: 1
name: rep
repeat: 3
variants:
  - {name: a, url: "http://127.0.0.1:1"}
  - {name: b, url: "http://127.0.0.1:2"}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 2, hold: 10s}
limits: {duration: 1m}
`
	sp, err := spec.Parse("rep.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	p := PlanOf(sp)
	if p.Repeats != 3 || p.Duration.Seconds() != 120 {
		t.Fatalf("plan %+v, want 3 repeats and 2 variants × 2 levels × 3 repeats × 10 s = 2m0s", p)
	}
	if s := p.String(); !strings.Contains(s, "2 variant(s) × 2 level(s) × 3 repeats, interleaved, at least 2m0s under load") {
		t.Errorf("plan line %q", s)
	}
	_, err = Preflight(context.Background(), sp, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "rep.yml:9:10: limits.duration: the plan runs at least 2m0s under load (2 variant(s) × 2 level(s) × 3 repeats × 10s hold), 1m0s over the limit 1m0s") {
		t.Errorf("Preflight = %v, want limits.duration refusing 1m0s too much", err)
	}
}

// A ramp of app instances pushes the app with the first level's instances and scales
// one variant at a time to the last level's: the plan's peak counts that, and a space
// quota counts what apps already running there hold, but not an app the run replaces.
func TestPlanOfAppInstancesAgainstWhatIsRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yml"), []byte("applications:\n- name: app\n  memory: 800M\n- name: other\n  memory: 200M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := `version: 1
name: inst
landscape: {org: o, apps: {space: a}, generators: {space: g}}
results_db: {service_instance: r}
variants:
  - {name: big, manifest: app.yml, app: app}
  - {name: small, manifest: app.yml, app: other}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {app_instances: [1, 3], generators: 2, hold: 10s}
`
	sp, err := spec.Parse(filepath.Join(dir, "inst.yml"), []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	p := PlanOf(sp)
	// Both apps at 1 instance, and big's 2 more while its ramp is at 3.
	if p.Levels != 2 || p.Apps.Instances != 4 || p.Apps.MemoryMB != 800+200+2*800 || p.Generators.Instances != 6+1 {
		t.Fatalf("plan %+v, want apps 4 instances and 2600 MB, generators 6 and the tunnel", p)
	}
	if s := p.String(); !strings.Contains(s, "levels: app instances 1, 3, 2 generator instance(s) per app instance") {
		t.Errorf("plan line %q", s)
	}
	quota := 3000
	running := []platform.AppUsage{{Name: "app", Space: "a", MemoryMB: 800, Instances: 1}, // replaced by the push
		{Name: "db-admin", Space: "a", MemoryMB: 512, Instances: 2}}
	_, err = Preflight(context.Background(), sp, nil, fakeQuotas{{Of: "space a", Name: "q", TotalMemoryMB: &quota, Apps: running}})
	want := `landscape.apps: the plan holds 2600 MB in space a at its peak beside 512 MB the apps already running hold (db-admin in a), 112 MB over the quota "q" of space a (3000 MB)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Preflight = %v\nwant %q", err, want)
	}
}

// TestPlanHoldsTheRelay: a ramp to 20 generator instances pushes a relay (relay auto)
// and the plan counts its app, memory and instance; at 19 it does not.
func TestPlanHoldsTheRelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max       int
		relay     bool
		wantMB    int
		wantInsts int
	}{
		{19, false, 19*generatorMemoryMB + tunnelMemoryMB, 20},
		{20, true, 20*generatorMemoryMB + tunnelMemoryMB + relayMemoryMB, 22},
	} {
		text := fmt.Sprintf(`version: 1
name: big
landscape: {org: o, apps: {space: a}, generators: {space: g}}
results_db: {service_instance: db}
variants:
  - {name: a, url: "http://127.0.0.1:1"}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {start: %d, max: %d, hold: 10s}
`, tc.max, tc.max)
		sp, err := spec.Parse("big.yml", []byte(text), ".")
		if err != nil {
			t.Fatal(err)
		}
		p := PlanOf(sp)
		if got := slices.Contains(p.Pushes, "big-relay"); got != tc.relay || p.Generators.MemoryMB != tc.wantMB || p.Generators.Instances != tc.wantInsts {
			t.Errorf("ramp to %d: pushes %v (relay %v, want %v), generators %d MB in %d instances, want %d MB in %d",
				tc.max, p.Pushes, got, tc.relay, p.Generators.MemoryMB, p.Generators.Instances, tc.wantMB, tc.wantInsts)
		}
	}
}

// The plan reads each manifest once, the cells of a matrix sharing it: judged again
// after the file is gone, the plan still holds it, and a session given the plan checks
// only what needs the foundation, against the quotas it reads there.
func TestThePlanHoldsTheManifests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	manifest := filepath.Join(dir, "app.yml")
	if err := os.WriteFile(manifest, []byte("applications:\n- name: app\n  memory: 800M\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := `version: 1
name: held
landscape: {org: o, apps: {space: a}, generators: {space: g}}
results_db: {service_instance: r}
variants:
  - name: pool
    manifest: app.yml
    matrix: {env: {POOL: [30, 60]}}
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 2, hold: 10s}
`
	sp, err := spec.Parse(filepath.Join(dir, "held.yml"), []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Preflight(context.Background(), sp, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.manifests) != 1 || p.Spec() != sp {
		t.Fatalf("plan of %d manifests for a matrix of one, of spec %p (want %p)", len(p.manifests), p.Spec(), sp)
	}
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	if errs := p.problems(context.Background(), nil, nil, false); len(errs) != 0 || p.Apps.MemoryMB != 1600 {
		t.Fatalf("the plan judged again without its file: %v, apps %d MB", errs, p.Apps.MemoryMB)
	}
	one := 1000
	errs := p.problems(context.Background(), nil, fakeQuotas{{Of: "space a", Name: "small", TotalMemoryMB: &one}}, true)
	if len(errs) != 1 || errs[0].Path != "landscape.apps" {
		t.Fatalf("the foundation's part: %v, want the apps space's quota only", errs)
	}
	other, err := spec.Parse(filepath.Join(dir, "held.yml"), []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunSession(context.Background(), sp, text, SessionConfig{Plan: PlanOf(other)}); err == nil || !strings.Contains(err.Error(), "another spec") {
		t.Errorf("a session given the plan of another spec: %v", err)
	}
}
