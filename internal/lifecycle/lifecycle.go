// Package lifecycle states the one lifecycle every long-running part of cf-benchmark
// follows — the worker, the container-metrics poller, the router, the cells, the log
// shipper, the tunnel server and client, the relay, the local foundation and pgserver — and gives
// their implementations the bookkeeping (State). Package lifecycletest checks a part
// against it.
//
// A part's constructor makes it without starting it. Then:
//
//   - Start(ctx) starts the part and returns once it runs, or with why it could not
//     start; then nothing of it keeps running and Wait returns that error too (nil
//     when a Close during Start kept it from starting; Start then fails with
//     ErrClosed). ctx bounds the part's whole life, not only Start: when ctx ends the
//     part stops as by Close, except that it may skip its grace (work in flight is
//     aborted, not drained; each part's doc says). A part starts at most once: a
//     second Start fails with ErrStarted, a Start after Close with ErrClosed (both
//     wrapped).
//   - Wait blocks until the part has stopped and returns why: nil when it stopped
//     because it was asked to (Close, or the end of Start's ctx) and stopping went
//     well; otherwise the failure that stopped it, or what went wrong while stopping
//     (samples that could not be stored, a server that had to be killed). Before Start
//     it blocks until the part has been started and has stopped, or has been closed.
//   - Close stops the part, waits until it has stopped and returns what Wait returns.
//     It is idempotent. Close before Start returns nil at once, and the part never
//     starts.
//   - Run(ctx) is Start followed by Wait.
//
// All three may be called from any goroutine, concurrently with each other; only the
// first Start starts the part. A Close concurrent with Start either keeps the part from
// starting or stops it once started.
//
// A running part does not stop on a transient error (a database or a peer that does not
// answer): it logs the error and tries again. It stops on its own only on a failure it
// cannot get over, such as a listener that died or a server process that exited; Wait
// reports that failure.
//
// A process runs its parts in one Group: started in order, each once the one before
// runs; when one stops by itself, or a signal ends the context, the others are closed in
// reverse order and the group's Wait says which part stopped first and why, so that
// the program exits and its platform (Cloud Foundry) restarts it. What a process does
// between its parts' starts, and undoes when they stop, is a Step in the group; a part
// whose configuration comes from the parts before it is made Later.
package lifecycle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// Part is a long-running part; the package doc states the contract.
type Part interface {
	// Start starts the part; it returns once the part runs, or why it could not start.
	// The part stops when ctx ends.
	Start(ctx context.Context) error
	// Wait blocks until the part has stopped and returns why (nil: asked to stop).
	Wait() error
	// Close stops the part, waits for it and returns what Wait returns. Idempotent.
	Close() error
	// Run is Start followed by Wait.
	Run(ctx context.Context) error
}

// Errors a Start returns (wrapped) when the part must not start.
var (
	ErrStarted = errors.New("already started")
	ErrClosed  = errors.New("closed")
)

// Run starts p and waits until it has stopped: the Run of every part.
func Run(ctx context.Context, p interface {
	Start(context.Context) error
	Wait() error
}) error {
	if err := p.Start(ctx); err != nil {
		return err
	}
	return p.Wait()
}

// State is the bookkeeping of the contract for one part. The part calls Begin first in
// its Start, watches Stopping (and Start's ctx) in what it runs, and calls Stopped once
// everything it runs has ended — or at once, with the error, when Start fails after
// Begin. Its Wait and Close are State's. The zero State is ready to use; its methods may
// be called concurrently.
type State struct {
	mu       sync.Mutex
	began    bool
	closing  bool
	stopped  bool
	stopping chan struct{} // closed when the part is asked to stop
	done     chan struct{} // closed by Stopped
	err      error
}

func (s *State) initLocked() {
	if s.done == nil {
		s.stopping = make(chan struct{})
		s.done = make(chan struct{})
	}
}

// Begin marks the part as starting. It returns ErrStarted on the second call and
// ErrClosed after a Close that came first; the part must then not start.
func (s *State) Begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	switch {
	case s.began:
		return ErrStarted
	case s.closing:
		return ErrClosed
	}
	s.began = true
	return nil
}

// Stopping is closed when the part is asked to stop by Close. (The end of Start's ctx
// the part watches itself.)
func (s *State) Stopping() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	return s.stopping
}

func (s *State) interruptLocked() {
	s.initLocked()
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
}

// Stopped records that the part has stopped and why (nil: it was asked to and stopping
// went well). Only the first call counts. Wait and Close return from here on.
func (s *State) Stopped(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stoppedLocked(err)
}

func (s *State) stoppedLocked(err error) {
	s.initLocked()
	if s.stopped {
		return
	}
	s.stopped, s.err = true, err
	close(s.done)
}

// Done is closed once the part has stopped.
func (s *State) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	return s.done
}

// Wait blocks until Stopped and returns its error; after Close of a part that never
// began, it returns nil at once.
func (s *State) Wait() error {
	<-s.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close asks the part to stop and waits until it has, returning what Wait returns. A
// part that has not begun is stopped at once and never begins.
func (s *State) Close() error {
	s.mu.Lock()
	s.closing = true
	s.interruptLocked()
	if !s.began {
		s.stoppedLocked(nil)
	}
	s.mu.Unlock()
	return s.Wait()
}

// Every is the body of a part that polls: it runs tick at once and then every
// interval, in the background, until the part is asked to stop (Close) or ctx ends,
// and then records it as stopped with nil. Call it from Start once Begin succeeded.
// tick gets ctx, so the end of ctx also aborts a tick in progress; a tick reports its
// own failures (they are transient: the next tick tries again).
func (s *State) Every(ctx context.Context, interval time.Duration, tick func(context.Context)) {
	stopping := s.Stopping()
	go func() {
		defer s.Stopped(nil)
		for {
			tick(ctx)
			if !wait.Until(ctx, stopping, time.Now().Add(interval)) {
				return
			}
		}
	}()
}
