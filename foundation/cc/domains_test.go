package cc

import (
	"slices"
	"testing"
)

// cf create-private-domain / create-shared-domain / delete-domain: a private domain is
// listed for its org only, a shared one for every org, and deleting a domain deletes
// its routes.
func TestDomainsPrivateAndShared(t *testing.T) {
	e := newEnv(t, t.TempDir())
	org := first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"].(string)
	other := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "other"})["guid"].(string)
	priv := e.must(201, "POST", "/v3/domains", map[string]any{"name": "Private.Example.com",
		"relationships": map[string]any{"organization": map[string]any{"data": map[string]any{"guid": org}}}})
	if priv["name"] != "private.example.com" || get(priv, "relationships", "organization", "data", "guid") != org {
		t.Fatalf("private domain: %v", priv)
	}
	e.must(201, "POST", "/v3/domains", map[string]any{"name": "shared.example.com"})
	e.must(422, "POST", "/v3/domains", map[string]any{"name": "shared.example.com"})
	e.must(422, "POST", "/v3/domains", map[string]any{"name": "nodot"})
	names := func(path string) []string {
		var out []string
		for _, d := range e.must(200, "GET", path, nil)["resources"].([]any) {
			out = append(out, d.(map[string]any)["name"].(string))
		}
		slices.Sort(out)
		return out
	}
	if got, want := names("/v3/organizations/"+org+"/domains"), []string{"apps.localhost", "private.example.com", "shared.example.com"}; !slices.Equal(got, want) {
		t.Errorf("own org's domains %v, want %v", got, want)
	}
	if got, want := names("/v3/organizations/"+other+"/domains"), []string{"apps.localhost", "shared.example.com"}; !slices.Equal(got, want) {
		t.Errorf("other org's domains %v, want %v", got, want)
	}
	space := e.space("apps")
	route := e.must(201, "POST", "/v3/routes", map[string]any{"host": "www", "relationships": map[string]any{
		"space": map[string]any{"data": map[string]any{"guid": space}}, "domain": map[string]any{"data": map[string]any{"guid": priv["guid"]}}}})
	e.must(202, "DELETE", "/v3/domains/"+priv["guid"].(string), nil)
	e.must(404, "GET", "/v3/routes/"+route["guid"].(string), nil)
	e.must(404, "GET", "/v3/domains/"+priv["guid"].(string), nil)
}
