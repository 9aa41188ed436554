package limitproxy

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// waitLimit bounds how long a test waits for a state it polls for.
const waitLimit = 30 * time.Second

// gate is an upstream that holds every request until released and counts how many
// it holds at once.
type gate struct {
	release chan struct{}
	cur     atomic.Int64
	peak    atomic.Int64
	seen    atomic.Int64
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := g.cur.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	g.seen.Add(1)
	<-g.release
	g.cur.Add(-1)
	_, _ = io.WriteString(w, "from upstream "+r.URL.Path)
}

// start serves p on 127.0.0.1; the server is closed when the test ends.
func start(t *testing.T, cfg Config) (*Proxy, *httptest.Server) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func upstream(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// until polls cond until it holds, failing the test after waitLimit.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func get(t *testing.T, url string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// TestConcurrencyCap sends three times MaxConcurrent requests at once: MaxConcurrent
// reach the upstream, the others wait in the proxy until those are answered, the
// upstream never holds more at once, and in the end every one is answered by it. (The
// upstream lets go of a request before answering it, and the proxy frees its place
// only once the answer is in, so the upstream can never count more than the cap.)
func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	const limit, total = 4, 12
	g := &gate{release: make(chan struct{})}
	p, srv := start(t, Config{Upstream: upstream(t, g), MaxConcurrent: limit})

	var wg sync.WaitGroup
	statuses := make(chan int, total)
	for range total {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := testhttp.Client.Get(srv.URL + "/work")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses <- res.StatusCode
		}()
	}
	// The cap holds: limit requests reach the upstream (a forwarded one may still
	// be on its way), the rest wait in the proxy.
	until(t, "a full proxy", func() bool {
		s := p.Stats()
		return s.InFlight == limit && s.Waiting == total-limit && g.cur.Load() == limit
	})
	close(g.release)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusOK {
			t.Errorf("status %d, want 200", s)
		}
	}
	if peak := g.peak.Load(); peak != limit {
		t.Errorf("upstream held up to %d requests at once, want %d", peak, limit)
	}
	if s := p.Stats(); s.Forwarded != total || s.Rejected != 0 || s.InFlight != 0 || s.Waiting != 0 {
		t.Errorf("stats %+v, want %d forwarded and nothing else", s, total)
	}
}

// TestOverCapacity: with the one place taken and the upstream holding it, the next
// request gets 503 once MaxWait has passed and never reaches the upstream.
func TestOverCapacity(t *testing.T) {
	t.Parallel()
	g := &gate{release: make(chan struct{})}
	p, srv := start(t, Config{Upstream: upstream(t, g), MaxConcurrent: 1, MaxWait: time.Millisecond})

	first := make(chan int, 1)
	go func() {
		res, err := testhttp.Client.Get(srv.URL + "/first")
		if err != nil {
			t.Error(err)
			first <- 0
			return
		}
		res.Body.Close()
		first <- res.StatusCode
	}()
	until(t, "the first request upstream", func() bool { return g.seen.Load() == 1 })
	status, h, body := get(t, srv.URL+"/second", nil)
	if status != http.StatusServiceUnavailable || h.Get("X-Cfbench-Proxy") != "over capacity" || !strings.Contains(body, "no turn at the proxy") {
		t.Errorf("second request: %d %q %q, want 503 over capacity", status, h.Get("X-Cfbench-Proxy"), body)
	}
	close(g.release)
	if s := <-first; s != http.StatusOK {
		t.Errorf("first request: %d, want 200", s)
	}
	if n := g.seen.Load(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	if s := p.Stats(); s.Rejected != 1 || s.Forwarded != 1 {
		t.Errorf("stats %+v, want 1 forwarded, 1 rejected", s)
	}
}

// TestRateCap: at one request per 100 s, the first request goes through at once and
// the next one, whose slot lies far beyond MaxWait, is refused without waiting.
func TestRateCap(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	up := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	p, srv := start(t, Config{Upstream: up, MaxRate: 0.01, MaxWait: time.Second})
	if status, _, _ := get(t, srv.URL+"/a", nil); status != http.StatusOK {
		t.Fatalf("first request: %d, want 200", status)
	}
	if status, h, _ := get(t, srv.URL+"/b", nil); status != http.StatusServiceUnavailable || h.Get("X-Cfbench-Proxy") != "over capacity" {
		t.Errorf("second request: %d %q, want 503 over capacity", status, h.Get("X-Cfbench-Proxy"))
	}
	if n := seen.Load(); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
	if s := p.Stats(); s.Forwarded != 1 || s.Rejected != 1 {
		t.Errorf("stats %+v, want 1 forwarded, 1 rejected", s)
	}
}

// TestPacer checks the schedule on a clock the test sets: slots 1/rate apart from the
// first request, never before a request comes, none booked beyond the deadline.
func TestPacer(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	pc := newPacer(100) // 10 ms apart
	steps := []struct {
		now, deadline, want time.Time
		ok                  bool
	}{
		{ms(0), ms(1000), ms(0), true},      // the first goes at once
		{ms(0), ms(1000), ms(10), true},     // the second, asked at once, waits a slot
		{ms(1), ms(1000), ms(20), true},     // and so on
		{ms(5), ms(25), time.Time{}, false}, // slot 30 is past the deadline: refused, not booked
		{ms(5), ms(30), ms(30), true},       // so slot 30 is still free
		{ms(100), ms(200), ms(100), true},   // after a lull, at once again
		{ms(100), ms(200), ms(110), true},   // no burst builds up meanwhile
	}
	for i, s := range steps {
		got, ok := pc.reserve(s.now, s.deadline)
		if ok != s.ok || !got.Equal(s.want) {
			t.Errorf("step %d: reserve(%v, %v) = %v, %v; want %v, %v", i, s.now.Sub(t0), s.deadline.Sub(t0), got.Sub(t0), ok, s.want.Sub(t0), s.ok)
		}
	}
}

// TestForwarding: method, path under the upstream's base path, query, body and
// headers reach the upstream; Host is the upstream's; X-Forwarded-For names the
// client; the answer comes back as the upstream gave it.
func TestForwarding(t *testing.T) {
	t.Parallel()
	type got struct {
		Method, Path, Query, Host, Body, TraceID, ForwardedFor string
	}
	up := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(got{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, string(b), r.Header.Get("X-B3-Traceid"), r.Header.Get("X-Forwarded-For")})
	}))
	base := *up
	base.Path = "/base"
	_, srv := start(t, Config{Upstream: &base, MaxConcurrent: 2, MaxRate: 1000})

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/ads?limit=3", strings.NewReader(`{"title":"bike"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "proxy-plateau.apps.localhost"
	req.Header.Set("X-B3-TraceId", "4bf92f3577b34da6a3ce929d0e0e4736")
	res, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var g got
	if err := json.NewDecoder(res.Body).Decode(&g); err != nil {
		t.Fatal(err)
	}
	want := got{"POST", "/base/ads", "limit=3", up.Host, `{"title":"bike"}`, "4bf92f3577b34da6a3ce929d0e0e4736", "127.0.0.1"}
	if res.StatusCode != http.StatusCreated || res.Header.Get("X-Upstream") != "yes" || g != want {
		t.Errorf("got %d %+v, want 201 %+v", res.StatusCode, g, want)
	}
}

