package cc

import (
	"net/url"
	"slices"
	"testing"
)

// TestLabels: cf set-label and unset-label (PATCH with metadata; null removes a key)
// and the --labels filters (label_selector in CC's grammar) of cf orgs, spaces, apps,
// routes and domains.
func TestLabels(t *testing.T) {
	e := newEnv(t, t.TempDir())
	names := map[string]string{}
	for _, n := range []string{"prod", "staging", "bare"} {
		names[e.must(201, "POST", "/v3/organizations", map[string]any{"name": n})["guid"].(string)] = n
	}
	label := func(name string, labels map[string]any) {
		for g, n := range names {
			if n == name {
				e.must(200, "PATCH", "/v3/organizations/"+g, map[string]any{"metadata": map[string]any{"labels": labels}})
			}
		}
	}
	label("prod", map[string]any{"env": "production", "tier": "backend", "gone": "soon"})
	label("staging", map[string]any{"env": "staging", "tier": "frontend"})
	label("prod", map[string]any{"gone": nil})
	list := func(sel string) []string {
		var out []string
		for _, o := range e.must(200, "GET", "/v3/organizations?label_selector="+url.QueryEscape(sel), nil)["resources"].([]any) {
			out = append(out, get(o, "name").(string))
		}
		slices.Sort(out)
		return out
	}
	for sel, want := range map[string][]string{
		"env":             {"prod", "staging"},
		"!env":            {"bare", "cfbench"},
		"env=production":  {"prod"},
		"env==staging":    {"staging"},
		"env!=production": {"bare", "cfbench", "staging"},
		"env in (production,staging),tier in (backend)":              {"prod"},
		"env notin (production)":                                     {"bare", "cfbench", "staging"},
		"env in (production,staging),env notin (production,staging)": nil,
		"gone": nil,
	} {
		if got := list(sel); !slices.Equal(got, want) {
			t.Errorf("label_selector %q: %v, want %v", sel, got, want)
		}
	}
	for _, bad := range []string{"malformed in (", "env in ()", "a,,b", "env=(x)"} {
		code, out, _ := e.do("GET", "/v3/organizations?label_selector="+url.QueryEscape(bad), nil)
		if code != 400 || get(out["errors"].([]any)[0], "detail") != "The query parameter is invalid: Invalid label_selector value" {
			t.Errorf("label_selector %q: %d %v, want 400 Invalid label_selector value", bad, code, out)
		}
	}
	for key, want := range map[string]string{"-env": "Metadata label key error: '-env' starts or ends with invalid characters",
		"a/b/c": "Metadata label key error: key has more than one '/'", "cloudfoundry.org/x": "Metadata label key error: prefix 'cloudfoundry.org' is reserved"} {
		var org string
		for g := range names {
			org = g
		}
		code, out, _ := e.do("PATCH", "/v3/organizations/"+org, map[string]any{"metadata": map[string]any{"labels": map[string]any{key: "v"}}})
		if code != 422 || get(out["errors"].([]any)[0], "detail") != want {
			t.Errorf("label key %q: %d %v, want 422 %q", key, code, out, want)
		}
	}
}
