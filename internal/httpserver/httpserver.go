// Package httpserver is an HTTP server as a long-running part (package lifecycle), for
// every process and part that serves HTTP: the stub target, the limiting proxy, the
// local foundation's API and its router (a Server per listener: a restart of the
// router makes a new one), the relay, the drain, the dashboard and the metrics.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Server serves an http.Server on a listener. It follows the lifecycle of package
// lifecycle: Close shuts the server down, giving requests in flight the grace to finish
// before their connections are cut (reported by Wait); the end of Start's ctx cuts them
// at once. It stops by itself when its listener fails (shutting down as by Close), and
// Wait says why.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	grace time.Duration
	life  lifecycle.State
}

var _ lifecycle.Part = (*Server)(nil)

// New returns a server of srv on ln, not started. The server owns ln from here on: a
// Close before Start closes it too.
func New(srv *http.Server, ln net.Listener, grace time.Duration) *Server {
	return &Server{srv: srv, ln: ln, grace: grace}
}

// Start serves in the background and returns at once.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("http server: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	stopping := s.life.Stopping()
	go func() {
		var err error
		select {
		case err = <-served: // the listener failed; the requests in flight get the grace
			s.life.Stopped(errors.Join(fmt.Errorf("http server on %s: %w", s.ln.Addr(), err), s.shutdown()))
			return
		case <-stopping:
			err = s.shutdown()
		case <-ctx.Done():
			s.srv.Close()
		}
		<-served // http.ErrServerClosed
		s.life.Stopped(err)
	}()
	return nil
}

// shutdown stops taking requests and waits for those in flight, for at most the grace.
func (s *Server) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.srv.Close()
		return fmt.Errorf("http server on %s: requests still in flight after %s were cut", s.ln.Addr(), s.grace)
	}
	return err
}

// Wait blocks until the server has stopped: nil after Close or the end of Start's ctx
// with no request cut, else why it stopped.
func (s *Server) Wait() error { return s.life.Wait() }

// Close shuts the server down (see Server) and returns what Wait returns.
func (s *Server) Close() error {
	err := s.life.Close()
	s.ln.Close() // for a Close before Start; closed already otherwise
	return err
}

// Run is Start followed by Wait.
func (s *Server) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }
