package cells

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseCells(t *testing.T) {
	cases := []struct {
		in   string
		want string // name:cpus;…
		bad  bool
	}{
		{"", "", false},
		{"apps=0,loadgen=1", "apps:[0];loadgen:[1]", false},
		{"apps=0-1,loadgen=2-3", "apps:[0 1];loadgen:[2 3]", false},
		{"apps=0,2,loadgen=1,3", "apps:[0 2];loadgen:[1 3]", false},
		{"0,1", "", true},
		{"apps=x", "", true},
		{"=0", "", true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseCells(c.in)
			if c.bad {
				if err == nil {
					t.Fatalf("ParseCells(%q) accepted it: %v", c.in, got)
				}
				return
			}
			var parts []string
			for _, cell := range got {
				parts = append(parts, fmt.Sprintf("%s:%v", cell.Name, cell.CPUs))
			}
			if err != nil || strings.Join(parts, ";") != c.want {
				t.Fatalf("ParseCells(%q) = %q, %v; want %q", c.in, strings.Join(parts, ";"), err, c.want)
			}
		})
	}
}
