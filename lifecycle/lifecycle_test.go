package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/lifecycle/lifecycletest"
)

// loop is the smallest part: a goroutine that runs until it is stopped or fails.
type loop struct {
	life lifecycle.State
	fail chan error
}

var _ lifecycle.Part = (*loop)(nil)

func (l *loop) Start(ctx context.Context) error {
	if err := l.life.Begin(); err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	stopping := l.life.Stopping()
	go func() {
		select {
		case <-stopping:
			l.life.Stopped(nil)
		case <-ctx.Done():
			l.life.Stopped(nil)
		case err := <-l.fail:
			l.life.Stopped(err)
		}
	}()
	return nil
}

func (l *loop) Wait() error                   { return l.life.Wait() }
func (l *loop) Close() error                  { return l.life.Close() }
func (l *loop) Run(ctx context.Context) error { return lifecycle.Run(ctx, l) }

func TestStateConforms(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		l := &loop{fail: make(chan error, 1)}
		return lifecycletest.Subject{Part: l, Fail: func(*testing.T) { l.fail <- errors.New("broken") }}
	})
}

// TestStartFailure: a Start that fails after Begin leaves a stopped part whose Wait and
// Close report the failure.
func TestStartFailure(t *testing.T) {
	var s lifecycle.State
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("listen: address in use")
	s.Stopped(boom)
	if err := s.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait after a failed Start: %v, want %v", err, boom)
	}
	if err := s.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close after a failed Start: %v, want %v", err, boom)
	}
	if err := s.Begin(); !errors.Is(err, lifecycle.ErrStarted) {
		t.Fatalf("Begin after a failed start: %v, want ErrStarted", err)
	}
}

// TestWaitBeforeStart: Wait called before Start returns once the part has run and
// stopped.
func TestWaitBeforeStart(t *testing.T) {
	l := &loop{fail: make(chan error, 1)}
	waited := make(chan error, 1)
	go func() { waited <- l.Wait() }()
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v while the part runs", err)
	default:
	}
	boom := errors.New("broken")
	l.fail <- boom
	if err := <-waited; !errors.Is(err, boom) {
		t.Fatalf("Wait: %v, want %v", err, boom)
	}
}

// TestEveryTicksUntilClose: the first tick comes at once, later ones on the interval,
// and Close stops the ticks and records the part as stopped.
func TestEveryTicksUntilClose(t *testing.T) {
	var s lifecycle.State
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	ticks := make(chan struct{}, 100)
	s.Every(context.Background(), time.Millisecond, func(context.Context) { ticks <- struct{}{} })
	for range 3 {
		<-ticks
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Close returned before the part was recorded as stopped")
	}
	n := len(ticks)
	time.Sleep(10 * time.Millisecond) // a tick after Close would show here
	if len(ticks) != n {
		t.Fatal("ticks went on after Close")
	}
}

// TestHoldReturnsWhenThePartDies: a held part is closed when the context ends; one that
// stops by itself ends the hold at once with its reason, so the program exits.
func TestHoldReturnsWhenThePartDies(t *testing.T) {
	l := &loop{fail: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- lifecycle.Hold(ctx, l) }()
	listener := errors.New("accept: use of closed network connection")
	l.fail <- listener
	select {
	case err := <-held:
		if !errors.Is(err, lifecycle.ErrStoppedByItself) || !errors.Is(err, listener) {
			t.Fatalf("Hold of a part that died: %v, want ErrStoppedByItself and the reason", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Hold did not return when the part stopped by itself")
	}

	l2 := &loop{fail: make(chan error, 1)}
	if err := l2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := lifecycle.Hold(ctx2, l2); err != nil {
		t.Fatalf("Hold ended by its context: %v, want the part closed cleanly", err)
	}
	if err := l2.Wait(); err != nil {
		t.Fatalf("the held part after Hold: %v", err)
	}
}
