package cc

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// TestRateLimitRemaining: X-RateLimit-Remaining is CC's estimate, what is left rounded
// down to a tenth of the limit.
func TestRateLimitRemaining(t *testing.T) {
	for _, tt := range []struct{ limit, count, want int }{
		{2000, 1, 1800}, {2000, 200, 1800}, {2000, 201, 1600}, {2000, 1999, 0}, {2000, 2000, 0}, {2000, 2500, 0},
		{10, 1, 9}, {10, 9, 1}, {10, 10, 0}, {3, 1, 1}, {3, 2, 0}, {1, 1, 0},
	} {
		if got := remaining(tt.limit, tt.count); got != tt.want {
			t.Errorf("remaining(%d, %d) = %d, want %d", tt.limit, tt.count, got, tt.want)
		}
	}
}

// TestRateLimitWindows: each key's window is the interval, offset by its hash, so
// users' windows do not all reset at once; a window holds its reset time.
func TestRateLimitWindows(t *testing.T) {
	l := newRateLimiter(RateLimit{Limit: 5, Interval: time.Hour})
	resets := map[int64]bool{}
	const now = 1_800_000_000
	for i := range 20 {
		key := "user:" + strconv.Itoa(i)
		in := l.expiresIn(key, now)
		if in < 1 || in > 3600 {
			t.Fatalf("expiresIn(%s) = %d, want 1…3600", key, in)
		}
		resets[now+in] = true
		count, left := l.increment(key, now)
		if count != 1 || left != in {
			t.Fatalf("first increment of %s = %d, %d; want 1, %d", key, count, left, in)
		}
		if count, left := l.increment(key, now+in-1); count != 2 || left != 1 {
			t.Fatalf("increment a second before the reset = %d, %d; want 2, 1", count, left)
		}
		if count, left := l.increment(key, now+in); count != 1 || left != 3600 {
			t.Fatalf("increment at the reset = %d, %d; want a new window: 1, 3600", count, left)
		}
	}
	if len(resets) < 10 {
		t.Errorf("20 users' windows reset at only %d instants", len(resets))
	}
}

// TestRateLimitedPaths: CC counts its API, not its root documents nor /internal, and
// the UAA's and this foundation's own endpoints are not CC's.
func TestRateLimitedPaths(t *testing.T) {
	for path, want := range map[string]bool{
		"/v3/apps": true, "/v3/apps?names=x": true, "/v2/apps": true, "/v3/": true, "/nope": true, "/v3?x=1": true,
		"/": false, "/v3": false, "/v2/info": false, "/healthz": false, "/internal/v4/x": false,
		"/oauth/token": false, "/login": false, "/info": false, "/Users": false, "/Users/1": false, "/cfbench/v1/chaos": false,
	} {
		r := httptest.NewRequest("GET", path, nil)
		if got := rateLimitedPath(r); got != want {
			t.Errorf("rateLimitedPath(%s) = %v, want %v", path, got, want)
		}
	}
}

