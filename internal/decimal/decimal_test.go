package decimal

import (
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"200", 200, true},
		{"007", 7, true},
		{"999999999999999999", 999999999999999999, true},
		{"1000000000000000000", 0, false}, // 19 digits
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1.5", 0, false},
		{"12a", 0, false},
	} {
		if got, ok := Parse([]byte(c.in)); got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "123", "999999999999999999", "-1", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := Parse([]byte(s))
		want, err := strconv.ParseUint(s, 10, 63)
		valid := err == nil && len(s) >= 1 && len(s) <= 18
		if ok != valid || (ok && n != int64(want)) {
			t.Fatalf("Parse(%q) = %d, %v; strconv says %d, %v", s, n, ok, want, err)
		}
	})
}
