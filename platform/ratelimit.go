package platform

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// RequestStats is what a run asked of the Cloud Controller.
type RequestStats struct {
	// Requests is how many requests reached the CC (each retry counts).
	Requests int
	// Throttled is how many of them the CC answered 429 (rate limit exceeded).
	Throttled int
	// Waited is the time some request spent waiting (requests waiting together count
	// once): for a 429's Retry-After or reset, and paced to keep within the budget.
	Waited time.Duration
	// First and Last are when the first and the latest request were sent.
	First, Last time.Time
	// Limit is the budget the CC announced (X-RateLimit-Limit: requests per user per
	// reset interval, split over its API VMs); 0 when no response carried it (the rate
	// limiter is off, as CC ships, or the user is an admin).
	Limit int
	// Remaining and Reset are the latest X-RateLimit-Remaining and -Reset seen.
	Remaining int
	Reset     time.Time
}

// PerMinute is the requests' rate over the time from the first to the latest, at least
// a second.
func (s RequestStats) PerMinute() float64 {
	d := max(s.Last.Sub(s.First), time.Second)
	return float64(s.Requests) / d.Minutes()
}

// String is the line a run prints at its end, e.g. "CC requests: 412 (37.5/min; budget:
// 2000 per user per interval from X-RateLimit-Limit)".
func (s RequestStats) String() string {
	budget := "none seen"
	if s.Limit > 0 {
		budget = fmt.Sprintf("%d per user per interval from X-RateLimit-Limit", s.Limit)
	}
	line := fmt.Sprintf("CC requests: %d (%.1f/min; budget: %s)", s.Requests, s.PerMinute(), budget)
	if s.Throttled > 0 || s.Waited > 0 {
		line += fmt.Sprintf("; %d answered 429, %s waited for the limit", s.Throttled, s.Waited.Round(100*time.Millisecond))
	}
	return line
}

// Rate limiter pacing: requests are spent freely while more than a quarter of the
// budget is left; below that, the rest is spread evenly until the reset, so that
// Remaining does not run out before it. An exhausted budget waits for the reset and
// resetSlack more (X-RateLimit-Reset is in whole seconds).
const (
	paceBelow     = 4 // pace when Remaining < Limit/paceBelow
	resetSlack    = time.Second
	maxRateWaits  = 50 // 429s in a row for one request before giving up
	fallbackWait  = time.Second
	maxPaceWindow = time.Hour // a Reset further away than this is not believed
)

// RateLimiter is an http.RoundTripper for the Cloud Controller's rate limiter
// (cc.rate_limiter): it counts the requests that match, waits out a 429 for as long as
// its Retry-After (or X-RateLimit-Reset) says and sends the request again, and paces
// requests so that X-RateLimit-Remaining is not exhausted before X-RateLimit-Reset.
// Every wait ends with the request's context. It is safe for concurrent use.
//
// A 429 is retried whatever the method: CC's rate limiter is a Rack middleware in
// front of the controllers (CloudFoundry::Middleware::RateLimiter), so a request it
// refuses was not processed; a POST sent again is sent once. A request whose body
// cannot be read again (no GetBody) gets its 429.
type RateLimiter struct {
	base    http.RoundTripper
	attempt time.Duration
	match   func(*http.Request) bool
	clock   func() time.Time
	sleep   func(ctx context.Context, d time.Duration) bool
	log     *slog.Logger

	mu        sync.Mutex
	stats     RequestStats
	known     bool      // Remaining and Reset are from a response of this window
	next      time.Time // the earliest time the next paced request may go
	pacedFor  time.Time // the window (its Reset) whose pacing was logged
	exhausted time.Time // the window whose exhaustion was logged
	waiters   int       // requests waiting now
	waitStart time.Time // since when some request has been waiting
}

var _ http.RoundTripper = (*RateLimiter)(nil)

// RateLimiterConfig wires a RateLimiter.
type RateLimiterConfig struct {
	// Base sends the requests; default http.DefaultTransport.
	Base http.RoundTripper
	// Match picks the requests that go to the CC; the others pass straight through.
	// Default: all.
	Match func(*http.Request) bool
	// Clock and Sleep default to time.Now and a wait that ends with ctx (false then).
	Clock  func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) bool
	Logger *slog.Logger
	// AttemptTimeout bounds each attempt of a request that matches, from its send to
	// its body's close, without the waits between attempts (default 30 s, go-cfclient's
	// request timeout, which the waits must not count against).
	AttemptTimeout time.Duration
}

