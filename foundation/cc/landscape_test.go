package cc

import (
	"path"
	"strings"
	"testing"
)

// TestLandscapeLifecycle walks a landscape through what terraform/ does on apply and
// destroy, checks that the deletes CC refuses are refused, and that deleting a space or
// an org deletes what is in it, as on CC.
func TestLandscapeLifecycle(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ref := func(guid string) map[string]any { return map[string]any{"data": map[string]any{"guid": guid}} }
	// job asserts that a delete answered 202 with a job in the given state, and returns
	// the job's error detail.
	job := func(method, p, state string) string {
		t.Helper()
		code, out, h := e.do(method, p, nil)
		if code != 202 {
			t.Fatalf("%s %s = %d %v, want 202", method, p, code, out)
		}
		j := e.must(200, "GET", "/v3/jobs/"+path.Base(h.Get("Location")), nil)
		if j["state"] != state {
			t.Fatalf("%s %s: job %v, want %s", method, p, j, state)
		}
		detail, _ := get(j, "errors").([]any)
		if len(detail) == 0 {
			return ""
		}
		return get(detail[0], "detail").(string)
	}

	org := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "bench"})["guid"].(string)
	e.must(422, "POST", "/v3/organizations", map[string]any{"name": "bench"})
	quota := e.must(201, "POST", "/v3/organization_quotas", map[string]any{"name": "bench-quota", "apps": map[string]any{"total_memory_in_mb": 2048},
		"relationships": map[string]any{"organizations": map[string]any{"data": []any{map[string]any{"guid": org}}}}})["guid"].(string)
	if got := get(e.must(200, "GET", "/v3/organizations/"+org, nil), "relationships", "quota", "data", "guid"); got != quota {
		t.Errorf("org's quota = %v, want %s", got, quota)
	}
	if got := first(e.must(200, "GET", "/v3/organization_quotas?organization_guids="+org, nil))["name"]; got != "bench-quota" {
		t.Errorf("quota listed for the org: %v", got)
	}
	seg := e.must(201, "POST", "/v3/isolation_segments", map[string]any{"name": "bench-seg"})["guid"].(string)
	e.must(200, "POST", "/v3/isolation_segments/"+seg+"/relationships/organizations", map[string]any{"data": []any{map[string]any{"guid": org}}})
	space := e.must(201, "POST", "/v3/spaces", map[string]any{"name": "apps", "relationships": map[string]any{"organization": ref(org)}})["guid"].(string)
	e.must(200, "PATCH", "/v3/spaces/"+space+"/relationships/isolation_segment", ref(seg))
	if e.must(200, "GET", "/v3/spaces/"+space+"/features/ssh", nil)["enabled"] != true {
		t.Error("ssh is not enabled in a new space, as CC's allow_ssh default has it")
	}
	e.must(200, "PATCH", "/v3/spaces/"+space+"/features/ssh", map[string]any{"enabled": false})
	if e.must(200, "GET", "/v3/spaces/"+space+"/features/ssh", nil)["enabled"] != false {
		t.Error("ssh still enabled after PATCH enabled=false")
	}
	e.must(422, "PATCH", "/v3/spaces/"+space+"/features/ssh", map[string]any{})

	// Out of order: each refused, nothing lost.
	for _, c := range []struct{ method, path, want string }{
		{"DELETE", "/v3/organization_quotas/" + quota, "This quota is applied to one or more organizations"},
		{"DELETE", "/v3/isolation_segments/" + seg, "Revoke all entitlements"},
		{"DELETE", "/v3/isolation_segments/" + seg + "/relationships/organizations/" + org, "has spaces assigned"},
	} {
		code, out, _ := e.do(c.method, c.path, nil)
		if code != 422 || !strings.Contains(get(out["errors"].([]any)[0], "detail").(string), c.want) {
			t.Errorf("%s %s = %d %v, want 422 %q", c.method, c.path, code, out, c.want)
		}
	}

	// A space goes with its apps and service instances (a run leaves its apps behind).
	app := e.must(201, "POST", "/v3/apps", map[string]any{"name": "left", "relationships": map[string]any{"space": ref(space)}})["guid"].(string)
	plan := first(e.must(200, "GET", "/v3/service_plans?names=small&service_offering_names=postgres", nil))["guid"].(string)
	code, out, _ := e.do("POST", "/v3/service_instances", map[string]any{"type": "managed", "name": "db",
		"relationships": map[string]any{"space": ref(space), "service_plan": ref(plan)}})
	if code != 202 {
		t.Fatalf("create service instance = %d %v", code, out)
	}
	instance := first(e.must(200, "GET", "/v3/service_instances?names=db", nil))["guid"].(string)
	// As in CC v3, deleting an instance deletes its bindings (a run binds the results
	// database to its generators and tunnel, which terraform destroy does not delete).
	e.must(201, "POST", "/v3/service_credential_bindings", map[string]any{"type": "app",
		"relationships": map[string]any{"app": ref(app), "service_instance": ref(instance)}})
	job("DELETE", "/v3/service_instances/"+instance, "COMPLETE")
	if got := e.must(200, "GET", "/v3/service_credential_bindings?app_guids="+app, nil)["resources"]; len(got.([]any)) != 0 {
		t.Errorf("bindings left after deleting their instance: %v", got)
	}
	code, out, _ = e.do("POST", "/v3/service_instances", map[string]any{"type": "managed", "name": "db",
		"relationships": map[string]any{"space": ref(space), "service_plan": ref(plan)}})
	if code != 202 {
		t.Fatalf("create service instance = %d %v", code, out)
	}
	instance = first(e.must(200, "GET", "/v3/service_instances?names=db", nil))["guid"].(string)
	job("DELETE", "/v3/spaces/"+space, "COMPLETE")
	e.must(404, "GET", "/v3/spaces/"+space, nil)
	e.must(404, "GET", "/v3/apps/"+app, nil)
	e.must(404, "GET", "/v3/service_instances/"+instance, nil)
	if code, _, _ := e.do("DELETE", "/v3/isolation_segments/"+seg+"/relationships/organizations/"+org, nil); code != 204 {
		t.Fatalf("revoke = %d", code)
	}
	if code, _, _ := e.do("DELETE", "/v3/isolation_segments/"+seg, nil); code != 204 {
		t.Fatalf("delete segment = %d", code)
	}
	other := e.must(201, "POST", "/v3/spaces", map[string]any{"name": "loadgen", "relationships": map[string]any{"organization": ref(org)}})["guid"].(string)
	job("DELETE", "/v3/organizations/"+org, "COMPLETE")
	e.must(404, "GET", "/v3/organizations/"+org, nil)
	e.must(404, "GET", "/v3/spaces/"+other, nil)
	job("DELETE", "/v3/organization_quotas/"+quota, "COMPLETE")
	e.must(404, "GET", "/v3/organization_quotas/"+quota, nil)
}
