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

// TestCloseLetsARequestInFlightFinish: a request in flight when Close comes gets its
// answer, and Close then reports a clean stop.
func TestCloseLetsARequestInFlightFinish(t *testing.T) {
	arrived, shutdown := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-shutdown // answers only once Close is shutting the server down
		io.WriteString(w, "done")
	})}
	srv.RegisterOnShutdown(func() { close(shutdown) })
	s := New(srv, listen(t), time.Minute)
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
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v, want nil", err)
	}
	if got := <-answer; got != "done" {
		t.Fatalf("the request in flight got %q, want its answer", got)
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
