package httpserver

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestLifecycle runs the conformance suite; the server's own failure is its listener
// closed under it.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		ln := listen(t)
		s := New(&http.Server{Handler: http.NotFoundHandler()}, ln, time.Second)
		return lifecycletest.Subject{Part: s, Fail: func(t *testing.T) {
			if err := ln.Close(); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

// TestStopLetsARequestInFlightFinish: a request in flight when Close comes, or when the
// listener fails, gets its answer; Wait then reports a clean stop, or the failure.
func TestStopLetsARequestInFlightFinish(t *testing.T) {
	for name, stop := range map[string]func(t *testing.T, s *Server, ln net.Listener) error{
		"Close": func(_ *testing.T, s *Server, _ net.Listener) error { return s.Close() },
		"a failed listener": func(t *testing.T, s *Server, ln net.Listener) error {
			if err := ln.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Wait after the listener failed: %v, want net.ErrClosed", err)
			}
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			arrived, shutdown := make(chan struct{}), make(chan struct{})
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(arrived)
				<-shutdown // answers only once the server is shutting down
				io.WriteString(w, "done")
			})}
			srv.RegisterOnShutdown(func() { close(shutdown) })
			ln := listen(t)
			s := New(srv, ln, time.Minute)
			if err := s.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			answer := make(chan string, 1)
			go func() {
				res, err := testhttp.Client.Get("http://" + s.Addr().String())
				if err != nil {
					answer <- err.Error()
					return
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				answer <- string(b)
			}()
			<-arrived
			if err := stop(t, s, ln); err != nil {
				t.Fatalf("%s: %v, want nil", name, err)
			}
			select {
			case got := <-answer:
				if got != "done" {
					t.Fatalf("the request in flight got %q, want its answer", got)
				}
			case <-time.After(time.Minute):
				t.Fatal("the request in flight got no answer")
			}
		})
	}
}

// TestCloseCutsWhatOutlastsTheGrace: a request still in flight after the grace is cut,
// and Close says so.
func TestCloseCutsWhatOutlastsTheGrace(t *testing.T) {
	arrived := make(chan struct{})
	s := New(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // until its connection is cut
	})}, listen(t), time.Millisecond)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		res, err := testhttp.Client.Get("http://" + s.Addr().String())
		if err == nil {
			res.Body.Close()
		}
		got <- err
	}()
	<-arrived
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "were cut") {
		t.Fatalf("Close: %v, want the requests cut", err)
	}
	if err := <-got; err == nil {
		t.Fatal("the request outlasting the grace got an answer")
	}
}

// TestCloseBeforeStartClosesTheListener: the server owns its listener from New on.
func TestCloseBeforeStartClosesTheListener(t *testing.T) {
	ln := listen(t)
	if err := New(&http.Server{}, ln, time.Second).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close before Start: %v, want net.ErrClosed", err)
	}
}
