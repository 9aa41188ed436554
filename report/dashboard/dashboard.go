// Package dashboard serves the live page of a run (cf run-benchmark --dashboard, cf
// benchmark-status RUN --dashboard): the report's page and chart code (report.WriteLivePage)
// fed every second, over server-sent events, with the report of the run so far
// (report.BuildLive), read from the results database: the figures a person watches are
// the ones the report prints afterwards. When the run ends the page gets the final report.
//
// The database is read once per interval while at least one page listens, whatever the
// number of pages; nothing is read while none does. A page that goes away costs the run
// nothing: its stream ends, the run goes on.
package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/listenaddr"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// DefaultAddr is where a dashboard listens unless told: this machine only, a free port.
const DefaultAddr = listenaddr.Default

// MaxDBShare bounds the share of the time a dashboard keeps the results database busy
// (report.LiveDBShare): the page is then updated less often, saying so.
const MaxDBShare = report.LiveDBShare

// Config configures a Server.
type Config struct {
	// Addr is host:port to listen on (DefaultAddr when empty); see ListenAddr.
	Addr string
	// Every is how often the run is read while a page listens (default 1 s), or less
	// often when a read takes long (MaxDBShare).
	Every time.Duration
	// Timeouts are the HTTP server's; Write bounds each event written to a page, not
	// the stream, which lasts as long as the run.
	Timeouts httplimit.Timeouts
	Logger   *slog.Logger
}

// Server is a dashboard. It follows the lifecycle of package lifecycle: Start listens,
// Close sends every page the final event (the run's report when Finish gave one, else
// why there is none) and stops within a few seconds. Watch and Finish may be called from
// any goroutine, before or after Start.
type Server struct {
	cfg  Config
	life lifecycle.State
	ln   net.Listener
	page []byte // the live page

	mu       sync.Mutex
	run      *report.LiveRun // nil until Watch
	latest   event           // what a page gets next; seq 0: nothing yet
	changed  chan struct{}   // closed and replaced when latest changes
	finished bool

	listeners atomic.Int64
	kick      chan struct{} // a page came: read the run now
}

// event is one server-sent event.
type event struct {
	seq  int64
	name string // report, waiting, problem, final
	data []byte // JSON
}

var _ lifecycle.Part = (*Server)(nil)

// New returns a dashboard that is not started yet.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Timeouts.Write <= 0 {
		cfg.Timeouts.Write = 30 * time.Second
	}
	cfg.Timeouts = cfg.Timeouts.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, changed: make(chan struct{}), kick: make(chan struct{}, 1)}
	s.publish("waiting", map[string]string{"message": "waiting for the run to start"})
	return s
}

// ListenAddr is the address a --dashboard value asks for (listenaddr.Parse).
func ListenAddr(v string) (string, error) {
	addr, err := listenaddr.Parse(v)
	if err != nil {
		return "", fmt.Errorf("dashboard %w", err)
	}
	return addr, nil
}

// Start listens and serves in the background until Close or the end of ctx.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	var page bytes.Buffer
	if err := report.WriteLivePage(&page, "cf-benchmark live"); err != nil {
		s.life.Stopped(err)
		return err
	}
	s.page = page.Bytes()
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		err = fmt.Errorf("dashboard: listen on %s: %w", s.cfg.Addr, err)
		s.life.Stopped(err)
		return err
	}
	s.ln = ln
	srv := httpserver.New(s.cfg.Timeouts.Server(s.handler()), ln, 5*time.Second)
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	bg.Go(func() { s.poll(work) })
	_ = srv.Start(context.WithoutCancel(ctx)) // a new server starts; the end of ctx stops it below, with its grace
	served := make(chan struct{})
	go func() { srv.Wait(); close(served) }()
	go func() {
		select {
		case <-served: // the listener died
		case <-s.life.Stopping():
		case <-ctx.Done():
		}
		stopWork()
		bg.Wait()
		s.finish(nil, "the run's process stopped before its report was made")
		// The streams end once they sent the final event; a page that does not read
		// is cut off.
		s.life.Stopped(srv.Close())
	}()
	return nil
}

// Wait blocks until the dashboard has stopped.
func (s *Server) Wait() error { return s.life.Wait() }

// Close sends the pages the final event and stops the dashboard.
func (s *Server) Close() error { return s.life.Close() }

// Run is Start followed by Wait.
func (s *Server) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }

// URL is the page's address once started.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Watch makes the pages show run from now on.
func (s *Server) Watch(run *report.LiveRun) {
	s.mu.Lock()
	s.run = run
	s.mu.Unlock()
	s.wake()
}

