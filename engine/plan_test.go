package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
