package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
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
