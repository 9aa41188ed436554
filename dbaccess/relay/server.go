// Package relay lets many generator instances share a few connections to the results
// database. A Server (cmd/cfbench: cfbench relay, pushed beside the generators) holds a small
// pool and serves the instances' calls over HTTP: the plan is read once per app however
// many instances poll it, heartbeats go in one statement per interval, and the samples
// of all instances that post while a COPY runs go in the next COPY (group commit). A
// post is answered only once its rows are committed, so an instance keeps its samples
// (spill file, memory) until then, exactly as against the database itself. Client is
// the instances' side (a worker.Backend).
//
// Protocol (JSON unless said; every request carries "Authorization: Bearer TOKEN"):
//
//	GET  /v1/assignment?app=NAME           → resultsdb.Assignment or null
//	POST /v1/workers                       resultsdb.Worker → {"id": N}; 409 when the run is not running
//	POST /v1/workers/ID/heartbeat          resultsdb.WorkerCounters → 204 (stored within BeatEvery)
//	POST /v1/workers/ID/steps/IDX/join     {"step": resultsdb.Step, "joined": T, "late": B} → 204
//	POST /v1/workers/ID/steps/IDX/finish   {"sent": N, "missed": N} → 204
//	POST /v1/workers/ID/stop               resultsdb.WorkerCounters → 204; 202 when the database is away (kept, written when it is back)
//	POST /v1/workers/ID/samples            binary COPY stream (resultsdb.CopyStream) → 204 once stored
//	GET  /v1/stats                         Stats (what the relay did so far)
//
// A failure is 503 when the database is away (the call may succeed later), else 4xx/500,
// with the reason as text.
package relay

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Config configures a Server. Store and Token are required.
type Config struct {
	// Store is the results database; its pool bounds the connections the relay holds.
	Store *resultsdb.Store
	// Addr is where to listen (default 127.0.0.1:0; on CF ":$PORT").
	Addr string
	// Token is the secret every request must carry.
	Token string
	// PlanMaxAge is how old a plan the relay answers with may be (default 100 ms).
	PlanMaxAge time.Duration
	// BeatEvery is how often the heartbeats received are written (default 250 ms).
	BeatEvery time.Duration
	// Committers is how many COPYs may run at once (default 2).
	Committers int
	// MaxBatchBytes bounds one COPY's rows (default 16 MiB).
	MaxBatchBytes int
	// MaxBody bounds one post of samples (default 8 MiB): a worker posts at most a batch
	// of 32,768 samples (resultsdb.WriterOptions.BatchSize), 93 bytes each in the COPY
	// stream, 2.9 MiB. A longer body is refused (413) having read no more than this;
	// other calls' bodies are bounded to 1 MiB.
	MaxBody int64
	// Timeouts are the HTTP server's (package httplimit; the defaults when zero). A
	// request without the token is refused (401) before its body is read, and its
	// connection closed.
	Timeouts httplimit.Timeouts
	Logger   *slog.Logger
}

// maxJSONBody bounds the body of every call but a post of samples.
const maxJSONBody = 1 << 20

// Stats count what the relay did; the capacity simulation reports them.
type Stats struct {
	Requests, Polls, PlanQueries, BeatsReceived, BeatStatements, SamplePosts, Copies, CopiedRows, Forwarded int64
	// BodyBytes is what was read of request bodies; Refused counts requests without
	// the token.
	BodyBytes, Refused int64
}

// Server is a relay. It follows the lifecycle of package lifecycle: Close stops taking
// requests, lets those in flight finish (their samples committed) for up to 30 s, writes
// the last heartbeats and returns; the end of Start's ctx cuts the requests in flight
// at once (rows already posted are still committed; a retry of them is deduplicated).
type Server struct {
	cfg  Config
	life lifecycle.State
	ln   net.Listener

	plans sync.Map // app → *plan

	beatMu sync.Mutex
	beats  map[int32]resultsdb.WorkerCounters
	// stops are final counters of instances that stopped while the database was away:
	// kept and written with the heartbeats, as the instance itself may be gone by then.
	stops map[int32]resultsdb.WorkerCounters

	subMu   sync.Mutex
	subs    []*submission
	subKick chan struct{}

	requests, polls, planQueries, beatsReceived, beatStatements, samplePosts, copies, copiedRows, forwarded atomic.Int64
	bodyBytes, refused                                                                                      atomic.Int64
}

var _ lifecycle.Part = (*Server)(nil)

// New returns a relay that is not started yet.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.PlanMaxAge <= 0 {
		cfg.PlanMaxAge = 100 * time.Millisecond
	}
	if cfg.BeatEvery <= 0 {
		cfg.BeatEvery = 250 * time.Millisecond
	}
	if cfg.Committers <= 0 {
		cfg.Committers = 2
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 16 << 20
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 8 << 20
	}
	cfg.Timeouts = cfg.Timeouts.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, beats: map[int32]resultsdb.WorkerCounters{}, stops: map[int32]resultsdb.WorkerCounters{}, subKick: make(chan struct{}, 1)}
}

