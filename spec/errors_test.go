package spec

import (
	"strings"
	"testing"
)

// TestErrorsShowAtMostMaxShown: a spec with very many problems prints the first
// MaxShown and how many more, not a flood.
func TestErrorsShowAtMostMaxShown(t *testing.T) {
	var es Errors
	for i := range MaxShown + 10 {
		es = append(es, &Error{File: "b.yml", Line: i + 1, Column: 1, Path: "variants", Msg: "bad"})
	}
	lines := strings.Split(es.Error(), "\n")
	if len(lines) != MaxShown+1 || lines[MaxShown-1] != es[MaxShown-1].Error() || lines[MaxShown] != "… and 10 more problem(s)" {
		t.Fatalf("%d lines, the last %q; want %d problems and '… and 10 more problem(s)'", len(lines), lines[len(lines)-1], MaxShown)
	}
	if shown, more := es[:3].Shown(); len(shown) != 3 || more != 0 {
		t.Errorf("3 problems: shown %d, %d more; want all 3", len(shown), more)
	}
}
