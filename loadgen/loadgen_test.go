package loadgen

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
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

// clients are the generator's HTTP clients; tests of behaviour run against each.
var clients = []string{"h1", "net/http"}

// useClient makes g use the named client; New picks h1 for every http:// target.
func useClient(t testing.TB, g *Generator, name string) {
	t.Helper()
	switch {
	case name == "net/http":
		g.lean, g.why = nil, "test"
	case g.lean == nil:
		t.Fatalf("the generator uses %s", g.Client())
	}
}

func TestClosedLoopRecordsEveryRequestWithItsTraceID(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			testClosedLoopRecordsEveryRequestWithItsTraceID(t, client)
		})
	}
}

func testClosedLoopRecordsEveryRequestWithItsTraceID(t *testing.T, client string) {
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
	useClient(t, g, client)
	start := time.Now()
	g.RunClosed(context.Background(), Phase{Step: 2, WarmupUntil: start.Add(300 * time.Millisecond), End: start.Add(time.Second)})

	if len(rec.s) == 0 || uint64(len(rec.s)) != g.Sent() || len(rec.s) != len(seen) {
		t.Fatalf("recorded %d samples, sent %d, server saw %d distinct trace ids", len(rec.s), g.Sent(), len(seen))
	}
	sort.Slice(rec.s, func(i, j int) bool { return rec.s[i].Seq < rec.s[j].Seq })
	warmupUS := start.Add(300 * time.Millisecond).Sub(epoch).Microseconds()
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
		// Offsets are truncated to whole µs: at the boundary itself either flag is right.
		if s.IntendedUS != warmupUS && s.Warmup() != (s.IntendedUS < warmupUS) {
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
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			testFailedRequestsAreSamplesWithAnErrorClass(t, client)
		})
	}
}

func testFailedRequestsAreSamplesWithAnErrorClass(t *testing.T, client string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused

	rec := &collector{}
	g, _ := newGen(t, "http://"+addr, 2, []Request{{Method: "GET", Path: "/", Weight: 1}}, rec)
	useClient(t, g, client)
	g.cfg.Model, g.cfg.Count = Count, 10 // a count, not a short phase: the machine may be busy
	g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
	if len(rec.s) != 10 {
		t.Fatalf("%d samples recorded, want 10", len(rec.s))
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

func openGen(t *testing.T, target string, rate float64, maxInFlight int, rec Recorder) *Generator {
	t.Helper()
	u, _ := url.Parse(target)
	g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Model: Open, Rate: rate,
		MaxInFlight: maxInFlight, KeepAlive: true, Timeout: 10 * time.Second, TraceTag: 1, WorkerID: 1, Epoch: time.Now()}, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// TestOpenLoopShowsAFreezeAndCountsMissedSends freezes the target for the last half of
// the phase and beyond: every slot of the phase is either sent (late, its latency
// counted from its slot) or counted as missed, and the slots queued behind the freeze
// carry it in their latency, as a corrected generator reports it.
func TestOpenLoopShowsAFreezeAndCountsMissedSends(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			testOpenLoopShowsAFreezeAndCountsMissedSends(t, client)
		})
	}
}