// Start listens and serves in the background.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if s.cfg.Store == nil || s.cfg.Token == "" {
		err := errors.New("relay: a results database and a token are required")
		s.life.Stopped(err)
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		err = fmt.Errorf("relay: listen on %s: %w", s.cfg.Addr, err)
		s.life.Stopped(err)
		return err
	}
	s.ln = ln
	srv := httpserver.New(s.cfg.Timeouts.Server(s.handler()), ln, 30*time.Second)
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	for range s.cfg.Committers {
		bg.Go(func() { s.commit(work) })
	}
	bg.Go(func() { s.writeBeats(work) })
	srv.Start(ctx) // a new server: it starts
	served := make(chan error, 1)
	go func() { served <- srv.Wait() }()
	go func() {
		select {
		case <-served: // the listener died
		case <-s.life.Stopping():
		case <-ctx.Done():
		}
		err := srv.Close() // waits for the posts in flight, whose rows the committers store
		stopWork()
		bg.Wait()
		s.life.Stopped(err)
	}()
	return nil
}

// Wait blocks until the relay has stopped.
func (s *Server) Wait() error { return s.life.Wait() }

// Close stops the relay gracefully.
func (s *Server) Close() error { return s.life.Close() }

// Run is Start followed by Wait.
func (s *Server) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }

// URL is the relay's base URL once started.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Stats is what the relay did so far.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Polls: s.polls.Load(), PlanQueries: s.planQueries.Load(), BeatsReceived: s.beatsReceived.Load(),
		BeatStatements: s.beatStatements.Load(), SamplePosts: s.samplePosts.Load(), Copies: s.copies.Load(), CopiedRows: s.copiedRows.Load(),
		Forwarded: s.forwarded.Load(), BodyBytes: s.bodyBytes.Load(), Refused: s.refused.Load()}
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/assignment", s.assignment)
	mux.HandleFunc("POST /v1/workers", s.register)
	mux.HandleFunc("POST /v1/workers/{id}/heartbeat", s.heartbeat)
	mux.HandleFunc("POST /v1/workers/{id}/steps/{idx}/join", s.joinStep)
	mux.HandleFunc("POST /v1/workers/{id}/steps/{idx}/finish", s.finishStep)
	mux.HandleFunc("POST /v1/workers/{id}/stop", s.stop)
	mux.HandleFunc("POST /v1/workers/{id}/samples", s.samples)
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(s.Stats()) })
	want := []byte("Bearer " + s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			s.refused.Add(1)
			httplimit.Refuse(w, "missing or wrong relay token", http.StatusUnauthorized)
			return
		}
		limit := int64(maxJSONBody)
		if strings.HasSuffix(r.URL.Path, "/samples") {
			limit = s.cfg.MaxBody
		}
		httplimit.LimitBody(w, r, s.cfg.Timeouts, limit, &s.bodyBytes)
		mux.ServeHTTP(w, r)
	})
}

// fail answers err to r: 503 when the database (or a node of it) is away, 413 for a
// body over its bound, 400 for another bad request, else 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case httplimit.TooLarge(err):
		code = http.StatusRequestEntityTooLarge
	case s.cfg.Store.Retryable(r.Context(), err):
		code = http.StatusServiceUnavailable
	case errors.Is(err, errBadRequest), errors.Is(err, resultsdb.ErrBadCopy):
		code = http.StatusBadRequest
	case errors.Is(err, resultsdb.ErrRunNotRunning):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}

var errBadRequest = errors.New("bad request")

func workerID(r *http.Request) (int32, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: worker id %q", errBadRequest, r.PathValue("id"))
	}
	return int32(id), nil
}

// decode reads the JSON body into v.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil { // bounded by the handler
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return nil
}

// plan is the cached assignment of one app.
type plan struct {
	mu      sync.Mutex
	a       *resultsdb.Assignment
	fetched time.Time // on our monotonic clock
}

