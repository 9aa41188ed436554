// Package logcache reads the container metrics of a run's apps from Cloud Foundry's
// Log Cache (GET /api/v1/read/:app_guid?envelope_types=GAUGE) and stores one row per
// instance and reading in the results DB's container_metrics table, source 'logcache'.
//
// Diego's cells send each instance's metrics every 15 s by default as two gauge
// envelopes: cpu, memory and disk with their quotas, and the cumulative counters
// absolute_usage (CPU time used), absolute_entitlement (CPU time entitled to) and
// container_age, in ns. The counters make a step's CPU exact from two readings, where
// CC's process stats give a rate sampled now and then and up to 15 s stale. A row's
// time is the envelope's own timestamp, when the cell sampled it, not when it was read;
// the two envelopes of one sample are stored as one row where both are read together.
//
// Envelopes reach Log Cache seconds after their timestamp, so every read reaches back
// Overlap before the previous one's end and skips envelopes already stored. A source
// Log Cache does not know (404: an app deleted, or not yet started) yields nothing;
// 429 and 5xx answers are retried a few times, then the poll reports them and the next
// one tries again.
//
// Log Cache's auth proxy answers an expired or invalid token with the same bare 404 as
// an unknown source; its /api/v1/meta, read at every poll with the same token, tells
// them apart. A rejected token is renewed once (the Doer is a TokenRenewer) and then
// fails the poll with ErrTokenRejected, never reads as "no data". Meta also shows
// envelopes evicted before they were read (Evictions).
package logcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Doer sends HTTP requests with the Cloud Foundry bearer token, which Log Cache takes
// as Cloud Controller does: platform.AuthClient is one, which renews the token before
// it expires and is a TokenRenewer. It is called from one goroutine at a time.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Sink stores rows; *resultsdb.Store is one. It is called from one goroutine at a time.
type Sink interface {
	InsertContainerMetrics(ctx context.Context, rows []resultsdb.ContainerMetric) error
}

var _ Sink = (*resultsdb.Store)(nil)

// Target is an app whose instances are read; its guid is its Log Cache source id.
type Target struct {
	AppName, AppGUID string
}

// Config wires a Poller.
type Config struct {
	// URL is Log Cache's base URL: the API root's links.log_cache.href.
	URL    string
	Client Doer
	Sink   Sink
	RunID  string
	// Targets are the apps read, from the first poll on.
	Targets []Target
	// Interval between polls; default 5 s.
	Interval time.Duration
	// Since is the oldest envelope time read; default a minute before New, so that a
	// run has a reading from before its first step.
	Since time.Time
	// Overlap is how far each read reaches back before the previous read's end, for
	// envelopes that reached Log Cache late; default 30 s.
	Overlap time.Duration
	// Retries of a read answered 429 or 5xx (or not at all), default 3; the waits
	// between them follow the shared backoff from RetryWait (default 1 s), or Retry-After when longer.
	Retries   int
	RetryWait time.Duration
	Clock     func() time.Time
	Logger    *slog.Logger
}

// Poller reads its targets' container metrics every Interval until closed. It follows
// the lifecycle of package lifecycle: a failed poll is logged and retried at the next,
// never fatal, so Wait returns nil. Poll may also be called directly, from any goroutine.
type Poller struct {
	cfg  Config
	log  *slog.Logger
	life lifecycle.State

	pollMu  sync.Mutex // one poll at a time
	sources map[string]*source

	evictMu   sync.Mutex
	evictions []Eviction
}

var _ lifecycle.Part = (*Poller)(nil)

// source is what the poller remembers of one app between polls.
type source struct {
	target Target
	cursor int64            // the previous read's end (ns); 0 before the first
	seen   map[string]int64 // envelopes stored in the overlap: key → timestamp
	newest map[string]int64 // each instance's latest counters reading read (ns)
	// expired is meta's count of the source's envelopes Log Cache dropped, as of the
	// previous poll.
	expired int64
}

// New checks cfg and returns a poller that is not started.
func New(cfg Config) (*Poller, error) {
	if cfg.URL == "" || cfg.Client == nil || cfg.Sink == nil {
		return nil, errors.New("log cache poller: URL, Client and Sink are required")
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Overlap <= 0 {
		cfg.Overlap = 30 * time.Second
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	if cfg.RetryWait <= 0 {
		cfg.RetryWait = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Since.IsZero() {
		cfg.Since = cfg.Clock().Add(-time.Minute)
	}
	p := &Poller{cfg: cfg, log: cfg.Logger, sources: map[string]*source{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range cfg.Targets {
		p.sources[t.AppGUID] = &source{target: t, seen: map[string]int64{}, newest: map[string]int64{}}
	}
	return p, nil
}

// Start polls at once and then every Interval, in the background, until Close or the
// end of ctx (which also aborts a poll in progress). It fails only when the poller was
// started or closed before.
func (p *Poller) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("log cache poller: %w", err)
	}
	p.life.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("read container metrics from log cache", "err", err)
		}
	})
	return nil
}

// Run is Start followed by Wait.
func (p *Poller) Run(ctx context.Context) error { return lifecycle.Run(ctx, p) }

// Wait blocks until the poller has stopped (Close, or the end of Start's context).
func (p *Poller) Wait() error { return p.life.Wait() }

// Close stops polling and waits for a poll in progress. It returns nil: failed polls
// are logged, not returned.
func (p *Poller) Close() error { return p.life.Close() }

// ReadPast reports whether, as of the polls so far, every instance with a counters
// reading in the Interval before t has one at or after t too: a window that ends at t
// then has readings on both sides of its end. An instance whose latest reading is older
// is taken as gone (stopped, scaled away, or emitting less often than Interval).
func (p *Poller) ReadPast(t time.Time) bool {
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	end := t.UnixNano()
	for _, s := range p.sources {
		for _, ts := range s.newest {
			if ts < end && ts >= end-int64(p.cfg.Interval) {
				return false
			}
		}
	}
	return true
}

// Poll reads every target's envelopes since its previous read once and stores them.
// It returns what failed (a read after its retries, or the store); what was read of
// a target whose rows could not be stored is read again next time. A token Log Cache
// refuses, after one renewal, fails the whole poll with ErrTokenRejected.
func (p *Poller) Poll(ctx context.Context) error {
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	end := p.cfg.Clock().UnixNano()
	if err := p.checkMeta(ctx); err != nil {
		return err
	}
	var errs []error
	for _, s := range p.sources {
		start := max(s.cursor-int64(p.cfg.Overlap), p.cfg.Since.UnixNano())
		envs, err := p.read(ctx, s.target.AppGUID, start, end)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", s.target.AppName, err))
			continue
		}
		for i := range envs {
			if e := &envs[i]; e.has(counterMetrics) && e.ts > s.newest[e.instance()] {
				s.newest[e.instance()] = e.ts
			}
		}
		rows, keys := p.rows(s, envs)
		if err := p.cfg.Sink.InsertContainerMetrics(ctx, rows); err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", s.target.AppName, err))
			continue
		}
		for k, ts := range keys {
			s.seen[k] = ts
		}
		s.cursor = end
		for _, m := range []map[string]int64{s.seen, s.newest} {
			for k, ts := range m {
				if ts < end-int64(p.cfg.Overlap) {
					delete(m, k)
				}
			}
		}
	}
	return errors.Join(errs...)
}
