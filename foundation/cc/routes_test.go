package cc

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestRoutesAndDestinations: cf create-route, map-route, unmap-route and delete-route,
// as the router sees them.
func TestRoutesAndDestinations(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	app := e.push(space, "applications:\n- name: web\n")
	domain := first(e.must(200, "GET", "/v3/domains", nil))["guid"].(string)
	body := func(host string) map[string]any {
		return map[string]any{"host": host, "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}},
			"domain": map[string]any{"data": map[string]any{"guid": domain}}}}
	}
	route := e.must(201, "POST", "/v3/routes", body("Extra"))
	guid := route["guid"].(string)
	if route["url"] != "Extra.apps.localhost" || route["host"] != "Extra" {
		t.Errorf("route %v: want host Extra (its case kept, as CC does), url Extra.apps.localhost", route)
	}
	if code, out, _ := e.do("POST", "/v3/routes", body("extra")); code != 422 || !strings.Contains(get(out["errors"].([]any)[0], "detail").(string), "already exists") {
		t.Errorf("a second route extra: %d %v, want 422 already exists", code, out)
	}
	if code, _, _ := e.do("POST", "/v3/routes", body("no_underscores!")); code != 422 {
		t.Errorf("a bad host: status %d, want 422", code)
	}
	if _, _, ok := e.srv.Lookup("extra.apps.localhost", "/"); ok {
		t.Errorf("an unmapped route routes somewhere")
	}
	dests := e.must(200, "POST", "/v3/routes/"+guid+"/destinations", map[string]any{"destinations": []any{map[string]any{"app": map[string]any{"guid": app}}}})
	list := dests["destinations"].([]any)
	if len(list) != 1 || get(list[0], "app", "guid") != app {
		t.Fatalf("destinations %v", dests)
	}
	if got, _, ok := e.srv.Lookup("EXTRA.apps.localhost", "/"); !ok || got != app {
		t.Errorf("Lookup after map-route: %q %v, want %s", got, ok, app)
	}
	if n := len(e.must(200, "GET", "/v3/routes/"+guid+"/destinations", nil)["destinations"].([]any)); n != 1 {
		t.Errorf("GET destinations: %d", n)
	}
	if get(list[0], "protocol") != "http1" {
		t.Errorf("destination %v: want protocol http1", list[0])
	}
	other := e.push(space, "applications:\n- name: grpc\n  no-route: true\n")
	dests = e.must(200, "POST", "/v3/routes/"+guid+"/destinations", map[string]any{"destinations": []any{map[string]any{"app": map[string]any{"guid": other}, "protocol": "http2"}}})
	if d := dests["destinations"].([]any); len(d) != 2 || get(d[1], "app", "guid") != other || get(d[1], "protocol") != "http2" {
		t.Errorf("an http2 destination: %v", d)
	}
	if code, _, _ := e.do("POST", "/v3/routes/"+guid+"/destinations", map[string]any{"destinations": []any{map[string]any{"app": map[string]any{"guid": other}, "protocol": "tcp"}}}); code != 422 {
		t.Errorf("a tcp destination: %d, want 422", code)
	}
	e.must(204, "DELETE", "/v3/routes/"+guid+"/destinations/"+destinationGUID(guid, other), nil)
	dest := get(list[0], "guid").(string)
	if code, _, _ := e.do("DELETE", "/v3/routes/"+guid+"/destinations/"+dest, nil); code != http.StatusNoContent {
		t.Errorf("unmap: status %d, want 204", code)
	}
	if _, _, ok := e.srv.Lookup("extra.apps.localhost", "/"); ok {
		t.Errorf("the route still routes after unmap-route")
	}
	if code, _, h := e.do("DELETE", "/v3/routes/"+guid, nil); code != http.StatusAccepted || !strings.Contains(h.Get("Location"), "/v3/jobs/") {
		t.Errorf("delete-route: status %d, Location %q", code, h.Get("Location"))
	}
	e.must(404, "GET", "/v3/routes/"+guid, nil)
	org := first(e.must(200, "GET", "/v3/organizations", nil))["guid"].(string)
	if n := len(e.must(200, "GET", "/v3/organizations/"+org+"/domains", nil)["resources"].([]any)); n != 1 {
		t.Errorf("org domains: %d, want the shared apps domain", n)
	}
	if n := len(e.must(200, "GET", "/v3/service_route_bindings?route_guids="+guid, nil)["resources"].([]any)); n != 0 {
		t.Errorf("route service bindings: %d, want none", n)
	}
}

