package spec

import "fmt"

// maxRepeats bounds repeat: every repeat is a ramp of every variant.
const maxRepeats = 20

// Leg is one ramp of a run: one variant in one repeat.
type Leg struct {
	Variant *Variant
	// Repeat counts from 1.
	Repeat int
	// Name is the variant's name in the results (steps, samples, findings, reports):
	// Variant.Name, and "#R" after it when the spec repeats (fast#1, fast#2), so every
	// repeat is told apart wherever a variant is named.
	Name string
}

// Legs are the ramps of a run in the order they run: every variant in the spec's order,
// then all of them again for the next repeat (A B A B, not A A B B), so that a drift of
// the platform during the run hits every variant alike.
func (s *Spec) Legs() []Leg {
	n := max(s.Repeat, 1)
	legs := make([]Leg, 0, n*len(s.Variants))
	for r := 1; r <= n; r++ {
		for i := range s.Variants {
			v := &s.Variants[i]
			name := v.Name
			if s.Repeat > 1 {
				name = fmt.Sprintf("%s#%d", v.Name, r)
			}
			legs = append(legs, Leg{Variant: v, Repeat: r, Name: name})
		}
	}
	return legs
}