// TestConnectTo: the proxy dials ConnectTo, and the upstream URL's host is only the
// Host header (a router routes on it).
func TestConnectTo(t *testing.T) {
	t.Parallel()
	up := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Host) }))
	_, srv := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: "bulletin-java.apps.localhost"}, ConnectTo: up.Host, MaxConcurrent: 1})
	if status, _, body := get(t, srv.URL+"/", nil); status != http.StatusOK || body != "bulletin-java.apps.localhost" {
		t.Errorf("got %d %q, want 200 with the upstream's host", status, body)
	}
}

// TestUpstreamDown: an upstream that refuses connections gives 502, and its place is
// freed for the next request.
func TestUpstreamDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p, srv := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: dead}, MaxConcurrent: 1, MaxWait: time.Millisecond})
	for i := range 2 {
		if status, h, _ := get(t, srv.URL+"/", nil); status != http.StatusBadGateway || h.Get("X-Cfbench-Proxy") != "upstream failed" {
			t.Errorf("request %d: %d %q, want 502 upstream failed", i, status, h.Get("X-Cfbench-Proxy"))
		}
	}
	if s := p.Stats(); s.Forwarded != 2 || s.Rejected != 0 || s.InFlight != 0 {
		t.Errorf("stats %+v, want 2 forwarded", s)
	}
}

// TestStatsEndpoint answers the counters and is not forwarded.
func TestStatsEndpoint(t *testing.T) {
	t.Parallel()
	var seen atomic.Int64
	up := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1) }))
	_, srv := start(t, Config{Upstream: up, MaxConcurrent: 3, MaxRate: 400})
	get(t, srv.URL+"/x", nil)
	status, h, body := get(t, srv.URL+StatsPath, nil)
	var s Stats
	if err := json.Unmarshal([]byte(body), &s); err != nil || status != http.StatusOK || h.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %q: %v", status, h.Get("Content-Type"), body, err)
	}
	if want := (Stats{Forwarded: 1, MaxConcurrent: 3, MaxRate: 400}); s != want || seen.Load() != 1 {
		t.Errorf("stats %+v (upstream saw %d), want %+v (upstream saw 1)", s, seen.Load(), want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	up := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	for _, c := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no upstream", Config{}, ErrNoUpstream},
		{"no host", Config{Upstream: &url.URL{Scheme: "http"}}, ErrNoUpstream},
		{"other scheme", Config{Upstream: &url.URL{Scheme: "ftp", Host: "x"}}, ErrNoUpstream},
		{"negative concurrency", Config{Upstream: up, MaxConcurrent: -1}, ErrBadLimit},
		{"negative rate", Config{Upstream: up, MaxRate: -1}, ErrBadLimit},
		{"negative wait", Config{Upstream: up, MaxWait: -time.Second}, ErrBadLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New(c.cfg); !errors.Is(err, c.want) {
				t.Errorf("New: %v, want %v", err, c.want)
			}
		})
	}
}
