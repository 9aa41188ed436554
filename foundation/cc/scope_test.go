package cc

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// token asks the token endpoint for a token with scope (a password grant).
func (e *env) scopedToken(scope string) (int, string) {
	e.t.Helper()
	code, tok := e.postToken(url.Values{"grant_type": {"password"}, "username": {"admin"}, "password": {"pw"}, "scope": {scope}})
	if code == http.StatusOK && tok["scope"] != scope {
		e.t.Errorf("token for scope %q says scope %v", scope, tok["scope"])
	}
	access, _ := tok["access_token"].(string)
	return code, access
}

// postToken posts form to the token endpoint as client cf and returns the status and
// the answer.
func (e *env) postToken(form url.Values) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]any{}
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestTokenScopesAreEnforced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, t.TempDir())
	admin := e.token
	space := e.space("apps")

	code, readOnly := e.scopedToken("openid cloud_controller.read")
	if code != http.StatusOK {
		t.Fatalf("a read-only token: %d", code)
	}
	e.token = readOnly
	e.must(http.StatusOK, "GET", "/v3/apps", nil)
	for _, w := range []struct{ method, path string }{
		{"POST", "/v3/apps"}, {"PATCH", "/v3/spaces/" + space}, {"DELETE", "/v3/spaces/" + space},
	} {
		body := map[string]any{"name": "x", "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}}
		code, out, _ := e.do(w.method, w.path, body)
		if code != http.StatusForbidden || get(out, "errors") == nil || !strings.Contains(jsonOf(out), "CF-NotAuthorized") {
			t.Errorf("%s %s with a read-only token = %d %v, want 403 CF-NotAuthorized", w.method, w.path, code, out)
		}
	}

	_, writeOnly := e.scopedToken("cloud_controller.write")
	e.token = writeOnly
	if code, _, _ := e.do("GET", "/v3/apps", nil); code != http.StatusForbidden {
		t.Errorf("GET with a write-only token = %d, want 403", code)
	}
	if code, _ := e.scopedToken("cloud_controller.admin uaa.admin"); code != http.StatusBadRequest {
		t.Errorf("a token with a scope the user lacks = %d, want 400 invalid_scope", code)
	}
	e.token = admin
	e.must(http.StatusOK, "GET", "/v3/apps", nil)
	if !e.srv.Authenticated("bearer "+readOnly) || e.srv.Authenticated("bearer "+writeOnly) {
		t.Error("Authenticated (the Log Cache's check) must let read tokens read, and only them")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
