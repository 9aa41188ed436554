package logcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

const (
	appGUID = "0b1e7c2a-5a8e-4c55-9f3a-2d7e6f1a9b10"
	t0      = int64(1732460000000000000)
	token   = "bearer t0k3n"
)

// fakeLogCache serves envelopes as Log Cache's read API does: [start_time, end_time),
// oldest first, at most limit, 404 without the token or for an unknown source. fail,
// if set, may answer a request instead (status, Retry-After); 0 lets it through.
type fakeLogCache struct {
	mu       sync.Mutex
	envs     []json.RawMessage
	ts       []int64
	requests int
	fail     func(n int) (status int, retryAfter string)
}

func newFake(t *testing.T) (*fakeLogCache, *httptest.Server) {
	t.Helper()
	f := &fakeLogCache{}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

// add adds envelopes (JSON objects with a "timestamp").
func (f *fakeLogCache) add(t *testing.T, envs ...json.RawMessage) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range envs {
		var h struct{ Timestamp string }
		if err := json.Unmarshal(e, &h); err != nil {
			t.Fatal(err)
		}
		ts, _ := strconv.ParseInt(h.Timestamp, 10, 64)
		i, _ := slices.BinarySearch(f.ts, ts+1)
		f.ts, f.envs = slices.Insert(f.ts, i, ts), slices.Insert(f.envs, i, e)
	}
}

// recorded adds the envelopes of testdata/envelopes.json: what the rep sends for two
// instances of a Java app over two 15 s intervals, written by hand in the shape of
// diego-logging-client's SendAppMetrics (two gauge envelopes per sample, microseconds
// apart, with the tags CC and the Loggregator agent add), plus a log-rate gauge and an
// app's own metric, which are no container metrics.
func (f *fakeLogCache) recorded(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "envelopes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Envelopes struct{ Batch []json.RawMessage }
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	f.add(t, r.Envelopes.Batch...)
}