// Finish sends the pages the run's final report (nil when none could be made: why is
// reportErr) and stops reading the run.
func (s *Server) Finish(rep *report.Report, reportErr error) {
	msg := "the run ended; this is its report"
	if rep == nil {
		msg = "the run ended without a report"
		if reportErr != nil {
			msg += ": " + reportErr.Error()
		}
	}
	s.finish(rep, msg)
}

func (s *Server) finish(rep *report.Report, msg string) {
	s.mu.Lock()
	done := s.finished
	s.finished = true
	s.mu.Unlock()
	if !done {
		s.publish("final", map[string]any{"report": rep, "message": msg})
	}
}

// publish makes v, as JSON, the event every page gets next; after the final event,
// which is the last word, it does nothing.
func (s *Server) publish(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.cfg.Logger.Warn("dashboard: encode an event", "event", name, "err", err)
		return
	}
	s.mu.Lock()
	if s.latest.name == "final" {
		s.mu.Unlock()
		return
	}
	s.latest = event{seq: s.latest.seq + 1, name: name, data: data}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Update is the data of a "report" event: the report of the run so far, how long
// reading it took and how often the page is updated now (see MaxDBShare).
type Update struct {
	Report *report.Report `json:"report"`
	ReadS  float64        `json:"read_s"`
	EveryS float64        `json:"every_s"`
}

// poll reads the run every interval while a page listens, and at once when one comes,
// through the run's LiveRun: a read another view made meanwhile serves here too, and
// the database is kept busy at most MaxDBShare of the time.
func (s *Server) poll(ctx context.Context) {
	t := time.NewTicker(s.cfg.Every)
	defer t.Stop()
	var shown time.Time // the read last published
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		s.mu.Lock()
		run, finished := s.run, s.finished
		s.mu.Unlock()
		if run == nil || finished || s.listeners.Load() == 0 {
			continue
		}
		r := run.Read(ctx, s.cfg.Every)
		if ctx.Err() != nil {
			return
		}
		if r.At.Equal(shown) {
			continue // nothing new: a page that came meanwhile has the latest already
		}
		shown = r.At
		if r.Err != nil {
			s.cfg.Logger.Warn("dashboard: read the run", "run", run.ID(), "err", r.Err)
			s.publish("problem", map[string]string{"message": "could not read the run (trying again): " + r.Err.Error()})
			continue
		}
		every := max(s.cfg.Every, time.Duration(float64(r.Took)/MaxDBShare))
		s.publish("report", Update{Report: r.Report, ReadS: r.Took.Seconds(), EveryS: every.Seconds()}) // unless the final report came meanwhile
	}
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(s.page)
	})
	mux.HandleFunc("GET /events", s.events)
	return listenaddr.SelfOnly(s.ln, mux)
}

// events streams the events to one page until the final one, the page leaves, or the
// dashboard stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	s.listeners.Add(1)
	defer s.listeners.Add(-1)
	s.wake()
	var sent int64
	send := func(ev event) bool {
		// Each event gets the write timeout, not the stream, which lasts the run.
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Timeouts.Write))
		if sent == 0 {
			fmt.Fprint(w, "retry: 2000\n\n")
		}
		sent = ev.seq
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for {
		s.mu.Lock()
		ev, changed := s.latest, s.changed
		s.mu.Unlock()
		if ev.seq != sent {
			if !send(ev) || ev.name == "final" {
				return
			}
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.life.Stopping():
			// Close publishes the final event: send it before leaving.
			<-changedOrFinal(s)
		}
	}
}

// changedOrFinal returns a channel that is closed once the latest event is the final
// one (at once if it is already).
func changedOrFinal(s *Server) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest.name == "final" {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.changed
}

// Follow makes the pages show run runID of store (a run under way in another process)
// until it has ended, then sends them its report and returns nil; it returns ctx's
// error when ctx ends first. The report is the one the run ended with in the database:
// router logs pulled after that are not in it (cf benchmark-report has them).
func (s *Server) Follow(ctx context.Context, store *resultsdb.Store, runID string) error {
	s.Watch(report.NewLiveRun(store, runID))
	for {
		run, err := store.GetRun(ctx, runID)
		switch {
		case errors.Is(err, resultsdb.ErrRunNotFound):
			return err
		case err != nil:
			s.cfg.Logger.Warn("dashboard: read the run's status", "run", runID, "err", err)
		case run.Status != resultsdb.RunRunning:
			rep, err := report.Build(ctx, store, []string{runID}, report.Options{})
			s.Finish(rep, err)
			return nil
		}
		if !wait.For(ctx, s.cfg.Every) {
			return ctx.Err()
		}
	}
}
