package cc

import "testing"

// A flag keeps what `cf enable-feature-flag` / `disable-feature-flag` set, across a
// restart of the foundation, and the others keep CC's defaults.
func TestFeatureFlagsAreSetAndKept(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir)
	if got := e.must(200, "GET", "/v3/feature_flags/diego_docker", nil)["enabled"]; got != false {
		t.Fatalf("diego_docker by default: enabled %v, want false", got)
	}
	e.must(200, "PATCH", "/v3/feature_flags/diego_docker", map[string]any{"enabled": true})
	e.must(200, "PATCH", "/v3/feature_flags/app_scaling", map[string]any{"enabled": false, "custom_error_message": "no"})
	e = newEnv(t, dir)
	want := map[string]bool{"diego_docker": true, "app_scaling": false, "route_creation": true}
	flags := e.must(200, "GET", "/v3/feature_flags?per_page=100", nil)["resources"].([]any)
	if len(flags) != len(defaultFeatureFlags) {
		t.Errorf("%d flags listed, want %d", len(flags), len(defaultFeatureFlags))
	}
	for _, f := range flags {
		f := f.(map[string]any)
		if w, ok := want[f["name"].(string)]; ok && f["enabled"] != w {
			t.Errorf("%s: enabled %v, want %v", f["name"], f["enabled"], w)
		}
	}
	if got := e.must(200, "GET", "/v3/feature_flags/app_scaling", nil)["custom_error_message"]; got != "no" {
		t.Errorf("custom_error_message %v, want no", got)
	}
	e.must(404, "PATCH", "/v3/feature_flags/warp_drive", map[string]any{"enabled": true})
}
