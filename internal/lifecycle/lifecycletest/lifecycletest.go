// Package lifecycletest is the conformance suite of package lifecycle: every
// long-running part's package runs it against its part.
//
//	func TestLifecycle(t *testing.T) {
//		lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
//			return lifecycletest.Subject{Part: router.New(cfg)}
//		})
//	}
package lifecycletest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Subject is one fresh, unstarted part and what the suite needs to know about it.
type Subject struct {
	Part lifecycle.Part
	// Fail, when set, makes the started part fail on its own, as in production (its
	// listener dies, its server process is killed); Wait must then report an error
	// without anyone calling Close. Nil skips that check, saying NoFailure.
	Fail func(t *testing.T)
	// NoFailure says why the part has no failure of its own (it retries everything).
	NoFailure string
	// NoLeakCheck, when set, says why the goroutine check does not apply.
	NoLeakCheck string
}

// Guard bounds every wait for the part. It is a failure guard, not a timing claim:
// parts stop with grace periods of seconds on a machine that may be busy.
var Guard = 2 * time.Minute

// Run runs the suite. newSubject is called once per subtest, from the subtest, and
// returns a part that has not been started; the subtest closes it. Subtests run one
// after the other, so that parts that share a port or a state directory may be used.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	t.Run("CloseBeforeStart", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		if err := returns(t, "Close before Start", p.Close); err != nil {
			t.Fatalf("Close before Start: %v, want nil", err)
		}
		if err := returns(t, "Wait after Close", p.Wait); err != nil {
			t.Fatalf("Wait after Close before Start: %v, want nil", err)
		}
		err := returns(t, "Start after Close", func() error { return p.Start(t.Context()) })
		if !errors.Is(err, lifecycle.ErrClosed) {
			t.Fatalf("Start after Close: %v, want lifecycle.ErrClosed", err)
		}
		if err := returns(t, "Close again", p.Close); err != nil {
			t.Fatalf("second Close: %v, want nil", err)
		}
	})

	t.Run("WaitAfterClose", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		start(t, p, t.Context())
		closeErr := returns(t, "Close", p.Close)
		if closeErr != nil {
			t.Errorf("Close of a running part: %v, want nil", closeErr)
		}
		if err := returns(t, "Wait after Close", p.Wait); !sameErr(err, closeErr) {
			t.Errorf("Wait after Close returned %v, Close %v: want the same", err, closeErr)
		}
		if err := returns(t, "Close again", p.Close); !sameErr(err, closeErr) {
			t.Errorf("second Close returned %v, first %v: want the same", err, closeErr)
		}
	})

	t.Run("RunReturnsAfterClose", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		ran := make(chan error, 1)
		go func() { ran <- p.Run(context.Background()) }()
		// Close races Start: either it comes first (Run fails with ErrClosed) or it
		// stops the running part (Run returns nil). Both must end Run.
		if err := returns(t, "Close during Run", p.Close); err != nil {
			t.Errorf("Close during Run: %v, want nil", err)
		}
		select {
		case err := <-ran:
			if err != nil && !errors.Is(err, lifecycle.ErrClosed) {
				t.Errorf("Run after Close: %v, want nil or lifecycle.ErrClosed", err)
			}
		case <-time.After(Guard):
			t.Fatalf("Run did not return within %s of Close", Guard)
		}
	})

	t.Run("StartTwice", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		start(t, p, t.Context())
		err := returns(t, "second Start", func() error { return p.Start(t.Context()) })
		if !errors.Is(err, lifecycle.ErrStarted) {
			t.Errorf("second Start: %v, want lifecycle.ErrStarted", err)
		}
		if err := returns(t, "Close", p.Close); err != nil {
			t.Errorf("Close after a refused second Start: %v, want nil", err)
		}
	})

	t.Run("ContextEndStops", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start(t, p, ctx)
		cancel()
		if err := returns(t, "Wait after the end of Start's context", p.Wait); err != nil {
			t.Errorf("Wait after the end of Start's context: %v, want nil", err)
		}
		err := returns(t, "Start after the part stopped", func() error { return p.Start(t.Context()) })
		if !errors.Is(err, lifecycle.ErrStarted) {
			t.Errorf("Start after the part stopped: %v, want lifecycle.ErrStarted", err)
		}
		if err := returns(t, "Close", p.Close); err != nil {
			t.Errorf("Close after the end of Start's context: %v, want nil", err)
		}
	})

	t.Run("ConcurrentCloseAndWait", func(t *testing.T) {
		s := newSubject(t)
		p := s.Part
		start(t, p, t.Context())
		const n = 4
		errs := make(chan error, 2*n)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { errs <- p.Wait() })
			wg.Go(func() { errs <- p.Close() })
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(Guard):
			t.Fatalf("concurrent Close and Wait did not return within %s", Guard)
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent Close or Wait: %v, want nil", err)
			}
		}
	})

	t.Run("WaitReportsFailure", func(t *testing.T) {
		s := newSubject(t)
		if s.Fail == nil {
			_ = s.Part.Close()
			t.Skipf("no failure of its own: %s", s.NoFailure)
		}
		p := s.Part
		start(t, p, t.Context())
		s.Fail(t)
		err := returns(t, "Wait after a failure", p.Wait)
		if err == nil {
			t.Errorf("Wait after the part failed: nil, want the failure")
		}
		t.Logf("Wait reported: %v", err)
		if cerr := returns(t, "Close after a failure", p.Close); !sameErr(cerr, err) {
			t.Errorf("Close after the failure returned %v, Wait %v: want the same", cerr, err)
		}
	})

	t.Run("NoGoroutineLeft", func(t *testing.T) {
		s := newSubject(t)
		if s.NoLeakCheck != "" {
			_ = s.Part.Close()
			t.Skipf("not checkable: %s", s.NoLeakCheck)
		}
		p := s.Part
		before := goroutineIDs()
		start(t, p, t.Context())
		if err := returns(t, "Close", p.Close); err != nil {
			t.Errorf("Close: %v", err)
		}
		// Goroutines end a little after the part says it stopped (deferred cleanups,
		// deferred stops of timers): poll until they are gone, bounded by Guard.
		var left []string
		for deadline := time.Now().Add(Guard); ; time.Sleep(20 * time.Millisecond) {
			if left = newGoroutines(before); len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				break
			}
		}
		t.Errorf("%d goroutines started by the part still run after Close:\n\n%s", len(left), strings.Join(left, "\n\n"))
	})
}

