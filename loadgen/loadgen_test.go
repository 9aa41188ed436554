package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/sample"
)

type collector struct {
	mu sync.Mutex
	s  []sample.Sample
}

func (c *collector) Add(s sample.Sample) {
	c.mu.Lock()
	c.s = append(c.s, s)
	c.mu.Unlock()
}

func newGen(t *testing.T, target string, users int, reqs []Request, rec Recorder) (*Generator, time.Time) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Now()
	g, err := New(Config{Target: u, Requests: reqs, Users: users, KeepAlive: true, Timeout: 5 * time.Second,
		CorrelationHeader: "X-Correlation-Id", TraceTag: 0xabcdef01, WorkerID: 7, Epoch: epoch}, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g, epoch
}

func TestClosedLoopRecordsEveryRequestWithItsTraceID(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]string{} // trace id -> path
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tid := r.Header.Get("X-B3-TraceId")
		if r.Header.Get("X-Correlation-Id") != tid || len(r.Header.Get("X-B3-SpanId")) != 16 || r.Header.Get("Accept") != "text/plain" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen[tid] = r.URL.RequestURI()
		mu.Unlock()
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("hello"))
	}))
	defer srv.Close()

	hdr := http.Header{"Accept": {"text/plain"}}
	reqs := []Request{{Method: "GET", Path: "/a?x=1", Header: hdr, Weight: 3}, {Method: "GET", Path: "/missing", Header: hdr, Weight: 1}}
	rec := &collector{}
	g, epoch := newGen(t, srv.URL+"/", 3, reqs, rec)
	start := time.Now()
	g.RunClosed(context.Background(), Phase{Step: 2, WarmupUntil: start.Add(50 * time.Millisecond), End: start.Add(300 * time.Millisecond)})

	if len(rec.s) == 0 || uint64(len(rec.s)) != g.Sent() || len(rec.s) != len(seen) {
		t.Fatalf("recorded %d samples, sent %d, server saw %d distinct trace ids", len(rec.s), g.Sent(), len(seen))
	}
	sort.Slice(rec.s, func(i, j int) bool { return rec.s[i].Seq < rec.s[j].Seq })
	warmupUS := start.Add(50 * time.Millisecond).Sub(epoch).Microseconds()
	var warm, notFound int
	for i, s := range rec.s {
		if s.Seq != uint32(i+1) {
			t.Fatalf("sample %d has seq %d: sequence numbers must be 1..n without gaps", i, s.Seq)
		}
		path, ok := seen[sample.NewTraceID(0xabcdef01, 7, uint64(s.Seq)).String()]
		if !ok || path != []string{"/a?x=1", "/missing"}[s.Request] {
			t.Fatalf("seq %d: server saw path %q for its trace id, sample says request %d", s.Seq, path, s.Request)
		}
		wantStatus := []int16{200, 404}[s.Request]
		if s.Status != wantStatus || s.Err != sample.ErrNone || s.Step != 2 || s.LatencyUS <= 0 {
			t.Fatalf("seq %d: %+v", s.Seq, s)
		}
		if s.Request == 0 && s.Bytes != 5 {
			t.Fatalf("seq %d: bytes %d, want 5", s.Seq, s.Bytes)
		}
		if s.Warmup() != (s.IntendedUS < warmupUS) {
			t.Fatalf("seq %d: warmup flag %v but intended %dµs, warm-up ends at %dµs", s.Seq, s.Warmup(), s.IntendedUS, warmupUS)
		}
		if s.Warmup() {
			warm++
		}
		if s.Status == 404 {
			notFound++
		}
	}
	if warm == 0 || warm == len(rec.s) || notFound == 0 {
		t.Fatalf("warm-up samples %d, 404s %d of %d: want some of each", warm, notFound, len(rec.s))
	}
}

func TestFailedRequestsAreSamplesWithAnErrorClass(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused

	rec := &collector{}
	g, _ := newGen(t, "http://"+addr, 2, []Request{{Method: "GET", Path: "/", Weight: 1}}, rec)
	g.RunClosed(context.Background(), Phase{End: time.Now().Add(100 * time.Millisecond)})
	if len(rec.s) == 0 {
		t.Fatal("no samples recorded")
	}
	for _, s := range rec.s {
		if s.Err != sample.ErrRefused || s.Status != 0 || !s.Failed() {
			t.Fatalf("sample %+v: want a refused error without status", s)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	ok := []Request{{Method: "GET", Path: "/", Weight: 1}}
	cases := map[string]Config{
		"no target":   {Requests: ok, Users: 1, Timeout: time.Second},
		"no requests": {Target: u, Users: 1, Timeout: time.Second},
		"no users":    {Target: u, Requests: ok, Timeout: time.Second},
		"no timeout":  {Target: u, Requests: ok, Users: 1},
		"zero weight": {Target: u, Requests: []Request{{Method: "GET", Path: "/"}}, Users: 1, Timeout: time.Second},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg, &collector{}); err == nil {
				t.Fatal("New accepted a bad config")
			}
		})
	}
}
