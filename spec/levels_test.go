package spec

import (
	"reflect"
	"strings"
	"testing"
)

// TestLevels: each kind of ramp gives the steps the engine runs, with the workload's
// fields the ramp sets filled in.
func TestLevels(t *testing.T) {
	t.Parallel()
	landscape := "landscape: {org: o, apps: {space: apps}, generators: {space: gens}}\n"
	tests := []struct {
		name, workload, ramp string
		variants             string
		want                 []Level
		kind                 LevelKind
		check                func(t *testing.T, s *Spec)
	}{
		{name: "generators", workload: "model: closed\n  users: 3", ramp: "start: 2\n  step: 2\n  max: 6",
			want: []Level{{Generators: 2, Users: 3}, {Generators: 4, Users: 3}, {Generators: 6, Users: 3}}, kind: LevelGenerators},
		{name: "rates over two generators", workload: "model: open", ramp: "rates: [350, 700, 1000.5]\n  generators: 2",
			want: []Level{{Generators: 2, Rate: 350}, {Generators: 2, Rate: 700}, {Generators: 2, Rate: 1000.5}}, kind: LevelRates,
			check: func(t *testing.T, s *Spec) {
				if w := s.Workload; w.Rate != 0 || w.RatePer != RatePerTotal {
					t.Errorf("workload rate %v per %s, want 0 per total (the steps carry it)", w.Rate, w.RatePer)
				}
				if got, open := s.Offered(s.Levels()[1]); !open || got != 700 {
					t.Errorf("offered %v %v, want 700", got, open)
				}
			}},
		{name: "rates default to one generator", workload: "model: open", ramp: "rates: [10]",
			want: []Level{{Generators: 1, Rate: 10}}, kind: LevelRates},
		{name: "users in all split over generators", workload: "model: closed", ramp: "users: [2, 4, 8]\n  generators: 2",
			want: []Level{{Generators: 2, Users: 1}, {Generators: 2, Users: 2}, {Generators: 2, Users: 4}}, kind: LevelUsers,
			check: func(t *testing.T, s *Spec) {
				if s.Workload.Users != 4 {
					t.Errorf("workload users %d, want the most per instance, 4", s.Workload.Users)
				}
			}},
		{name: "app instances scale the generators alike", workload: "model: open\n  rate: 50", ramp: "app_instances: [1, 2, 3]\n  generators: 2",
			variants: landscape + "variants:\n  - name: a\n    manifest: m.yml\n",
			want:     []Level{{Generators: 2, AppInstances: 1}, {Generators: 4, AppInstances: 2}, {Generators: 6, AppInstances: 3}}, kind: LevelAppInstances,
			check: func(t *testing.T, s *Spec) {
				if s.Variants[0].Instances != 1 {
					t.Errorf("the app is pushed with %d instances, want the first level's 1", s.Variants[0].Instances)
				}
				if got, _ := s.Offered(s.Levels()[2]); got != 300 {
					t.Errorf("offered %v at 3 app instances, want 6 × 50 = 300", got)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			variants := tc.variants
			if variants == "" {
				variants = "variants:\n  - name: a\n    url: http://127.0.0.1:18080\n"
			}
			y := "version: 1\nname: l\n" + variants + "workload:\n  " + tc.workload + "\n  requests: [{name: r, path: /}]\nramp:\n  " + tc.ramp + "\n  hold: 1s\n"
			s, err := Parse("spec.yml", []byte(y), t.TempDir())
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			checkInvariants(t, s)
			if got := s.Levels(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("levels %+v, want %+v", got, tc.want)
			}
			if k := s.Ramp.Kind(); k != tc.kind {
				t.Errorf("kind %s, want %s", k, tc.kind)
			}
			if d := s.Ramp.Describe(); d == "" || strings.Contains(d, "no steps") {
				t.Errorf("describe %q", d)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}