// TestRoles: cf create-space assigns the user roles in the new space; a role held
// already is the error the cf CLI treats as done.
func TestRoles(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	org := first(e.must(200, "GET", "/v3/organizations", nil))["guid"].(string)
	byName := map[string]any{"type": "space_developer", "relationships": map[string]any{
		"user": map[string]any{"data": map[string]any{"username": "admin", "origin": "uaa"}}, "space": map[string]any{"data": map[string]any{"guid": space}}}}
	role := e.must(201, "POST", "/v3/roles", byName)
	if get(role, "relationships", "user", "data", "guid") != userGUID || get(role, "relationships", "space", "data", "guid") != space {
		t.Errorf("role %v", role)
	}
	code, out, _ := e.do("POST", "/v3/roles", byName)
	if code != 422 || !strings.HasPrefix(get(out["errors"].([]any)[0], "detail").(string), "User 'admin' already has 'space_developer' role") {
		t.Errorf("the same role again: %d %v", code, out)
	}
	e.must(201, "POST", "/v3/roles", map[string]any{"type": "organization_user", "relationships": map[string]any{
		"user": map[string]any{"data": map[string]any{"guid": userGUID}}, "organization": map[string]any{"data": map[string]any{"guid": org}}}})
	if code, _, _ := e.do("POST", "/v3/roles", map[string]any{"type": "space_manager", "relationships": map[string]any{
		"user": map[string]any{"data": map[string]any{"username": "nobody"}}, "space": map[string]any{"data": map[string]any{"guid": space}}}}); code != 422 {
		t.Errorf("a role of an unknown user: status %d, want 422", code)
	}
	list := e.must(200, "GET", "/v3/roles?space_guids="+space+"&include=user", nil)
	if n := len(list["resources"].([]any)); n != 1 {
		t.Errorf("roles in the space: %d, want 1", n)
	}
	if users, _ := get(list, "included", "users").([]any); len(users) != 1 || get(users[0], "username") != "admin" {
		t.Errorf("included users %v", get(list, "included"))
	}
	e.must(202, "DELETE", "/v3/roles/"+role["guid"].(string), nil)
	if n := len(e.must(200, "GET", "/v3/roles?space_guids="+space, nil)["resources"].([]any)); n != 0 {
		t.Errorf("roles after delete: %d", n)
	}
	if e.must(200, "GET", "/v3/info", nil)["name"] != "cf-benchmark" {
		t.Errorf("/v3/info has no name")
	}
}

// TestRoutePaths: routes with a path (cf create-route --path, a manifest's
// host.domain/path) render, filter and route as CC and gorouter do: the longest
// path prefix of the request's, on whole segments.
func TestRoutePaths(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	web := e.push(space, "applications:\n- name: web\n  routes:\n  - route: shop.apps.localhost\n")
	api := e.push(space, "applications:\n- name: api\n  routes:\n  - route: shop.apps.localhost/API/v1\n")
	domain := first(e.must(200, "GET", "/v3/domains", nil))["guid"].(string)
	body := func(path string) map[string]any {
		return map[string]any{"host": "shop", "path": path, "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}},
			"domain": map[string]any{"data": map[string]any{"guid": domain}}}}
	}
	for path, want := range map[string]string{"cart": "Path must begin with /", "/": "Path cannot be exactly /",
		"/a?b": "Path cannot contain ?", "/API/v1": "Route already exists with host 'shop' and path '/API/v1' for domain 'apps.localhost'."} {
		if code, out, _ := e.do("POST", "/v3/routes", body(path)); code != 422 || get(out["errors"].([]any)[0], "detail") != want {
			t.Errorf("path %q: %d %v, want 422 %q", path, code, out, want)
		}
	}
	noHost := body("")
	noHost["host"] = ""
	if code, out, _ := e.do("POST", "/v3/routes", noHost); code != 422 || get(out["errors"].([]any)[0], "detail") != "Missing host. Routes in shared domains must have a host defined." {
		t.Errorf("a route without a host in the shared domain: %d %v", code, out)
	}
	r := e.must(201, "POST", "/v3/routes", body("/cart"))
	if r["path"] != "/cart" || r["url"] != "shop.apps.localhost/cart" {
		t.Errorf("route %v: want path /cart, url shop.apps.localhost/cart", r)
	}
	list := e.must(200, "GET", "/v3/routes?hosts=shop&paths=/API/v1", nil)["resources"].([]any)
	if len(list) != 1 || get(list[0], "url") != "shop.apps.localhost/API/v1" {
		t.Errorf("routes?paths=/API/v1: %v", list)
	}
	if n := len(e.must(200, "GET", "/v3/routes?hosts=shop&paths=", nil)["resources"].([]any)); n != 1 {
		t.Errorf("routes?paths= (the route without a path): %d, want 1", n)
	}
	e.must(200, "POST", "/v3/routes/"+r["guid"].(string)+"/destinations", map[string]any{"destinations": []any{map[string]any{"app": map[string]any{"guid": api}, "protocol": "http2"}}})
	for path, want := range map[string]string{"/": web, "/api": web, "/api/v1": api, "/Api/V1/users": api, "/api/v10": web, "/cart": api, "/cart/x": api} {
		got, http2, ok := e.srv.Lookup("shop.apps.localhost", path)
		if !ok || got != want || http2 != strings.HasPrefix(path, "/cart") {
			t.Errorf("Lookup(shop, %s) = %s http2=%v %v, want %s (http2 for /cart only)", path, got, http2, ok, want)
		}
	}
}

// TestRandomHost: a random route's host is APP-ADJECTIVE-NOUN-XX, as CC makes it, and
// stays one DNS label whatever the app's name.
func TestRandomHost(t *testing.T) {
	form := regexp.MustCompile(`^myapp-[a-z]+-[a-z]+-[a-z0-9]{2}$`)
	if h := randomHost("My_App"); !form.MatchString(h) {
		t.Errorf("randomHost(My_App) = %q, want myapp-ADJECTIVE-NOUN-XX", h)
	}
	if h := randomHost(strings.Repeat("x", 80)); len(h) > 63 || !hostRE.MatchString(h) {
		t.Errorf("randomHost of a long name = %q (%d chars), want one DNS label", h, len(h))
	}
}