// start starts p and fails the test if it does not; the test closes p in any case.
func start(t *testing.T, p lifecycle.Part, ctx context.Context) {
	t.Helper()
	t.Cleanup(func() { _ = p.Close() })
	if err := returns(t, "Start", func() error { return p.Start(ctx) }); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// returns calls f and fails the test if it has not returned within Guard.
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(Guard):
		t.Fatalf("%s did not return within %s", what, Guard)
		return nil
	}
}

// sameErr reports whether a and b are the same result: both nil, or the same error.
func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) || a.Error() == b.Error()
}

// goroutineIDs returns the ids of the goroutines running now.
func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for _, g := range stacks() {
		ids[goroutineID(g)] = true
	}
	return ids
}

// newGoroutines returns the stacks of goroutines that did not run before, leaving out
// the test machinery's own.
func newGoroutines(before map[string]bool) []string {
	var out []string
	for _, g := range stacks() {
		if before[goroutineID(g)] || ignorable(g) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Split(strings.TrimSpace(string(buf)), "\n\n")
}

func goroutineID(stack string) string {
	head, _, _ := strings.Cut(stack, " [")
	return head
}

// ignorable are the suite's own goroutines, which end as their callers return.
func ignorable(stack string) bool {
	return strings.Contains(stack, "lifecycletest.returns")
}
