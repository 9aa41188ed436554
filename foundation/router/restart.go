package router

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"
)

// DefaultDrainWait is gorouter's router.drain_wait default: how long a router that is
// told to stop keeps serving first.
const DefaultDrainWait = 20 * time.Second

// ErrRestarting is Restart's answer while a restart is under way.
var ErrRestarting = errors.New("router: a restart is under way")

// Restart restarts the router as gorouter restarts in a rolling deploy: it keeps
// serving for drainWait (gorouter's drain_wait), then closes its listener (new
// connections are refused) and its idle keep-alive connections at once (a client
// reusing one sees EOF or a reset), lets requests in flight finish (up to 10 s, then
// cuts upgraded connections), and listens again on the same address. It returns at
// once; the channel is closed when the router serves again (or gave up because it
// closed). A listener that cannot be opened again fails the router, as Wait reports.
func (rt *Router) Restart(drainWait time.Duration) (<-chan struct{}, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case rt.srv == nil:
		return nil, errors.New("router: not started")
	case isClosed(rt.closing):
		return nil, ErrClosed
	case rt.restarting:
		return nil, ErrRestarting
	}
	rt.restarting = true
	rt.restarts.Add(1)
	done := make(chan struct{})
	go func() {
		defer rt.restarts.Done()
		defer close(done)
		defer func() {
			rt.mu.Lock()
			rt.restarting = false
			rt.mu.Unlock()
		}()
		rt.restart(drainWait)
	}()
	rt.logger.Info("router-draining", slog.Duration("drain_wait", drainWait))
	return done, nil
}

func (rt *Router) restart(drainWait time.Duration) {
	t := time.NewTimer(drainWait)
	select {
	case <-t.C:
	case <-rt.closing:
		t.Stop()
		return // supervise shuts the server down
	}
	rt.mu.Lock()
	srv, addr := rt.srv, rt.ln.Addr().String()
	rt.mu.Unlock()
	rt.logger.Info("router-stopping-for-restart", slog.String("addr", addr))
	if err := rt.shutdown(srv); err != nil {
		rt.logger.Warn("router-restart-shutdown", slog.Any("err", err))
	}
	// Connections to the backends go too, as with the process of a gorouter.
	rt.backends.CloseIdleConnections()
	rt.h2c.CloseIdleConnections()

	rt.mu.Lock()
	defer rt.mu.Unlock()
	if isClosed(rt.closing) {
		return
	}
	ln, err := listenAgain(rt, addr)
	if err != nil {
		rt.logger.Error("router-restart-failed", slog.Any("err", err))
		select {
		case rt.failed <- err:
		default:
		}
		return
	}
	rt.ln = ln
	rt.srv = rt.serve(ln)
	rt.logger.Info("router-started", slog.String("addr", addr))
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// listenAgain opens the router's address again, retrying for a moment: the port was
// just given up.
func listenAgain(rt *Router, addr string) (net.Listener, error) {
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var ln net.Listener
		if ln, err = rt.listen(context.Background(), "tcp", addr); err == nil || time.Now().After(deadline) {
			return ln, err
		}
	}
}
