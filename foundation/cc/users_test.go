package cc

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestUsers: cf create-user (UAA's /Users, then CC's /v3/users), roles by username,
// cf login as the user, who sees only the orgs and spaces its roles name and may call
// nothing else; deleting it ends its tokens.
func TestUsers(t *testing.T) {
	e := newEnv(t, t.TempDir())
	admin := e.token
	scim := e.must(201, "POST", "/Users", map[string]any{"userName": "dev", "password": "s3cret", "origin": "uaa"})
	id := scim["id"].(string)
	if code, _, _ := e.do("POST", "/Users", map[string]any{"userName": "DEV", "password": "x"}); code != http.StatusConflict {
		t.Errorf("a second user dev: %d, want 409", code)
	}
	e.must(201, "POST", "/v3/users", map[string]any{"guid": id})
	if n := len(e.must(200, "GET", "/v3/users?usernames=dev", nil)["resources"].([]any)); n != 1 {
		t.Errorf("GET /v3/users?usernames=dev: %d users", n)
	}
	mine := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "mine"})["guid"].(string)
	other := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "other"})["guid"].(string)
	space := func(name, org string) string {
		return e.must(201, "POST", "/v3/spaces", map[string]any{"name": name, "relationships": map[string]any{"organization": map[string]any{"data": map[string]any{"guid": org}}}})["guid"].(string)
	}
	s1, s3 := space("s1", mine), space("s3", other)
	space("s2", mine)
	role := func(typ, where, guid string) (int, map[string]any) {
		code, out, _ := e.do("POST", "/v3/roles", map[string]any{"type": typ, "relationships": map[string]any{
			"user": map[string]any{"data": map[string]any{"username": "dev", "origin": "uaa"}}, where: map[string]any{"data": map[string]any{"guid": guid}}}})
		return code, out
	}
	if code, out := role("space_developer", "space", s3); code != 422 {
		t.Errorf("a space role without an org role: %d %v, want 422", code, out)
	}
	role("organization_user", "organization", other)
	role("space_auditor", "space", s3)
	role("organization_manager", "organization", mine)
	if code, out := role("organization_manager", "organization", mine); code != 422 || get(out["errors"].([]any)[0], "detail") != "User 'dev' already has 'organization_manager' role in organization 'mine'." {
		t.Errorf("the same role again: %d %v", code, out)
	}
	if code, _ := e.scopedToken("openid cloud_controller.read"); code != 200 {
		t.Fatal("the admin's read-only token")
	}

	if e.login("dev", "wrong") != "" {
		t.Error("a wrong password got a token")
	}
	e.token = e.login("dev", "s3cret")
	names := func(path string) []string {
		var out []string
		for _, r := range e.must(200, "GET", path, nil)["resources"].([]any) {
			out = append(out, get(r, "name").(string))
		}
		slices.Sort(out)
		return out
	}
	if got := names("/v3/organizations"); !slices.Equal(got, []string{"mine", "other"}) {
		t.Errorf("the user's orgs: %v, want mine and other", got)
	}
	if got := names("/v3/spaces"); !slices.Equal(got, []string{"s1", "s2", "s3"}) {
		t.Errorf("the user's spaces: %v, want s1, s2 (it manages mine) and s3 (its role)", got)
	}
	e.must(404, "GET", "/v3/organizations/"+cfbenchOrg(e, admin), nil)
	e.must(200, "GET", "/v3/spaces/"+s1, nil)
	for _, w := range []struct{ method, path string }{{"GET", "/v3/apps"}, {"GET", "/v3/roles"}, {"POST", "/v3/organizations"}, {"GET", "/Users"}} {
		if code, _, _ := e.do(w.method, w.path, map[string]any{"name": "x"}); code != http.StatusForbidden {
			t.Errorf("%s %s as the user = %d, want 403", w.method, w.path, code)
		}
	}
	if e.srv.Authenticated("bearer " + e.token) {
		t.Error("the user's token reads the Log Cache (every app's logs)")
	}

	user, refresh := e.token, e.grant(url.Values{"grant_type": {"password"}, "username": {"dev"}, "password": {"s3cret"}})["refresh_token"].(string)
	if e.grant(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})["access_token"] == nil {
		t.Error("the user's refresh token got no access token")
	}
	e.token = admin
	e.must(200, "DELETE", "/Users/"+id, nil)
	e.token = user
	if code, _, _ := e.do("GET", "/v3/organizations", nil); code != http.StatusUnauthorized {
		t.Errorf("a deleted user's token: %d, want 401", code)
	}
	if tok := e.grant(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); tok["access_token"] != nil {
		t.Errorf("a deleted user's refresh token got %v", tok)
	}
}

// grant posts form to the token endpoint as client cf and returns the answer.
func (e *env) grant(form url.Values) map[string]any {
	_, out := e.postToken(form)
	return out
}

// cfbenchOrg is the seeded org's guid, which the user has no role in.
func cfbenchOrg(e *env, admin string) string {
	saved := e.token
	e.token = admin
	defer func() { e.token = saved }()
	return first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"].(string)
}
