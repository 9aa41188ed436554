package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// fakeFleet is a Fleet whose desired count a test sets, as a user's cf scale would.
type fakeFleet struct {
	desired int
	err     error
}

func (f *fakeFleet) App() string { return "gen" }
func (f *fakeFleet) Scale(ctx context.Context, n int) error {
	// As a Cloud Controller would: an abandoned request may land anyway, and the
	// caller then does not know the count.
	f.desired = n
	return ctx.Err()
}
func (f *fakeFleet) Desired(context.Context) (int, error) { return f.desired, f.err }
func (f *fakeFleet) Stop(context.Context) error {
	f.desired = 0
	return nil
}

var _ Fleet = (*fakeFleet)(nil)

func TestInstancesForKeepsWhatAUserScaledUp(t *testing.T) {
	cases := []struct {
		name                    string
		planned, desired, asked int
		want                    int
	}{
		{"first step, nothing running", 1, 0, 0, 1},
		{"ramp up as planned", 3, 2, 2, 3},
		{"scaled up by hand beyond the plan", 3, 5, 2, 5},
		{"scaled by hand to exactly the plan", 4, 4, 3, 4},
		{"scaled down by hand: the plan wins", 4, 1, 3, 4},
		{"ramp down as planned (app instances 3 → 2)", 4, 6, 6, 4},
		{"scaled up by hand, then the ramp goes down", 4, 8, 6, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{}
			got, err := r.instancesFor(context.Background(), &fakeFleet{desired: c.desired}, c.planned, c.asked)
			if err != nil || got != c.want {
				t.Fatalf("instancesFor(planned %d, desired %d, asked %d) = %d, %v; want %d", c.planned, c.desired, c.asked, got, err, c.want)
			}
		})
	}
	t.Run("platform error", func(t *testing.T) {
		boom := errors.New("boom")
		if _, err := (&runner{}).instancesFor(context.Background(), &fakeFleet{err: boom}, 1, 0); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want it wrapped", err)
		}
	})
}

func TestTimeLeftCountsTheVariantsStillToCome(t *testing.T) {
	sp := &spec.Spec{Variants: []spec.Variant{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Ramp: spec.Ramp{Start: 1, Step: 1, Max: 3, Hold: 10 * time.Second}}
	r := &runner{sp: sp}
	cases := []struct {
		variant   string
		stepsLeft int
		want      time.Duration
	}{
		{"a", 2, 80 * time.Second}, // 2 of a, 3 of b, 3 of c
		{"b", 0, 30 * time.Second},
		{"c", 1, 10 * time.Second},
		{"c", 0, 0},
	}
	for _, c := range cases {
		if got := r.timeLeft(spec.Leg{Name: c.variant}, c.stepsLeft); got != c.want {
			t.Errorf("timeLeft(%s, %d) = %s, want %s", c.variant, c.stepsLeft, got, c.want)
		}
	}
	// Repeated, the legs after a#1 are b#1, a#2 and b#2.
	rep := &runner{sp: &spec.Spec{Repeat: 2, Variants: sp.Variants[:2], Ramp: sp.Ramp}}
	if got, want := rep.timeLeft(spec.Leg{Name: "a#1"}, 1), 100*time.Second; got != want {
		t.Errorf("timeLeft(a#1, 1) of 2 repeats = %s, want %s (1 step of a#1, 3 each of b#1, a#2, b#2)", got, want)
	}
}

func TestLoadOf(t *testing.T) {
	cases := []struct {
		w    spec.Workload
		want string
	}{
		{spec.Workload{Model: spec.ModelClosed, Users: 4}, "4 users each"},
		{spec.Workload{Model: spec.ModelOpen, Rate: 250, RatePer: spec.RatePerInstance}, "250 req/s each"},
		{spec.Workload{Model: spec.ModelOpen, Rate: 1000, RatePer: spec.RatePerTotal}, "1000 req/s in all"},
		{spec.Workload{Model: spec.ModelCount, Users: 2, RequestsPerInstance: 500}, "2 users each, 500 requests in all"},
	}
	for _, c := range cases {
		if got := loadOf(&c.w); got != c.want {
			t.Errorf("loadOf(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}

// An interrupted run still learns how its scale request ended, so the fleet's Stop
// comes after it and the generators end at zero.
func TestScaleFinishesWhenTheRunIsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeFleet{}
	if err := scale(ctx, f, 2); err != nil {
		t.Fatalf("scale with an interrupted run: %v, want the request finished", err)
	}
	if f.desired != 2 {
		t.Fatalf("desired %d, want 2", f.desired)
	}
}
