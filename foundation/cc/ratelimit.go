// CC's rate limiter (cloud_controller_ng middleware/rate_limiter.rb), as cc.rate_limiter
// configures it: a count of requests per user (or, unauthenticated, per client IP) in a
// window of reset_interval_in_minutes that starts at an offset of its own for each
// user, with X-RateLimit-* headers and 429 once the count is over the limit.

package cc

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit configures the rate limiter as CC's cc.rate_limiter does, with one API
// VM (its per-process and global limits are the same).
type RateLimit struct {
	// Limit is general_limit: requests per user or client per Interval; 0 turns the
	// limiter off, as CC's default (enabled: false).
	Limit int
	// Interval is reset_interval_in_minutes (CC's default 60 minutes); whole seconds,
	// at least one.
	Interval time.Duration
	// Unauthenticated is unauthenticated_limit, per client IP, for requests without a
	// valid user token; 0: CC's default, 100.
	Unauthenticated int
	// Admins limits admins (cloud_controller.admin, admin_read_only) to Limit too. CC
	// exempts them by default (admin_limit -1): no count, no headers.
	Admins bool
}

// Defaults of CC's rate limiter (capi-release's job spec).
const (
	defaultRateLimitInterval        = time.Hour
	defaultUnauthenticatedRateLimit = 100
)

// rateLimiter counts requests as CC's ExpiringRequestCounter's in-memory store does.
type rateLimiter struct {
	cfg      RateLimit
	interval int64 // seconds

	mu     sync.Mutex
	counts map[string]*window
}

// window is one key's count and when it resets (unix seconds).
type window struct {
	count   int
	expires int64
}

// newRateLimiter is nil when cfg's limit is off.
func newRateLimiter(cfg RateLimit) *rateLimiter {
	if cfg.Limit <= 0 {
		return nil
	}
	if cfg.Interval <= 0 {
		cfg.Interval = defaultRateLimitInterval
	}
	if cfg.Unauthenticated <= 0 {
		cfg.Unauthenticated = defaultUnauthenticatedRateLimit
	}
	return &rateLimiter{cfg: cfg, interval: max(int64(cfg.Interval/time.Second), 1), counts: map[string]*window{}}
}

// increment counts a request of key at now (unix seconds) and returns the count in
// its window and the seconds until that window resets.
func (l *rateLimiter) increment(key string, now int64) (int, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.counts[key]
	if w == nil || w.expires-now <= 0 {
		if len(l.counts) >= maxRateLimitKeys {
			l.sweep(now)
		}
		w = &window{expires: now + l.expiresIn(key, now)}
		l.counts[key] = w
	}
	w.count++
	return w.count, w.expires - now
}

// maxRateLimitKeys is how many windows are kept before the expired ones are dropped.
const maxRateLimitKeys = 10000

func (l *rateLimiter) sweep(now int64) {
	for k, w := range l.counts {
		if w.expires <= now {
			delete(l.counts, k)
		}
	}
}

// expiresIn is CC's next_expires_in: the seconds left of key's current window, the
// windows of each key offset from the epoch by a hash of the key, so that not every
// user's count resets at once. CC hashes with xxHash64, this with FNV-1a: the same
// spread, other offsets.
func (l *rateLimiter) expiresIn(key string, now int64) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	offset := int64(binary.BigEndian.Uint64(h.Sum(nil)) % uint64(l.interval))
	return l.interval - ((now-offset)%l.interval+l.interval)%l.interval
}

// remaining is CC's estimate_remaining with one API VM: what is left of the limit
// rounded down to a tenth of it.
func remaining(limit, count int) int {
	if limit <= 0 || count >= limit {
		return 0
	}
	tenths := (limit - count) * 10 / limit
	return tenths * limit / 10
}