func (s *Server) assignment(w http.ResponseWriter, r *http.Request) {
	app := r.URL.Query().Get("app")
	if app == "" {
		s.fail(w, r, fmt.Errorf("%w: no app", errBadRequest))
		return
	}
	s.polls.Add(1)
	v, _ := s.plans.LoadOrStore(app, &plan{})
	p := v.(*plan)
	p.mu.Lock() // one query per app at a time; the other pollers take its answer
	if p.fetched.IsZero() || time.Since(p.fetched) > s.cfg.PlanMaxAge {
		a, err := s.cfg.Store.Assignment(r.Context(), app)
		s.planQueries.Add(1)
		if err != nil {
			p.mu.Unlock()
			s.fail(w, r, err)
			return
		}
		p.a, p.fetched = a, time.Now()
	}
	var out *resultsdb.Assignment
	if p.a != nil {
		c := *p.a
		// The database's clock now, from its reading then: instances align their steps
		// on it, so a cached answer must not carry an old time.
		c.DBNow = c.DBNow.Add(time.Since(p.fetched))
		out = &c
	}
	p.mu.Unlock()
	json.NewEncoder(w).Encode(out)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var in resultsdb.Worker
	if err := decode(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	s.forwarded.Add(1)
	id, err := s.cfg.Store.JoinRun(r.Context(), in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	json.NewEncoder(w).Encode(map[string]int32{"id": id})
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) {
	id, err := workerID(r)
	var c resultsdb.WorkerCounters
	if err == nil {
		err = decode(r, &c)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.beatsReceived.Add(1)
	s.beatMu.Lock()
	s.beats[id] = c
	s.beatMu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// writeBeats writes the heartbeats received, every BeatEvery and once more when ctx
// ends, in one statement; the beats of a failed write wait for the next (newer ones
// replace them).
func (s *Server) writeBeats(ctx context.Context) {
	t := time.NewTicker(s.cfg.BeatEvery)
	defer t.Stop()
	for last := false; !last; {
		select {
		case <-ctx.Done(): // the server has stopped: write what came last
			last, ctx = true, context.WithoutCancel(ctx)
		case <-t.C:
		}
		s.writeStops(ctx)
		s.beatMu.Lock()
		beats := s.beats
		s.beats = map[int32]resultsdb.WorkerCounters{}
		s.beatMu.Unlock()
		if len(beats) == 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.cfg.Store.Heartbeats(wctx, beats)
		cancel()
		s.beatStatements.Add(1)
		if err != nil {
			s.cfg.Logger.Warn("write heartbeats; keeping them for the next write", "workers", len(beats), "err", err)
			s.beatMu.Lock()
			for id, c := range beats {
				if _, newer := s.beats[id]; !newer {
					s.beats[id] = c
				}
			}
			s.beatMu.Unlock()
		}
	}
}

// writeStops writes the final counters kept while the database was away. At the
// first failure it keeps the rest for the next call: the database is still away.
func (s *Server) writeStops(ctx context.Context) {
	s.beatMu.Lock()
	stops := s.stops
	s.stops = map[int32]resultsdb.WorkerCounters{}
	s.beatMu.Unlock()
	var err error
	for id, c := range stops {
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = s.cfg.Store.StopWorker(wctx, id, c)
			cancel()
			if err == nil {
				continue
			}
			s.cfg.Logger.Warn("record the final counters of stopped workers; keeping them", "workers", len(stops), "err", err)
		}
		s.beatMu.Lock()
		s.stops[id] = c
		s.beatMu.Unlock()
	}
}

type joinBody struct {
	Step   resultsdb.Step `json:"step"`
	Joined time.Time      `json:"joined"`
	Late   bool           `json:"late"`
}

func (s *Server) joinStep(w http.ResponseWriter, r *http.Request) {
	id, err := workerID(r)
	var in joinBody
	if err == nil {
		err = decode(r, &in)
	}
	if err == nil {
		s.forwarded.Add(1)
		err = s.cfg.Store.JoinStep(r.Context(), id, &in.Step, in.Joined, in.Late)
	}
	s.done(w, r, err)
}

type finishBody struct {
	Sent   uint64 `json:"sent"`
	Missed uint64 `json:"missed"`
}

func (s *Server) finishStep(w http.ResponseWriter, r *http.Request) {
	id, err := workerID(r)
	var in finishBody
	idx, ierr := strconv.Atoi(r.PathValue("idx"))
	if err == nil && ierr != nil {
		err = fmt.Errorf("%w: step %q", errBadRequest, r.PathValue("idx"))
	}
	if err == nil {
		err = decode(r, &in)
	}
	if err == nil {
		s.forwarded.Add(1)
		err = s.cfg.Store.FinishStep(r.Context(), id, idx, in.Sent, in.Missed)
	}
	s.done(w, r, err)
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	id, err := workerID(r)
	var c resultsdb.WorkerCounters
	if err == nil {
		err = decode(r, &c)
	}
	if err == nil {
		s.beatMu.Lock()
		delete(s.beats, id) // an older beat written after this would undo the final counters
		s.beatMu.Unlock()
		s.forwarded.Add(1)
		err = s.cfg.Store.StopWorker(r.Context(), id, c)
	}
	if err != nil && s.cfg.Store.Retryable(r.Context(), err) {
		// The instance is on its way out (SIGTERM, a few seconds): the relay keeps its
		// final counters for the database, so the run learns exactly what it stored.
		s.beatMu.Lock()
		s.stops[id] = c
		s.beatMu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.done(w, r, err)
}

func (s *Server) done(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
