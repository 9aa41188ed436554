// Package limitproxy is the "proxy plateau" sample app of the confounder suite: a
// reverse proxy to one upstream that forwards at most so many requests at once, or so
// many per second, and queues the rest. Placed in front of an app it caps throughput
// while the app idles, as the classic TLS proxy in front of the routers did (throughput
// flat at ~400 req/s, app CPU under 20%): a benchmark should blame the proxy, not the
// app.
//
// A request waits for its turn at most Config.MaxWait, then gets 503 with
// X-Cfbench-Proxy: over capacity; an upstream that cannot be reached gives 502.
// GET /_cfbench/proxy answers the proxy's own counters (Stats) as JSON and is never
// forwarded.
package limitproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxWait is how long a request waits for its turn when Config.MaxWait is 0.
const DefaultMaxWait = 30 * time.Second

// StatsPath is the proxy's own endpoint; requests to it are never forwarded.
const StatsPath = "/_cfbench/proxy"

// Config configures a Proxy.
type Config struct {
	// Upstream is where requests go: scheme and host, and an optional base path that
	// is put in front of each request's path. The outgoing Host header is its host.
	Upstream *url.URL
	// ConnectTo, when set, is the "host:port" dialled instead of Upstream's host (the
	// Host header stays Upstream's), as for load generators on the local foundation,
	// whose app routes are reached through the router's port.
	ConnectTo string
	// MaxConcurrent caps the requests forwarded at once; 0 for no cap.
	MaxConcurrent int
	// MaxRate caps the requests forwarded per second, spaced evenly (no bursts);
	// 0 for no cap.
	MaxRate float64
	// MaxWait bounds how long a request waits for its turn under either cap, then it
	// gets 503; 0 means DefaultMaxWait.
	MaxWait time.Duration
	// Transport sends the forwarded requests; nil for a keep-alive pool without
	// proxies from the environment.
	Transport http.RoundTripper
	Logger    *slog.Logger // nil: discard
}

// Stats are the proxy's counters since it was made.
type Stats struct {
	InFlight  int64 `json:"in_flight"` // forwarded, not yet answered
	Waiting   int64 `json:"waiting"`   // waiting for their turn
	Forwarded int64 `json:"forwarded"` // let through to the upstream
	Rejected  int64 `json:"rejected"`  // answered 503 after MaxWait
	// MaxConcurrent and MaxRate repeat the caps (0: none).
	MaxConcurrent int     `json:"max_concurrent"`
	MaxRate       float64 `json:"max_rate"`
}

// Proxy is the limiting reverse proxy, an http.Handler safe for concurrent use.
type Proxy struct {
	cfg    Config
	rp     *httputil.ReverseProxy
	slots  chan struct{} // one token per request forwarded at once; nil without a cap
	pacer  *pacer        // nil without a rate cap
	logger *slog.Logger

	inFlight, waiting, forwarded, rejected atomic.Int64
}

var _ http.Handler = (*Proxy)(nil)

// Errors of New.
var (
	ErrNoUpstream = errors.New("limitproxy: an upstream URL with http or https scheme and a host is required")
	ErrBadLimit   = errors.New("limitproxy: limits must not be negative")
)

// New checks cfg and returns its Proxy.
func New(cfg Config) (*Proxy, error) {
	u := cfg.Upstream
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ErrNoUpstream
	}
	if cfg.MaxConcurrent < 0 || !(cfg.MaxRate >= 0) || cfg.MaxWait < 0 {
		return nil, ErrBadLimit
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	p := &Proxy{cfg: cfg, logger: cfg.Logger}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConcurrent > 0 {
		p.slots = make(chan struct{}, cfg.MaxConcurrent)
	}
	if cfg.MaxRate > 0 {
		p.pacer = newPacer(cfg.MaxRate)
	}
	transport := cfg.Transport
	if transport == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		dial := d.DialContext
		if to := cfg.ConnectTo; to != "" {
			dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, to)
			}
		}
		transport = &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			MaxIdleConnsPerHost: max(cfg.MaxConcurrent, 256),
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.SetXForwarded()
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.logger.Warn("upstream-failed", slog.String("path", r.URL.Path), slog.Any("error", err))
			w.Header().Set("X-Cfbench-Proxy", "upstream failed")
			http.Error(w, "502 Bad Gateway: the proxy's upstream failed", http.StatusBadGateway)
		},
		ErrorLog: slog.NewLogLogger(p.logger.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		InFlight:      p.inFlight.Load(),
		Waiting:       p.waiting.Load(),
		Forwarded:     p.forwarded.Load(),
		Rejected:      p.rejected.Load(),
		MaxConcurrent: p.cfg.MaxConcurrent,
		MaxRate:       p.cfg.MaxRate,
	}
}

// ServeHTTP forwards r when its turn comes, or answers 503 after MaxWait.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StatsPath && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Stats())
		return
	}
	release, ok := p.await(r.Context())
	if !ok {
		if r.Context().Err() != nil {
			return // the client went away while waiting
		}
		p.rejected.Add(1)
		w.Header().Set("X-Cfbench-Proxy", "over capacity")
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("503 Service Unavailable: no turn at the proxy within %s", p.cfg.MaxWait), http.StatusServiceUnavailable)
		return
	}
	defer release()
	p.forwarded.Add(1)
	p.rp.ServeHTTP(w, r)
}

// await waits for the request's turn: its slot in the rate's schedule, then a free
// place among MaxConcurrent, together at most MaxWait. ok is false when the wait ran
// out or ctx ended; otherwise release must be called once the request is done.
func (p *Proxy) await(ctx context.Context) (release func(), ok bool) {
	if p.slots == nil && p.pacer == nil {
		p.inFlight.Add(1)
		return func() { p.inFlight.Add(-1) }, true
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	deadline := time.Now().Add(p.cfg.MaxWait)
	timer := time.NewTimer(p.cfg.MaxWait)
	defer timer.Stop()
	if p.pacer != nil {
		now := time.Now()
		slot, ok := p.pacer.reserve(now, deadline)
		if !ok {
			return nil, false
		}
		if wait := slot.Sub(now); wait > 0 {
			pace := time.NewTimer(wait)
			select {
			case <-pace.C:
			case <-ctx.Done():
				pace.Stop()
				return nil, false
			}
		}
	}
	if p.slots != nil {
		// A free place first: with the wait run out meanwhile (a short MaxWait, a
		// slow pacing), select would pick at random between the two.
		select {
		case p.slots <- struct{}{}:
		default:
			select {
			case p.slots <- struct{}{}:
			case <-timer.C:
				return nil, false
			case <-ctx.Done():
				return nil, false
			}
		}
	}
	p.inFlight.Add(1)
	return func() {
		p.inFlight.Add(-1)
		if p.slots != nil {
			<-p.slots
		}
	}, true
}

// pacer hands out send times 1/rate apart, never earlier than asked: a token bucket
// of depth one, so that the proxy's rate is flat and never bursts above the cap.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time // the earliest free slot
}

func newPacer(rate float64) *pacer {
	return &pacer{interval: time.Duration(float64(time.Second) / rate)}
}

// reserve books the first free slot at or after now and returns it, unless that slot
// is after deadline: then nothing is booked and ok is false.
func (pc *pacer) reserve(now, deadline time.Time) (slot time.Time, ok bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	slot = pc.next
	if slot.Before(now) {
		slot = now
	}
	if slot.After(deadline) {
		return time.Time{}, false
	}
	pc.next = slot.Add(pc.interval)
	return slot, true
}
