package spec

import (
	"slices"
	"testing"
)

func TestHeaderVars(t *testing.T) {
	w := Workload{Requests: []Request{
		{Headers: map[string]string{"Authorization": "${CF_OAUTH_TOKEN}", "X-A": "a-${B_2}-${CF_OAUTH_TOKEN}"}},
		{Headers: map[string]string{"X-Plain": "$5 and ${} and $HOME"}},
	}}
	if got := w.HeaderVars(); !slices.Equal(got, []string{"B_2", "CF_OAUTH_TOKEN"}) {
		t.Fatalf("HeaderVars = %v", got)
	}
	env := map[string]string{"CF_OAUTH_TOKEN": "bearer t", "B_2": "b", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for val, want := range map[string]string{
		"${CF_OAUTH_TOKEN}":        "bearer t",
		"a-${B_2}-${B_2}":          "a-b-b",
		"$HOME $5 {B_2}":           "$HOME $5 {B_2}",
		"":                         "",
		"x${B_2}${CF_OAUTH_TOKEN}": "xbbearer t",
	} {
		if got, err := ExpandHeader(val, lookup); err != nil || got != want {
			t.Errorf("ExpandHeader(%q) = %q, %v; want %q", val, got, err, want)
		}
	}
	for _, val := range []string{"${MISSING}", "ok ${EMPTY}"} {
		if _, err := ExpandHeader(val, lookup); err == nil {
			t.Errorf("ExpandHeader(%q) succeeded", val)
		}
	}
}
