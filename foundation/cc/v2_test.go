package cc

import (
	"fmt"
	"slices"
	"testing"
)

// The v2 API is not served, but answers as CC does: authentication first, in v2's
// error shape (the cf CLI's curl specs match it).
func TestV2AnswersInItsErrorShape(t *testing.T) {
	e := newEnv(t, t.TempDir())
	code, body := e.rawJSON("GET", "/v2/apps", nil, false)
	want := "map[code:10002 description:Authentication error error_code:CF-NotAuthenticated]"
	if code != 401 || fmt.Sprint(body) != want {
		t.Errorf("without a token: %d %v, want 401 %v", code, body, want)
	}
	code, body = e.rawJSON("GET", "/v2/apps", nil, true)
	if code != 404 || body.(map[string]any)["error_code"] != "CF-NotFound" {
		t.Errorf("with a token: %d %v, want 404 CF-NotFound", code, body)
	}
}

// order_by=name sorts case-insensitively, as CC's database does.
func TestOrderByNameIgnoresCase(t *testing.T) {
	e := newEnv(t, t.TempDir())
	for _, n := range []string{"XYZ", "ghi", "ABC", "123"} {
		e.must(201, "POST", "/v3/organizations", map[string]any{"name": n})
	}
	var got []string
	for _, o := range e.must(200, "GET", "/v3/organizations?order_by=name", nil)["resources"].([]any) {
		got = append(got, o.(map[string]any)["name"].(string))
	}
	if want := []string{"123", "ABC", DefaultOrg, "ghi", "XYZ"}; !slices.Equal(got, want) {
		t.Errorf("orgs by name %v, want %v", got, want)
	}
}
