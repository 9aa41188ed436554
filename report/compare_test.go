package report

import "testing"

// A capacity that is a lower bound (the SLO never crossed) makes its ratio to the
// reference a bound too, and two of them make it unknown: no ratio is printed as if
// it were measured.
func TestCapacityRatioSaysHowSureItIs(t *testing.T) {
	capa := func(x float64, crossed bool) *Capacity {
		if crossed {
			return &Capacity{Status: "crossed", Value: x, Step: 2}
		}
		return &Capacity{Status: "not_crossed", Value: x, Step: 3}
	}
	for _, tc := range []struct {
		name   string
		ref, v *Capacity
		ratio  string // boundedRatio of the variant's
		bound  string // its CapacityBound
	}{
		{"both crossed", capa(1000, true), capa(2000, true), "2.00×", ""},
		{"variant not crossed", capa(1000, true), capa(2000, false), "≥ 2.00×", "at_least"},
		{"reference not crossed", capa(1000, false), capa(500, true), "≤ 0.50×", ""},
		{"neither crossed", capa(1000, false), capa(2000, false), "–", "at_least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, v := &Variant{Name: "a", Capacity: tc.ref}, &Variant{Name: "b", Capacity: tc.v}
			c := compareVariants([]*Variant{ref, v})
			if got := boundedRatio(c.Variants[0].CapacityRatio, c.Variants[0].CapacityRatioBound); got != "1.00×" {
				t.Errorf("the reference against itself: %s, want 1.00×", got)
			}
			got := c.Variants[1]
			if r := boundedRatio(got.CapacityRatio, got.CapacityRatioBound); r != tc.ratio || got.CapacityBound != tc.bound {
				t.Errorf("ratio %s, capacity bound %q; want %s, %q", r, got.CapacityBound, tc.ratio, tc.bound)
			}
		})
	}
}
