package cc

import (
	"testing"
	"time"
)

// A build fails with CC's NoAppDetectedError when no lifecycle detects the app, and
// with a StagingError naming the cause otherwise.
func TestBuildErrors(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	for _, c := range []struct{ buildpack, want string }{
		{"undetected_for_test", "NoAppDetectedError - An app was not successfully detected by any available buildpack"},
		{"php_buildpack", "StagingError - Staging error: " + errUnsupportedForTest.Error()},
	} {
		app := e.must(201, "POST", "/v3/apps", map[string]any{"name": "fails-" + c.buildpack,
			"lifecycle":     map[string]any{"type": "buildpack", "data": map[string]any{"buildpacks": []string{c.buildpack}}},
			"relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}})["guid"].(string)
		pkg := e.must(201, "POST", "/v3/packages", map[string]any{"type": "bits", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}})["guid"].(string)
		body, ctype := zipUpload(e.t)
		e.upload("/v3/packages/"+pkg+"/upload", body, ctype)
		build := e.must(201, "POST", "/v3/builds", map[string]any{"package": map[string]any{"guid": pkg}})["guid"].(string)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			b := e.must(200, "GET", "/v3/builds/"+build, nil)
			if b["state"] == BuildFailed {
				if b["error"] != c.want {
					t.Errorf("%s: build error %q, want %q", c.buildpack, b["error"], c.want)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: build %v, want FAILED", c.buildpack, b["state"])
			}
		}
	}
}
