// Package backoff spaces out retries, the one way the project's long-running parts
// wait after a transient failure: each delay doubles from First up to Max, with equal
// jitter (drawn between half and all of its step, so that it still backs off, while
// clients that failed together do not come back together), and Wait gives up as soon
// as its context ends.
//
//	b := backoff.Backoff{First: 250 * time.Millisecond, Max: 10 * time.Second}
//	for {
//		err := try()
//		if err == nil {
//			break
//		}
//		if !b.Wait(ctx) {
//			return ctx.Err()
//		}
//	}
package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// DefaultFirst is the first step when Backoff.First is not set.
const DefaultFirst = 100 * time.Millisecond

// Backoff counts consecutive failures and says how long to wait before the next
// attempt. Its zero value is usable: steps of DefaultFirst, never growing. A
// Backoff is not safe for concurrent use: each retry loop owns one.
type Backoff struct {
	// First is the first step (default DefaultFirst).
	First time.Duration
	// Max caps the steps; below First (or unset) it is First: no growth.
	Max time.Duration
	// Rand returns a uniform number in [0, n) for n > 0; nil means math/rand/v2's
	// Int64N. Tests set it to make delays deterministic.
	Rand func(n int64) int64

	failures int
}

// Next counts a failure and returns the delay before the next attempt: the step
// First·2^(failures-1), capped at Max, less up to half of it at random.
func (b *Backoff) Next() time.Duration {
	b.failures++
	step := b.Step(b.failures)
	r := rand.Int64N
	if b.Rand != nil {
		r = b.Rand
	}
	half := int64(step / 2)
	return step - time.Duration(r(half+1))
}

// Step returns the step after n consecutive failures (n ≥ 1): First·2^(n-1), capped
// at Max. The delay Next returns lies in [Step/2, Step].
func (b *Backoff) Step(n int) time.Duration {
	first := b.First
	if first <= 0 {
		first = DefaultFirst
	}
	ceiling := max(b.Max, first)
	step := first
	for i := 1; i < n && step < ceiling; i++ {
		step *= 2
		if step <= 0 || step > ceiling { // past the ceiling, or wrapped past MaxInt64
			step = ceiling
		}
	}
	return step
}

// Wait counts a failure and sleeps for the delay Next returns. It reports false,
// at once, when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) bool {
	return wait.For(ctx, b.Next())
}

// Failures is the number of failures counted since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// Reset starts over after a success: the next delay is about First again.
func (b *Backoff) Reset() { b.failures = 0 }