func testOpenLoopShowsAFreezeAndCountsMissedSends(t *testing.T, client string) {
	var frozen atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if frozen.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()

	const rate, inFlight = 200.0, 16
	rec := &collector{}
	g := openGen(t, srv.URL, rate, inFlight, rec)
	useClient(t, g, client)
	start := time.Now()
	ph := Phase{Start: start, End: start.Add(2 * time.Second)}
	freeze := time.AfterFunc(time.Second, func() { frozen.Store(true) })
	defer freeze.Stop()
	thaw := time.AfterFunc(3*time.Second, func() { close(release) })
	defer thaw.Stop()
	g.Run(context.Background(), ph)

	slots := uint64(rate * 2)
	sent, missed := g.Sent(), g.Missed()
	if uint64(len(rec.s)) != sent || sent+missed < slots-1 || sent+missed > slots+1 {
		t.Fatalf("%d samples, %d sent, %d missed: want every one of the %d slots sent or missed", len(rec.s), sent, missed, slots)
	}
	if missed < slots/4 {
		t.Fatalf("only %d of %d slots missed although the target froze for the second half", missed, slots)
	}
	// The requests in flight when the target froze waited until it thawed, 1 s after
	// the phase ended: their latency includes the whole freeze still ahead of them.
	lat := make([]time.Duration, len(rec.s))
	for i, s := range rec.s {
		lat[i] = time.Duration(s.LatencyUS) * time.Microsecond
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if top := lat[len(lat)-inFlight/2]; top < time.Second {
		t.Fatalf("the slowest requests took %v: the freeze does not show", top)
	}
}

func TestOpenLoopKeepsItsScheduleAndAlignsLateJoiners(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	const rate = 400.0
	interval := time.Duration(float64(time.Second) / rate)
	rec := &collector{}
	g := openGen(t, srv.URL, rate, 0, rec)
	// The phase began 250 ms before this instance joined: it must start on the next
	// slot of the shared grid, not at the phase start and not off the grid.
	start := time.Now().Add(-250 * time.Millisecond)
	g.cfg.Epoch = start
	g.Run(context.Background(), Phase{Start: start, Joined: true, End: start.Add(time.Second)})
	min := int64(1 << 62)
	for _, s := range rec.s {
		if off := time.Duration(s.IntendedUS) * time.Microsecond; off%interval != 0 {
			t.Fatalf("slot at %v is off the %v grid", off, interval)
		}
		min = minInt(min, s.IntendedUS)
	}
	if first := time.Duration(min) * time.Microsecond; first < 250*time.Millisecond {
		t.Fatalf("a late joiner sent a request intended %v after the phase start, before it joined", first)
	}
	// From its first slot to the end, every slot was sent or, on a machine too busy to
	// keep up, counted as missed.
	want := uint64((time.Second - time.Duration(min)*time.Microsecond) / interval)
	if got := uint64(len(rec.s)) + g.Missed(); got < want-1 || got > want+1 {
		t.Fatalf("sent %d and missed %d, want the %d slots from %dµs to the end", len(rec.s), g.Missed(), want, min)
	}
}

// A generator that starts its planned phase late (its timer fired late on a busy host)
// sends the slots it is late for at once, their lateness counted, and skips none.
func TestOpenLoopLateToItsPhaseSkipsNoSlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	const rate = 400.0
	rec := &collector{}
	g := openGen(t, srv.URL, rate, 0, rec)
	start := time.Now().Add(-100 * time.Millisecond)
	g.cfg.Epoch = start
	g.Run(context.Background(), Phase{Start: start, End: start.Add(500 * time.Millisecond)})
	if got := uint64(len(rec.s)) + g.Missed(); got != 200 {
		t.Fatalf("sent %d and missed %d, want the phase's 200 slots", len(rec.s), g.Missed())
	}
	first := slices.MinFunc(rec.s, func(a, b sample.Sample) int { return cmp.Compare(a.IntendedUS, b.IntendedUS) })
	if first.IntendedUS != 0 || first.StartDelayUS < 100_000 {
		t.Fatalf("first request intended at %d µs, sent %d µs late; want the phase's first slot, at least 100 ms late", first.IntendedUS, first.StartDelayUS)
	}
}

func minInt(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func TestCountModelSendsExactlyCount(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			testCountModelSendsExactlyCount(t, client)
		})
	}
}

func testCountModelSendsExactlyCount(t *testing.T, client string) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	rec := &collector{}
	g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Model: Count, Users: 4, Count: 37,
		Timeout: 5 * time.Second, Epoch: time.Now()}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	useClient(t, g, client)
	g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
	if len(rec.s) != 37 {
		t.Fatalf("count model sent %d requests, want 37", len(rec.s))
	}
}

// A phase's users replace the configured ones (a ramp of users): with 3 the target sees
// 3 requests at once (the first three wait for each other) and never a 4th.
func TestPhaseUsersReplaceTheConfiguredOnes(t *testing.T) {
	const users = 3
	var (
		inFlight, most atomic.Int32
		arrived        = make(chan struct{})
		once           sync.Once
	)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if n == users {
			once.Do(func() { close(arrived) })
		}
		select { // the first requests wait until all users are in, then everything flows
		case <-arrived:
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	g, _ := newGen(t, srv.URL, 1, []Request{{Method: "GET", Path: "/", Weight: 1}}, &collector{})
	stop := make(chan struct{}) // the phase ends once all users were in, however slow the machine
	go func() {
		defer close(stop)
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
		}
	}()
	g.Run(context.Background(), Phase{Users: users, End: time.Now().Add(time.Minute), Stop: stop})
	if m := most.Load(); m != users {
		t.Fatalf("at most %d requests at once, want the phase's %d users (the generator was made with 1)", m, users)
	}
}
