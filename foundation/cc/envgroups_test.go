package cc

import "testing"

// TestEnvGroups: the running group's variables reach an app's instances and the
// staging group's its staging, under the app's own, which win; cf env shows both.
func TestEnvGroups(t *testing.T) {
	e := newEnv(t, t.TempDir())
	e.must(200, "PATCH", "/v3/environment_variable_groups/running", map[string]any{"var": map[string]any{"REGION": "local", "TIER": "group", "ZONE": "z1"}})
	e.must(200, "PATCH", "/v3/environment_variable_groups/staging", map[string]any{"var": map[string]any{"MIRROR": "http://mirror"}})
	e.must(200, "PATCH", "/v3/environment_variable_groups/running", map[string]any{"var": map[string]any{"REGION": nil}})
	app := e.push(e.space("apps"), "applications:\n- name: web\n  env: {TIER: app}\n")

	e.rt.mu.Lock()
	spec, staged := e.rt.specs[app], e.rt.stageEnv
	e.rt.mu.Unlock()
	if spec.Env["ZONE"] != "z1" || spec.Env["TIER"] != "app" || spec.Env["REGION"] != "" {
		t.Errorf("instance env %v: want the group's ZONE, TIER=app (the app's wins) and no REGION (removed from the group)", spec.Env)
	}
	if staged["MIRROR"] != "http://mirror" || staged["TIER"] != "app" || staged["ZONE"] != "" {
		t.Errorf("staging env %v: want the staging group's MIRROR and the app's TIER, not the running group's ZONE", staged)
	}
	env := e.must(200, "GET", "/v3/apps/"+app+"/env", nil)
	if get(env, "running_env_json", "TIER") != "group" || get(env, "staging_env_json", "MIRROR") != "http://mirror" {
		t.Errorf("cf env: %v", env)
	}
}