func (f *fakeLogCache) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/api/v1/meta" { // read at every poll; not counted among the reads
		if r.Header.Get("Authorization") != token {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"meta":{%q:{"count":"%d"}}}`, appGUID, len(f.envs))
		return
	}
	f.requests++
	if f.fail != nil {
		if status, after := f.fail(f.requests); status != 0 {
			if after != "" {
				w.Header().Set("Retry-After", after)
			}
			http.Error(w, `{"code":14,"message":"unavailable"}`, status)
			return
		}
	}
	if r.Header.Get("Authorization") != token || r.URL.Path != "/api/v1/read/"+appGUID {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if !slices.Equal(q["envelope_types"], []string{"GAUGE"}) {
		http.Error(w, "want envelope_types=GAUGE", http.StatusBadRequest)
		return
	}
	start, _ := strconv.ParseInt(q.Get("start_time"), 10, 64)
	end, err := strconv.ParseInt(q.Get("end_time"), 10, 64)
	limit, err2 := strconv.Atoi(q.Get("limit"))
	if err != nil || err2 != nil || limit > 1000 {
		http.Error(w, "bad end_time or limit", http.StatusInternalServerError)
		return
	}
	batch := []json.RawMessage{}
	for i, ts := range f.ts {
		if ts >= start && ts < end && len(batch) < limit {
			batch = append(batch, f.envs[i])
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"envelopes": map[string]any{"batch": batch}})
}

// authDoer adds the token, as go-cfclient's auth client does.
type authDoer struct{ token string }

// noKeepAlive leaves no idle connection behind a request, so that the lifecycle suite's
// goroutine check does not wait for an idle connection to time out.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (d authDoer) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Authorization", d.token)
	return noKeepAlive.Do(r)
}

// sink records rows; fail, if set, fails inserts.
type sink struct {
	mu   sync.Mutex
	rows []resultsdb.ContainerMetric
	fail bool
}

func (s *sink) InsertContainerMetrics(_ context.Context, rows []resultsdb.ContainerMetric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("database gone")
	}
	s.rows = append(s.rows, rows...)
	return nil
}

func (s *sink) all() []resultsdb.ContainerMetric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rows)
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) set(ns int64)   { c.mu.Lock(); c.now = time.Unix(0, ns); c.mu.Unlock() }
func newClock(ns int64) *clock  { c := &clock{}; c.set(ns); return c }
func ptr[T any](v T) *T         { return &v }
func newPoller(t *testing.T, url string, s Sink, c *clock, mod func(*Config)) *Poller {
	t.Helper()
	cfg := Config{URL: url + "/", Client: authDoer{token}, Sink: s, RunID: "run-1", Clock: c.Now,
		Targets: []Target{{AppName: "bulletin-java", AppGUID: appGUID}}, Since: time.Unix(0, t0-int64(time.Minute)),
		RetryWait: time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// row is a compact view of a stored row for comparisons.
type row struct {
	At                                    int64
	Index                                 int
	Mem, Disk, Quota, Used, Entitled, Age *int64
	Uptime                                *int64
}

func view(rs []resultsdb.ContainerMetric) []row {
	out := []row{}
	for _, r := range rs {
		out = append(out, row{r.At.UnixNano(), r.InstanceIndex, r.MemBytes, r.DiskBytes, r.MemQuotaBytes,
			r.CPUTimeNS, r.EntitlementNS, r.ContainerAgeNS, r.UptimeSeconds})
	}
	return out
}

func (r row) String() string {
	f := func(v *int64) string {
		if v == nil {
			return "nil"
		}
		return fmt.Sprint(*v)
	}
	return fmt.Sprintf("{at %d #%d mem %s disk %s quota %s used %s entitled %s age %s up %s}", r.At, r.Index,
		f(r.Mem), f(r.Disk), f(r.Quota), f(r.Used), f(r.Entitled), f(r.Age), f(r.Uptime))
}

func equalRows(t *testing.T, got, want []row) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows:\n got  %v\n want %v", got, want)
	}
}

// The recorded envelopes give one row per instance and sample: the two envelopes of a
// sample merged, at the counters' own timestamp; a sample whose usage envelope is
// missing, or whose counters lack one, keeps what it has; log rates and app metrics
// give nothing.
func TestRowsFromRecordedEnvelopes(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.recorded(t)
	s := &sink{}
	p := newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), nil)
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	const s15 = int64(15 * time.Second)
	equalRows(t, view(s.all()), []row{
		{t0 + 36000, 0, ptr[int64](412090368), ptr[int64](140021760), ptr[int64](838860800),
			ptr[int64](61250000000), ptr[int64](120000000000), ptr[int64](480000000000), ptr[int64](480)},
		{t0 + 2041000, 1, ptr[int64](398458880), ptr[int64](140021760), ptr[int64](838860800),
			ptr[int64](9800000000), ptr[int64](119990000000), ptr[int64](479990000000), ptr[int64](479)},
		{t0 + s15 + 30000, 0, nil, nil, nil,
			ptr[int64](74350000000), ptr[int64](123750000000), ptr[int64](495000000000), ptr[int64](495)},
		{t0 + s15 + 2033000, 1, ptr[int64](399507456), ptr[int64](140021760), ptr[int64](838860800),
			ptr[int64](11750000000), nil, ptr[int64](494990000000), ptr[int64](494)},
	})
	for _, r := range s.all() {
		if r.Source != resultsdb.SourceLogCache || r.RunID != "run-1" || r.AppName != "bulletin-java" || r.AppGUID != appGUID ||
			r.ProcessType != "web" || r.State != "" || r.Host != "" || r.CPU != nil || r.CPUEntitlement != nil {
			t.Errorf("row %+v", r)
		}
	}
	// Instance 0's CPU over the 15 s between its readings, from the counters alone.
	rs := s.all()
	cores := float64(*rs[2].CPUTimeNS-*rs[0].CPUTimeNS) / float64(rs[2].At.Sub(rs[0].At))
	if cores < 0.8733 || cores > 0.8734 {
		t.Errorf("Δcpu time / Δt = %v cores, want 13.1 s / 15 s ≈ 0.8733", cores)
	}
}

// Each poll reads from Overlap before the previous one's end: envelopes that arrived
// late are stored, those stored already are not stored again.
func TestLateEnvelopesAndNoDuplicates(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.recorded(t)
	s := &sink{}
	c := newClock(t0 + 20*int64(time.Second))
	p := newPoller(t, srv.URL, s, c, nil)
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.all()); n != 4 {
		t.Fatalf("first poll stored %d rows, want 4", n)
	}
	// An envelope stamped before the first poll's end arrives only now, and a new one.
	late := fmt.Sprintf(`{"timestamp":"%d","instance_id":"2","tags":{"process_type":"web","process_instance_id":"x"},
		"gauge":{"metrics":{"absolute_usage":{"unit":"nanoseconds","value":5},"container_age":{"unit":"nanoseconds","value":7}}}}`, t0+18*int64(time.Second))
	fresh := fmt.Sprintf(`{"timestamp":"%d","instance_id":"0","tags":{"process_type":"web","process_instance_id":"y"},
		"gauge":{"metrics":{"memory":{"unit":"bytes","value":9}}}}`, t0+22*int64(time.Second))
	f.add(t, json.RawMessage(late), json.RawMessage(fresh))
	c.set(t0 + 25*int64(time.Second))
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs := s.all()
	if len(rs) != 6 || rs[4].At.UnixNano() != t0+18*int64(time.Second) || rs[4].InstanceIndex != 2 || *rs[4].CPUTimeNS != 5 ||
		rs[5].InstanceIndex != 0 || *rs[5].MemBytes != 9 || rs[5].CPUTimeNS != nil {
		t.Errorf("after the second poll: %v", view(rs))
	}
	// Nothing new: nothing stored.
	c.set(t0 + 30*int64(time.Second))
	if err := p.Poll(t.Context()); err != nil || len(s.all()) != 6 {
		t.Errorf("third poll: %v, %d rows", err, len(s.all()))
	}
}

// A source Log Cache does not know (404) yields nothing and is no error; the others
// are read.
func TestUnknownSource(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.recorded(t)
	s := &sink{}
	p := newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), func(c *Config) {
		c.Targets = append(c.Targets, Target{AppName: "gone", AppGUID: "deleted-app"})
	})
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, r := range s.all() {
		if r.AppName != "bulletin-java" {
			t.Errorf("row of %s", r.AppName)
		}
	}
	if len(s.all()) != 4 {
		t.Errorf("%d rows, want 4", len(s.all()))
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	t.Run("429 and 503 then success", func(t *testing.T) {
		t.Parallel()
		f, srv := newFake(t)
		f.recorded(t)
		f.fail = func(n int) (int, string) {
			switch n {
			case 1:
				return http.StatusTooManyRequests, ""
			case 2:
				return http.StatusServiceUnavailable, ""
			}
			return 0, ""
		}
		s := &sink{}
		p := newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), nil)
		if err := p.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(s.all()) != 4 || f.requests != 3 {
			t.Errorf("%d rows after %d requests, want 4 after 3", len(s.all()), f.requests)
		}
	})
	t.Run("always 502: the poll fails after the retries, the next one reads it all", func(t *testing.T) {
		t.Parallel()
		f, srv := newFake(t)
		f.recorded(t)
		down := true
		f.fail = func(int) (int, string) {
			if down {
				return http.StatusBadGateway, ""
			}
			return 0, ""
		}
		s := &sink{}
		c := newClock(t0 + int64(time.Minute))
		p := newPoller(t, srv.URL, s, c, func(c *Config) { c.Retries = 2 })
		if err := p.Poll(t.Context()); err == nil || len(s.all()) != 0 || f.requests != 3 {
			t.Fatalf("poll: %v, %d rows, %d requests; want an error after 1 + 2 retries", err, len(s.all()), f.requests)
		}
		f.mu.Lock()
		down = false
		f.mu.Unlock()
		c.set(t0 + 10*int64(time.Minute)) // beyond the overlap: the cursor must not have moved
		if err := p.Poll(t.Context()); err != nil || len(s.all()) != 4 {
			t.Errorf("next poll: %v, %d rows, want 4", err, len(s.all()))
		}
	})
	t.Run("400 is not retried", func(t *testing.T) {
		t.Parallel()
		f, srv := newFake(t)
		f.fail = func(int) (int, string) { return http.StatusBadRequest, "" }
		p := newPoller(t, srv.URL, &sink{}, newClock(t0), nil)
		if err := p.Poll(t.Context()); err == nil || f.requests != 1 {
			t.Errorf("poll: %v after %d requests, want an error after 1", err, f.requests)
		}
	})
}

// A store that fails keeps the cursor: the next poll stores the same rows.
func TestStoreFailureRereads(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	f.recorded(t)
	s := &sink{fail: true}
	c := newClock(t0 + int64(time.Minute))
	p := newPoller(t, srv.URL, s, c, nil)
	if err := p.Poll(t.Context()); err == nil {
		t.Fatal("a failed insert was not reported")
	}
	s.mu.Lock()
	s.fail = false
	s.mu.Unlock()
	c.set(t0 + 10*int64(time.Minute))
	if err := p.Poll(t.Context()); err != nil || len(s.all()) != 4 {
		t.Errorf("%v, %d rows, want 4", err, len(s.all()))
	}
}

// More than a page (1000 envelopes) is read page by page, envelopes sharing the
// timestamp at a page's edge included once.
func TestPaging(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	var envs []json.RawMessage
	for i := range 2500 {
		ts := t0 + int64(i/2)*int64(time.Millisecond) // two instances per timestamp
		envs = append(envs, json.RawMessage(fmt.Sprintf(`{"timestamp":"%d","instance_id":"%d","tags":{},
			"gauge":{"metrics":{"absolute_usage":{"unit":"nanoseconds","value":%d}}}}`, ts, i%2, i)))
	}
	f.add(t, envs...)
	s := &sink{}
	p := newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), nil)
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs := s.all()
	seen := map[int64]bool{}
	for _, r := range rs {
		seen[*r.CPUTimeNS] = true
	}
	if len(rs) != 2500 || len(seen) != 2500 || f.requests != 3 {
		t.Errorf("%d rows (%d distinct) in %d requests, want 2500 in 3", len(rs), len(seen), f.requests)
	}
}

// The lifecycle: Close before Start returns at once and the poller never starts; a
// started poller polls until Close, which waits; Wait after Close returns at once.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	_, srv := newFake(t)
	p := newPoller(t, srv.URL, &sink{}, newClock(t0), nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); !errors.Is(err, lifecycle.ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if err := p.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}

	f, srv := newFake(t)
	f.recorded(t)
	s := &sink{}
	p = newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), func(c *Config) { c.Interval = time.Millisecond })
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context()); !errors.Is(err, lifecycle.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		n := f.requests
		f.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no three polls in a minute")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(s.all()) != 4 {
		t.Errorf("%d rows after several polls, want the 4 once", len(s.all()))
	}

	// The end of Start's context stops it too.
	ctx, cancel := context.WithCancel(t.Context())
	p = newPoller(t, srv.URL, &sink{}, newClock(t0), nil)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestNewNeedsURLClientAndSink(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Client: authDoer{}, Sink: &sink{}}, {URL: "http://127.0.0.1:1", Sink: &sink{}}, {URL: "http://127.0.0.1:1", Client: authDoer{}}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestConformance runs the lifecycle suite against a poller reading a Log Cache on a
// short interval.
func TestConformance(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f, srv := newFake(t)
		f.recorded(t)
		p := newPoller(t, srv.URL, &sink{}, newClock(t0+int64(time.Minute)), func(c *Config) { c.Interval = 10 * time.Millisecond })
		return lifecycletest.Subject{Part: p, NoFailure: "a failed poll is logged and retried at the next tick"}
	})
}

// ReadPast: a window's end is read past once every instance that was reporting before
// it has a counters reading at or after it; an instance silent for longer than the
// interval is gone and not waited for, and a usage reading alone does not count.
func TestReadPast(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	s := &sink{}
	c := newClock(t0 + 10*int64(time.Second))
	p := newPoller(t, srv.URL, s, c, func(cfg *Config) { cfg.Interval = time.Second })
	at := func(sec float64) int64 { return t0 + int64(sec*float64(time.Second)) }
	counters := func(i int, ts int64) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"timestamp":"%d","instance_id":"%d","tags":{"process_type":"web","process_instance_id":"p%d"},
			"gauge":{"metrics":{"absolute_usage":{"unit":"nanoseconds","value":1},"container_age":{"unit":"nanoseconds","value":1}}}}`, ts, i, i))
	}
	usage := func(i int, ts int64) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"timestamp":"%d","instance_id":"%d","tags":{"process_type":"web","process_instance_id":"p%d"},
			"gauge":{"metrics":{"memory":{"unit":"bytes","value":1}}}}`, ts, i, i))
	}
	end := time.Unix(0, at(10))
	poll := func(now float64) {
		t.Helper()
		c.set(at(now))
		if err := p.Poll(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	f.add(t, counters(0, at(9.8)), counters(1, at(9.9)), counters(2, at(5)))
	poll(10.1)
	if p.ReadPast(end) {
		t.Fatal("read past the end with no instance's reading after it")
	}
	f.add(t, counters(0, at(10.05)), usage(1, at(10.1)))
	poll(10.2)
	if p.ReadPast(end) {
		t.Fatal("read past the end while instance 1 has only a usage reading after it")
	}
	f.add(t, counters(1, at(10)))
	poll(10.3)
	if !p.ReadPast(end) {
		t.Fatal("not read past the end with a reading at it from every instance reporting before it (instance 2, silent since 5 s, is gone)")
	}
	if p.ReadPast(time.Unix(0, at(10.2))) {
		t.Fatal("read past a later end that instance 1's reading at 10 s is before")
	}
}
