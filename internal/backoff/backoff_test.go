package backoff

import (
	"context"
	"math"
	"testing"
	"time"
)

// fixed returns a random source that always draws num/den of its range [0, n),
// clamped to n-1.
func fixed(num, den int64) func(int64) int64 {
	return func(n int64) int64 { return min(n*num/den, n-1) }
}

func TestStepsDoubleUpToMax(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		want []time.Duration // steps after 1, 2, … failures
	}{
		{"doubling", Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second},
			[]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"max below first", Backoff{First: time.Second, Max: time.Millisecond},
			[]time.Duration{time.Second, time.Second}},
		{"zero value", Backoff{}, []time.Duration{DefaultFirst, DefaultFirst, DefaultFirst}},
		{"default first", Backoff{Max: time.Second},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second}},
		{"no overflow", Backoff{First: time.Duration(math.MaxInt64/2 + 1), Max: math.MaxInt64},
			[]time.Duration{time.Duration(math.MaxInt64/2 + 1), math.MaxInt64, math.MaxInt64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := tc.b.Step(i + 1); got != want {
					t.Errorf("Step(%d) = %v, want %v", i+1, got, want)
				}
			}
			if got := tc.b.Step(1000); got != tc.want[len(tc.want)-1] {
				t.Errorf("Step(1000) = %v, want the ceiling %v", got, tc.want[len(tc.want)-1])
			}
		})
	}
}

func TestNextIsEqualJitter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		num, den int64
		want     []time.Duration
	}{
		// A draw of 0 waits the whole step; the largest draw waits half of it.
		{"no jitter drawn", 0, 1, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond}},
		{"most jitter drawn", 1, 1, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}},
		{"half drawn", 1, 2, []time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []int64
			b := Backoff{First: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: func(n int64) int64 {
				asked = append(asked, n)
				return fixed(tc.num, tc.den)(n)
			}}
			for i, want := range tc.want {
				if got := b.Next(); got != want {
					t.Errorf("Next #%d = %v, want %v", i+1, got, want)
				}
			}
			if b.Failures() != len(tc.want) {
				t.Errorf("Failures = %d, want %d", b.Failures(), len(tc.want))
			}
			// The source is asked for a number in [0, step/2] inclusive.
			if asked[0] != int64(50*time.Millisecond)+1 {
				t.Errorf("first draw asked for [0, %d), want [0, %d)", asked[0], int64(50*time.Millisecond)+1)
			}
		})
	}
}

func TestNextWithoutRandStaysWithinItsStep(t *testing.T) {
	b := Backoff{First: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for i := 1; i <= 50; i++ {
		step := b.Step(i)
		if d := b.Next(); d < step/2 || d > step {
			t.Fatalf("Next #%d = %v, want within [%v, %v]", i, d, step/2, step)
		}
	}
}

func TestResetStartsOver(t *testing.T) {
	b := Backoff{First: time.Second, Max: time.Minute, Rand: fixed(0, 1)}
	b.Next()
	b.Next()
	if d := b.Next(); d != 4*time.Second {
		t.Fatalf("third Next = %v, want 4s", d)
	}
	b.Reset()
	if b.Failures() != 0 {
		t.Errorf("Failures after Reset = %d", b.Failures())
	}
	if d := b.Next(); d != time.Second {
		t.Errorf("Next after Reset = %v, want 1s", d)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour-long step: only the ended context lets Wait return.
	b := Backoff{First: time.Hour, Max: time.Hour, Rand: fixed(0, 1)}
	if b.Wait(ctx) {
		t.Error("Wait on an ended context reported true")
	}
	if b.Failures() != 1 {
		t.Errorf("Failures = %d, want the failure counted", b.Failures())
	}
}

func TestWaitSleepsThroughASmallStep(t *testing.T) {
	b := Backoff{First: time.Nanosecond, Rand: fixed(0, 1)}
	if !b.Wait(context.Background()) {
		t.Error("Wait on a live context reported false")
	}
}