// TestRateLimiter: a user gets the X-RateLimit headers on every counted response, 429
// with Retry-After and CC's body once over the limit, and a new window at the reset;
// the admin is exempt (no headers) unless Admins; requests without a valid token
// count per client IP against the unauthenticated limit.
func TestRateLimiter(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	e := newEnvWith(t, clock, func(c *Config) { c.RateLimit = RateLimit{Limit: 3, Interval: time.Minute, Unauthenticated: 2} })
	admin := e.token
	e.must(201, "POST", "/Users", map[string]any{"userName": "dev", "password": "s3cret", "origin": "uaa"})
	for range 5 {
		if code, _, h := e.raw("/v3/apps", admin); code != 200 || h.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("the admin: %d, X-RateLimit-Limit %q; want 200 and no headers", code, h.Get("X-RateLimit-Limit"))
		}
	}
	dev := e.login("dev", "s3cret")
	var reset int64
	for i, want := range []string{"1", "0", "0"} { // CC estimates: (3-1)/3 is 0.6, 0.6 × 3 is 1
		code, body, h := e.raw("/v3/organizations", dev)
		if code != 200 || h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != want {
			t.Fatalf("request %d: %d %s, headers %v; want 200, limit 3, remaining %s", i+1, code, body, h, want)
		}
		r, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || r <= clock.now().Unix() || r > clock.now().Add(time.Minute).Unix() || (reset != 0 && r != reset) {
			t.Fatalf("request %d: X-RateLimit-Reset %q, want one instant within the minute", i+1, h.Get("X-RateLimit-Reset"))
		}
		reset = r
	}
	// UAA and the root documents are not counted.
	if code, _, h := e.raw("/v3", dev); code != 200 || h.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("GET /v3: %d, headers %v", code, h)
	}
	clock.advance(time.Second)
	code, body, h := e.raw("/v3/organizations", dev)
	want := `{"errors":[{"detail":"Rate Limit Exceeded","title":"CF-RateLimitExceeded","code":10013}]}`
	if code != http.StatusTooManyRequests || body != want || h.Get("Retry-After") != strconv.FormatInt(reset-clock.now().Unix(), 10) ||
		h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Reset") != strconv.FormatInt(reset, 10) {
		t.Fatalf("over the limit: %d %s, headers %v; want 429 %s, Retry-After %d", code, body, h, want, reset-clock.now().Unix())
	}
	if code, body, _ := e.raw("/v2/apps", dev); code != http.StatusTooManyRequests ||
		body != `{"description":"Rate Limit Exceeded","error_code":"CF-RateLimitExceeded","code":10013}` {
		t.Fatalf("v2 over the limit: %d %s", code, body)
	}
	_, tok := e.postToken(url.Values{"grant_type": {"password"}, "username": {"dev"}, "password": {"s3cret"}})
	if tok["access_token"] == nil {
		t.Fatalf("the token endpoint is limited: %v", tok)
	}
	clock.t = time.Unix(reset, 0)
	if code, _, h := e.raw("/v3/organizations", dev); code != 200 || h.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("at the reset: %d, remaining %q; want 200, 1", code, h.Get("X-RateLimit-Remaining"))
	}

	// Without a valid token: per IP, the unauthenticated limit, 401s counted.
	for i, token := range []string{"", "not-a-token"} {
		if code, _, h := e.raw("/v3/apps", token); code != http.StatusUnauthorized || h.Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("unauthenticated request %d: %d, headers %v", i+1, code, h)
		}
	}
	code, body, _ = e.raw("/v3/apps", "")
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"title":"CF-IPBasedRateLimitExceeded","code":10014`) {
		t.Fatalf("unauthenticated over the limit: %d %s", code, body)
	}
	// Another client, behind the same proxy: X-Forwarded-For.
	req, _ := http.NewRequest("GET", e.http.URL+"/v3/apps", nil)
	req.Header.Set("X-Forwarded-For", "10.0.0.7, 127.0.0.1")
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another client IP: %d, want 401 (its own count)", resp.StatusCode)
	}
}

// TestRateLimitAdmins: with Admins the admin is counted as any user.
func TestRateLimitAdmins(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, func(c *Config) { c.RateLimit = RateLimit{Limit: 1, Interval: time.Hour, Admins: true} })
	if code, _, h := e.raw("/v3/apps", e.token); code != 200 || h.Get("X-RateLimit-Limit") != "1" || h.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("first: %d %v", code, h)
	}
	if code, _, h := e.raw("/v3/apps", e.token); code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("second: %d %v, want 429 with Retry-After", code, h)
	}
}

func TestParseRateLimit(t *testing.T) {
	for in, want := range map[string]RateLimit{"": {}, "2000/60m": {Limit: 2000, Interval: time.Hour}, "5/1s": {Limit: 5, Interval: time.Second}} {
		if got, err := ParseRateLimit(in); err != nil || got != want {
			t.Errorf("ParseRateLimit(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"2000", "0/1m", "-1/1m", "x/1m", "10/", "10/1ms", "10/-1m", "10/soon"} {
		if _, err := ParseRateLimit(in); err == nil {
			t.Errorf("ParseRateLimit(%q) accepted", in)
		}
	}
}

// FuzzParseRateLimit: whatever a command line gives, a limit is on with at least one
// request per a second or more, or refused.
func FuzzParseRateLimit(f *testing.F) {
	for _, s := range []string{"", "2000/60m", "5/1s", "0/1m", "10/1ms", "x/y", "1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseRateLimit(s)
		if err == nil && s != "" && (l.Limit < 1 || l.Interval < time.Second) {
			t.Errorf("ParseRateLimit(%q) = %+v", s, l)
		}
	})
}