// NewRateLimiter returns a RateLimiter over cfg.Base.
func NewRateLimiter(cfg RateLimiterConfig) *RateLimiter {
	l := &RateLimiter{base: cfg.Base, attempt: cfg.AttemptTimeout, match: cfg.Match, clock: cfg.Clock, sleep: cfg.Sleep, log: cfg.Logger}
	if l.attempt <= 0 {
		l.attempt = 30 * time.Second
	}
	if l.base == nil {
		l.base = http.DefaultTransport
	}
	if l.match == nil {
		l.match = func(*http.Request) bool { return true }
	}
	if l.clock == nil {
		l.clock = time.Now
	}
	if l.sleep == nil {
		l.sleep = wait.For
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Stats is what was asked of the CC so far.
func (l *RateLimiter) Stats() RequestStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

func (l *RateLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	if !l.match(req) {
		return l.base.RoundTrip(req)
	}
	ctx := req.Context()
	for attempt := 0; ; attempt++ {
		if d := l.reserve(); d > 0 {
			if !l.pause(ctx, d) {
				return nil, fmt.Errorf("pace CC requests under the rate limit: %w", ctx.Err())
			}
		}
		// Each attempt has its own bound, from its send to its body's close, as an
		// http.Client's Timeout would give the request if it did not include the waits.
		actx, cancel := context.WithTimeout(ctx, l.attempt)
		send := req.Clone(actx)
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				cancel()
				return nil, err
			}
			send.Body = body
		}
		resp, err := l.base.RoundTrip(send)
		if err != nil {
			cancel()
			l.count(nil)
			return nil, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		l.count(resp)
		if resp.StatusCode != http.StatusTooManyRequests {
			return resp, nil
		}
		if attempt >= maxRateWaits || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return resp, nil
		}
		d, until, why := l.retryWait(resp)
		drain(resp)
		l.log.Info("CC rate limit exceeded (429): waiting before sending the request again",
			"method", req.Method, "path", req.URL.Path, "wait", d.Round(time.Millisecond), "until", until.UTC().Format(time.RFC3339), "from", why)
		if !l.pause(ctx, d) {
			return nil, fmt.Errorf("wait out CC's rate limit (429, %s until %s): %w", why, until.UTC().Format(time.RFC3339), ctx.Err())
		}
		l.mu.Lock()
		l.known = false // waited for the window the 429 named; the retry's answer says the new one
		l.mu.Unlock()
	}
}

// pause waits d. Waited counts the time some request was waiting: requests waiting
// together count once.
func (l *RateLimiter) pause(ctx context.Context, d time.Duration) bool {
	l.mu.Lock()
	if l.waiters++; l.waiters == 1 {
		l.waitStart = l.clock()
	}
	l.mu.Unlock()
	ok := l.sleep(ctx, d)
	l.mu.Lock()
	if l.waiters--; l.waiters == 0 {
		l.stats.Waited += l.clock().Sub(l.waitStart)
	}
	l.mu.Unlock()
	return ok
}

// reserve takes one request of the budget and says how long it must wait first.
func (l *RateLimiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	if !l.known || !now.Before(l.stats.Reset) {
		l.known = false // the window reset: its new budget is learnt from the next answer
		return 0
	}
	left := l.stats.Reset.Sub(now)
	switch {
	case l.stats.Remaining <= 0:
		if l.exhausted != l.stats.Reset {
			l.exhausted = l.stats.Reset
			l.log.Info("CC rate limit budget spent: waiting for its reset", "limit", l.stats.Limit,
				"reset", l.stats.Reset.UTC().Format(time.RFC3339), "wait", (left + resetSlack).Round(time.Millisecond))
		}
		return left + resetSlack
	case l.stats.Limit > 0 && l.stats.Remaining < l.stats.Limit/paceBelow:
		every := left / time.Duration(l.stats.Remaining)
		at := now
		if l.next.After(now) {
			at = l.next
		}
		l.next = at.Add(every)
		l.stats.Remaining-- // for the requests sent before this one's answer
		if l.pacedFor != l.stats.Reset {
			l.pacedFor = l.stats.Reset
			l.log.Info("CC rate limit budget low: pacing CC requests until its reset", "remaining", l.stats.Remaining+1,
				"limit", l.stats.Limit, "reset", l.stats.Reset.UTC().Format(time.RFC3339), "every", every.Round(time.Millisecond))
		}
		return at.Sub(now)
	}
	l.stats.Remaining--
	return 0
}

// count records a request sent and what its answer says of the budget.
func (l *RateLimiter) count(resp *http.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	l.stats.Requests++
	if l.stats.First.IsZero() {
		l.stats.First = now
	}
	l.stats.Last = now
	if resp == nil {
		return
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		l.stats.Throttled++
	}
	limit, lerr := strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	remaining, rerr := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	reset, serr := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if lerr != nil || rerr != nil || serr != nil || limit <= 0 {
		return
	}
	at := time.Unix(reset, 0)
	if at.Sub(now) > maxPaceWindow {
		at = now.Add(maxPaceWindow)
	}
	l.stats.Limit, l.stats.Remaining, l.stats.Reset = limit, remaining, at
	l.known = now.Before(at)
}

// retryWait is how long to wait after a 429, until when, and what said so: its
// Retry-After (seconds or an HTTP date), else X-RateLimit-Reset, else a second.
func (l *RateLimiter) retryWait(resp *http.Response) (time.Duration, time.Time, string) {
	now := l.clock()
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
			d := max(time.Duration(s)*time.Second, fallbackWait/10)
			return d, now.Add(d), "Retry-After"
		}
		if t, err := http.ParseTime(ra); err == nil {
			d := max(t.Sub(now), fallbackWait/10)
			return d, now.Add(d), "Retry-After"
		}
	}
	if s, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		if t := time.Unix(s, 0); t.After(now) && t.Sub(now) <= maxPaceWindow {
			d := t.Sub(now) + resetSlack
			return d, now.Add(d), "X-RateLimit-Reset"
		}
	}
	return fallbackWait, now.Add(fallbackWait), "no Retry-After"
}

// cancelOnClose ends an attempt's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