// limited wraps the API in the rate limiter, when there is one.
func (s *Server) limited(next http.Handler) http.Handler {
	l := s.limiter
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rateLimitedPath(r) || basicAuth(r) {
			next.ServeHTTP(w, r)
			return
		}
		key, limit, user := "", l.cfg.Limit, false
		if c := s.tokenUser(r); c != nil {
			if adminScope(c.Scope) && !l.cfg.Admins {
				next.ServeHTTP(w, r)
				return
			}
			key, user = "user:"+c.UserID, true
		} else {
			key, limit = "ip:"+clientIP(r), l.cfg.Unauthenticated
		}
		now := s.now().Unix()
		count, expiresIn := l.increment(key, now)
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(now+expiresIn, 10))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining(limit, count)))
		if count <= limit {
			next.ServeHTTP(w, r)
			return
		}
		// As CC's too_many_requests!: the error as JSON, but labelled text/plain.
		e := &Error{Code: 10013, Title: "CF-RateLimitExceeded", Detail: "Rate Limit Exceeded"}
		if !user {
			e = &Error{Code: 10014, Title: "CF-IPBasedRateLimitExceeded",
				Detail: "Rate Limit Exceeded: Unauthenticated requests from this IP address have exceeded the limit. Please log in."}
		}
		var body []byte
		if strings.HasPrefix(r.URL.Path, "/v2/") {
			body, _ = json.Marshal(struct { // v2's keys in CC's order
				Description string `json:"description"`
				ErrorCode   string `json:"error_code"`
				Code        int    `json:"code"`
			}{e.Detail, e.Title, e.Code})
		} else {
			body, _ = json.Marshal(map[string]any{"errors": []*Error{e}})
		}
		h.Set("Retry-After", strconv.FormatInt(expiresIn, 10))
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(body)
	})
}

// tokenUser is the user of a request's valid access token, nil without one: CC's
// SecurityContextSetter sets the user whatever the token's scopes, and a request
// with an invalid or expired token counts as unauthenticated.
func (s *Server) tokenUser(r *http.Request) *claims {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return nil
	}
	c, err := s.verify(strings.TrimSpace(token))
	if err != nil || c.Refresh {
		return nil
	}
	return c
}

// adminScope reports whether scopes make an admin to CC's rate limiter: admin or
// admin_read_only.
func adminScope(scopes []string) bool {
	return slices.Contains(scopes, "cloud_controller.admin") || slices.Contains(scopes, "cloud_controller.admin_read_only")
}

// rateLimitedPath reports whether CC's rate limiter counts a request: not the root
// documents (/, /v3, /v2/info, /healthz, matched with the query, as CC matches the
// full path) nor /internal, nor what is not CC's: the UAA's endpoints (a VM of its
// own on CF) and this foundation's own cfbench endpoints (the fault injector).
func rateLimitedPath(r *http.Request) bool {
	full := r.URL.Path
	if r.URL.RawQuery != "" {
		full += "?" + r.URL.RawQuery
	}
	switch full {
	case "/", "/v3", "/v2/info", "/healthz":
		return false
	}
	p := r.URL.Path
	for _, prefix := range []string{"/internal", "/cfbench/", "/oauth/", "/Users"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return p != "/login" && p != "/info"
}

// basicAuth reports whether a request carries basic credentials, which CC's limiter
// leaves alone (they are the internal API's).
func basicAuth(r *http.Request) bool {
	scheme, _, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "basic")
}

// clientIP is the first X-Forwarded-For address, else the peer's, as CC's ClientIp.
func clientIP(r *http.Request) string {
	if xff := strings.TrimSpace(r.Header.Get("X-Forwarded-For")); xff != "" {
		first, _, _ := strings.Cut(xff, ",")
		if first = strings.TrimSpace(first); first != "" {
			return first
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ParseRateLimit reads a rate limit as a command line gives it, N/INTERVAL: requests
// per user per interval (e.g. 2000/60m, CC's general_limit and
// reset_interval_in_minutes), the interval at least a second. "" is off.
func ParseRateLimit(s string) (RateLimit, error) {
	if s == "" {
		return RateLimit{}, nil
	}
	n, d, ok := strings.Cut(s, "/")
	limit, err := strconv.Atoi(n)
	if !ok || err != nil || limit < 1 {
		return RateLimit{}, fmt.Errorf("%q: want requests per user per interval, like 2000/60m", s)
	}
	interval, err := time.ParseDuration(d)
	if err != nil || interval < time.Second {
		return RateLimit{}, fmt.Errorf("%q: the interval %q is not a duration of a second or more, like 60m", s, d)
	}
	return RateLimit{Limit: limit, Interval: interval}, nil
}
