// Package loadgen generates HTTP load and measures every request. A Generator plays one
// load-generator instance: it runs its users against one target and hands each finished
// request, as a sample.Sample, to a Recorder. Failed requests are samples too, with an
// error class; they are never errors of the generator.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/sample"
)

// Recorder receives every finished request. Add is called from many goroutines at once
// and must not block on I/O.
type Recorder interface {
	Add(sample.Sample)
}

// Request is one entry of the weighted request mix.
type Request struct {
	Method string
	Path   string // with query, relative to the target
	Header http.Header
	Body   []byte
	Weight int
}

// Config describes one generator instance.
type Config struct {
	Target            *url.URL // scheme and host (and optional base path) of the system under test
	Requests          []Request
	Users             int           // concurrent users in a closed loop
	ThinkTime         time.Duration // pause between a response and the user's next request
	KeepAlive         bool
	Timeout           time.Duration // whole request, connect to last body byte
	CorrelationHeader string        // optional header that also carries the trace id
	TraceTag          uint32        // the run's trace tag
	WorkerID          uint32        // this instance's worker id
	Epoch             time.Time     // the run's zero point for sample offsets
}

// Phase is one ramp step as a generator sees it.
type Phase struct {
	Step        uint8
	WarmupUntil time.Time // samples intended before this are tagged warm-up
	End         time.Time // no request is started at or after End
}

// Generator is one load-generator instance. RunClosed may be called once per phase, one
// phase at a time; Close releases its connections.
type Generator struct {
	cfg     Config
	rec     Recorder
	client  *http.Client
	urls    []string
	cum     []int // cumulative weights for picking a request
	seq     atomic.Uint64
	started time.Time
}

// New checks cfg and returns a generator that reports to rec.
func New(cfg Config, rec Recorder) (*Generator, error) {
	switch {
	case cfg.Target == nil || cfg.Target.Host == "":
		return nil, errors.New("loadgen: target URL with a host is required")
	case len(cfg.Requests) == 0 || len(cfg.Requests) > 256:
		return nil, fmt.Errorf("loadgen: want 1 to 256 requests in the mix, got %d", len(cfg.Requests))
	case cfg.Users < 1:
		return nil, fmt.Errorf("loadgen: users must be at least 1, got %d", cfg.Users)
	case cfg.Timeout <= 0:
		return nil, errors.New("loadgen: timeout must be positive")
	}
	g := &Generator{cfg: cfg, rec: rec}
	total := 0
	for _, r := range cfg.Requests {
		if r.Weight < 1 {
			return nil, fmt.Errorf("loadgen: request %s %s: weight must be at least 1", r.Method, r.Path)
		}
		total += r.Weight
		g.cum = append(g.cum, total)
		g.urls = append(g.urls, joinURL(cfg.Target, r.Path))
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	g.client = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			DisableKeepAlives:   !cfg.KeepAlive,
			DisableCompression:  true,
			MaxIdleConnsPerHost: cfg.Users,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: cfg.Timeout,
		},
		// A redirect is a response like any other: measure it, do not follow it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return g, nil
}

func joinURL(base *url.URL, path string) string {
	b := *base
	b.RawQuery, b.Fragment = "", ""
	s := b.String()
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s + path
}

// Sent is the number of requests started so far.
func (g *Generator) Sent() uint64 { return g.seq.Load() }

// Close releases idle connections.
func (g *Generator) Close() { g.client.CloseIdleConnections() }

// RunClosed runs cfg.Users users in a closed loop until ph.End or until ctx is done, and
// returns when every request it started has been recorded. Requests in flight at ph.End
// complete (bounded by the timeout); cancelling ctx aborts them.
func (g *Generator) RunClosed(ctx context.Context, ph Phase) {
	var wg sync.WaitGroup
	for u := range g.cfg.Users {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(uint64(g.cfg.WorkerID), uint64(u)<<32|uint64(ph.Step)))
		go func() {
			defer wg.Done()
			g.user(ctx, ph, rng)
		}()
	}
	wg.Wait()
}

func (g *Generator) user(ctx context.Context, ph Phase, rng *rand.Rand) {
	ready := time.Now()
	for ctx.Err() == nil && ready.Before(ph.End) {
		end := g.send(ctx, ph, ready, g.pick(rng))
		ready = end
		if g.cfg.ThinkTime > 0 {
			ready = end.Add(g.cfg.ThinkTime)
			if !sleepUntil(ctx, ready) {
				return
			}
		}
	}
}

func (g *Generator) pick(rng *rand.Rand) int {
	if len(g.cum) == 1 {
		return 0
	}
	n := rng.IntN(g.cum[len(g.cum)-1])
	for i, c := range g.cum {
		if n < c {
			return i
		}
	}
	return len(g.cum) - 1
}

// send issues request i that was due at intended, records it and returns when it ended.
func (g *Generator) send(ctx context.Context, ph Phase, intended time.Time, i int) time.Time {
	r := &g.cfg.Requests[i]
	seq := g.seq.Add(1)
	id := sample.NewTraceID(g.cfg.TraceTag, g.cfg.WorkerID, seq)
	s := sample.Sample{
		IntendedUS: intended.Sub(g.cfg.Epoch).Microseconds(),
		Seq:        uint32(seq),
		Step:       ph.Step,
		Request:    uint8(i),
	}
	if intended.Before(ph.WarmupUntil) {
		s.Flags |= sample.FlagWarmup
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, r.Method, g.urls[i], body)
	if err == nil {
		for k, v := range r.Header {
			req.Header[k] = v
		}
		traceID := id.String()
		req.Header["X-B3-Traceid"] = []string{traceID}
		req.Header["X-B3-Spanid"] = []string{id.SpanID()}
		if g.cfg.CorrelationHeader != "" {
			req.Header.Set(g.cfg.CorrelationHeader, traceID)
		}
		var resp *http.Response
		resp, err = g.client.Do(req)
		if err == nil {
			var n int64
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			s.Status = int16(resp.StatusCode)
			s.Bytes = int32(min(n, 1<<31-1))
		}
	}
	end := time.Now()
	s.StartDelayUS = int32(start.Sub(intended).Microseconds())
	s.LatencyUS = int32(min(end.Sub(intended).Microseconds(), 1<<31-1))
	if err != nil {
		s.Err = sample.Classify(err)
	}
	g.rec.Add(s)
	return end
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
