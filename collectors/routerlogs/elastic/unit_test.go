package elastic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// fakeCluster is a scripted Elasticsearch 8: GET /, points in time, and searches
// answered by search (n counts searches from 1).
type fakeCluster struct {
	mu       sync.Mutex
	searches int
	search   func(n int, w http.ResponseWriter, body map[string]any)
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	switch {
	case r.Method == "GET" && r.URL.Path == "/":
		io.WriteString(w, `{"version":{"number":"8.19.5"}}`)
	case strings.HasSuffix(r.URL.Path, "/_pit") && r.Method == "POST":
		io.WriteString(w, `{"id":"pit-1"}`)
	case r.URL.Path == "/_pit" && r.Method == "DELETE":
		io.WriteString(w, `{"succeeded":true,"num_freed":1}`)
	case r.URL.Path == "/_search":
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.searches++
		n := f.searches
		f.mu.Unlock()
		f.search(n, w, body)
	default:
		http.Error(w, `{"error":"unexpected"}`, http.StatusBadRequest)
	}
}

// page answers a search with docs hits (timestamps 1 ms apart from start), or none.
func page(w http.ResponseWriter, start, docs int) {
	var hits []string
	for i := start; i < start+docs; i++ {
		ts := time.Date(2024, 3, 18, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
		hits = append(hits, fmt.Sprintf(`{"_index":"i","_id":"d%d","sort":[%d,%d],"_source":{"@timestamp":%q,"@cf":{"app":"a"},"rtr":{"vcap_request_id":"v%d","timestamp":%q,"status":200}}}`,
			i, ts.UnixNano(), i, ts.Format(time.RFC3339Nano), i, ts.Format(time.RFC3339Nano)))
	}
	fmt.Fprintf(w, `{"pit_id":"pit-1","_scroll_id":"scroll-1","_shards":{"failed":0},"hits":{"total":{"value":3,"relation":"eq"},"hits":[%s]}}`, strings.Join(hits, ","))
}

// fakeClock is a clock whose sleeps advance it and are recorded.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func fakeSource(t *testing.T, h http.Handler, mod func(*Config)) (*Source, *fakeClock) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := Config{URLs: []string{srv.URL}, Index: "logs-app-*"}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now, s.sleep = clock.Now, clock.Sleep
	return s, clock
}

var window = routerlogs.Query{From: time.Date(2024, 3, 18, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 3, 19, 0, 0, 0, 0, time.UTC)}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) {
		if n == 1 {
			page(w, 0, 2)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"type":"unavailable_shards_exception","reason":"no"},"status":503}`)
	}}
	s, clock := fakeSource(t, f, func(c *Config) { c.MaxRetries, c.PageSize = 4, 2 })
	var batches []routerlogs.Batch
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
		batches = append(batches, b)
		return nil
	})
	var re *RetryError
	if !errors.As(err, &re) || re.Attempts != 5 || re.Status != 503 || re.Op != "search" {
		t.Fatalf("Pull = %v (%#v), want a *RetryError after 5 attempts with status 503", err, re)
	}
	if len(batches) != 1 || res.Retrieved != 2 || res.Retries != 4 {
		t.Errorf("%d batches, result %+v; want the first page and 4 retries", len(batches), res)
	}
	// Backoff: doubling from 250 ms with equal jitter (between half and all of it).
	for i, d := range clock.sleeps {
		step := 250 * time.Millisecond << i
		if d < step/2 || d > step {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, d, step/2, step)
		}
	}
	if len(clock.sleeps) != 4 {
		t.Errorf("%d waits, want 4: %v", len(clock.sleeps), clock.sleeps)
	}
}

func TestHonoursRetryAfterAndCapsBackoff(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) {
		switch {
		case n == 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"type":"es_rejected_execution_exception","reason":"queue full"},"status":429}`)
		case n < 8:
			w.WriteHeader(http.StatusBadGateway)
		default:
			page(w, 0, 1)
		}
	}}
	s, clock := fakeSource(t, f, func(c *Config) { c.MaxBackoff = time.Second })
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Throttled != 1 || res.Retries != 7 || res.Retrieved != 1 {
		t.Errorf("result %+v, want 1 throttled, 7 retries, 1 retrieved", res)
	}
	if len(clock.sleeps) != 7 || clock.sleeps[0] != 7*time.Second {
		t.Fatalf("waits %v, want 7 starting with Retry-After's 7s", clock.sleeps)
	}
	for _, d := range clock.sleeps[1:] {
		if d > time.Second {
			t.Errorf("wait %v beyond MaxBackoff", d)
		}
	}
}

func TestPartialResultsAreRetriedNotEmitted(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) {
		if n == 1 {
			io.WriteString(w, `{"_shards":{"failed":1,"failures":[{"reason":{"type":"node_disconnected_exception"}}]},"hits":{"hits":[{"_index":"i","_id":"x","sort":[1,1],"_source":{}}]}}`)
			return
		}
		page(w, 0, 1)
	}}
	s, _ := fakeSource(t, f, nil)
	var got []string
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
		for _, e := range b.Entries {
			got = append(got, e.DocID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "d0" || res.Retries != 1 {
		t.Errorf("entries %v, result %+v; want d0 only after a retry", got, res)
	}
}

func TestPacesRequests(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) {
		page(w, (n-1)*2, min(2, 11-(n-1)*2))
	}}
	var mu sync.Mutex
	var sent []time.Time
	var s *Source
	var clock *fakeClock
	s, clock = fakeSource(t, f, func(c *Config) {
		c.PageSize = 2
		c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, clock.Now())
			mu.Unlock()
			return http.DefaultTransport.RoundTrip(r)
		})
	})
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{MaxRequestsPerSecond: 4}, func(routerlogs.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Retrieved != 11 || res.Requests != len(sent) || len(sent) < 8 {
		t.Fatalf("result %+v, %d requests sent", res, len(sent))
	}
	for i := 1; i < len(sent); i++ {
		if gap := sent[i].Sub(sent[i-1]); gap < 250*time.Millisecond {
			t.Errorf("request %d came %v after the previous, want ≥ 250ms at 4/s", i, gap)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestBudgetSizesRequests checks that no page asks for more than the budget leaves.
func TestBudgetSizesRequests(t *testing.T) {
	var sizes []float64
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, body map[string]any) {
		size, _ := body["size"].(float64)
		sizes = append(sizes, size)
		page(w, (n-1)*4, int(size))
	}}
	s, _ := fakeSource(t, f, func(c *Config) { c.PageSize = 4 })
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{MaxDocuments: 10}, func(routerlogs.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Retrieved != 10 || !res.BudgetExhausted || fmt.Sprint(sizes) != "[4 4 2]" {
		t.Errorf("result %+v, sizes %v; want 10 retrieved in pages of 4, 4, 2", res, sizes)
	}
}

func TestRefusedServerInfoProbes(t *testing.T) {
	// An OpenSearch that refuses GET / (a user without cluster privileges): the pull
	// finds its point-in-time API by trying.
	var paths []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/":
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":{"type":"security_exception","reason":"no permissions"},"status":403}`)
		case strings.HasSuffix(r.URL.Path, "/_pit"):
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"no handler found for uri"}`)
		case strings.HasSuffix(r.URL.Path, "/_search/point_in_time") && r.Method == "POST":
			io.WriteString(w, `{"pit_id":"os-pit"}`)
		case r.URL.Path == "/_search":
			page(w, 0, 1)
		default:
			io.WriteString(w, `{}`)
		}
	})
	s, _ := fakeSource(t, h, nil)
	if _, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := "GET / POST /logs-app-*/_pit POST /logs-app-*/_search/point_in_time POST /_search DELETE /_search/point_in_time"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("requests\n%s\nwant\n%s", got, want)
	}
}

func TestNonRetryableErrorIsTyped(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"root_cause":[{"type":"query_shard_exception","reason":"failed to create query"}],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":400}`)
	}}
	s, _ := fakeSource(t, f, nil)
	_, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil })
	var re *ResponseError
	if !errors.As(err, &re) || re.Status != 400 || re.Type != "search_phase_execution_exception" {
		t.Fatalf("Pull = %v, want a *ResponseError 400", err)
	}
}

func TestLookupSpellings(t *testing.T) {
	src := map[string]any{
		"a":     map[string]any{"b": map[string]any{"c": 1.0}, "x.y": "dotted-inner"},
		"d.e":   "dotted",
		"f":     map[string]any{"g.h": map[string]any{"i": "mixed"}},
		"j":     nil,
		"k.l.m": "flat",
	}
	for path, want := range map[string]any{"a.b.c": 1.0, "a.x.y": "dotted-inner", "d.e": "dotted", "f.g.h.i": "mixed", "k.l.m": "flat"} {
		if got, ok := lookup(src, path); !ok || got != want {
			t.Errorf("lookup(%q) = %v, %v; want %v", path, got, ok, want)
		}
	}
	for _, path := range []string{"j", "a.b", "a.b.c.d", "", "zz"} {
		if v, ok := lookup(src, path); ok && path != "a.b" {
			t.Errorf("lookup(%q) = %v, want absent", path, v)
		}
	}
}

// TestSchemaDecodesEverySpelling decodes one answer whose documents spell the wanted
// paths differently, and a path that is both a value and an object on the way.
func TestSchemaDecodesEverySpelling(t *testing.T) {
	s := newSchema([]string{"rtr.status", "rtr.app.id", "@cf.app", "obj", "obj.inner"})
	b := []byte(`{"hits":{"total":{"value":4,"relation":"eq"},"hits":[
		{"_index":"i","_id":"1","sort":[1],"_source":{"rtr":{"status":200,"app":{"id":"g1"}},"@cf":{"app":"a1"},"obj":{"inner":"x"}}},
		{"_index":"i","_id":"2","sort":[2],"_source":{"rtr.status":201,"rtr.app.id":"g2","@cf.app":"a2","other":{"big":[1,2,3]}}},
		{"_index":"i","_id":"3","sort":[3],"_source":{"rtr":{"app.id":"g3","status":"202"},"@cf":"not an object"}},
		{"_index":"i","_id":"4","sort":[4]}]}}`)
	a, err := s.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for i := range a.Hits {
		h := &a.Hits[i]
		st, _ := s.get(h, "rtr.status")
		id, _ := s.get(h, "rtr.app.id")
		app, _ := s.get(h, "@cf.app")
		inner, _ := s.get(h, "obj.inner")
		got += fmt.Sprintf("%s:%v,%v,%v,%v ", h.ID, st, id, app, inner)
	}
	want := "1:200,g1,a1,x 2:201,g2,a2,<nil> 3:202,g3,<nil>,<nil> 4:<nil>,<nil>,<nil>,<nil> "
	if got != want {
		t.Errorf("decoded\n%s\nwant\n%s", got, want)
	}
	if total(a.Total) != 4 {
		t.Errorf("total %s", a.Total)
	}
}

func TestDecodeRecordConversions(t *testing.T) {
	f := DefaultFields()
	src := map[string]any{
		"rtr": map[string]any{
			"timestamp": "2024-03-18T23:59:59.123456789Z", "verb": "GET", "path": "/x", "http_spec": "HTTP/1.1",
			"status": 200.0, "referer": "-", "src": map[string]any{"host": "::1", "port": 4711.0},
			"dst":              "10.0.0.1:8080", // text instead of an object
			"x_forwarded_for":  []any{"1.2.3.4", "10.0.0.1"},
			"response_time_ms": 12.345678, "gorouter_time_sec": "0.000123",
			"app":   map[string]any{"id": "g", "index": 3.0},
			"extra": map[string]any{"instance_id": "-", "backend_time": "0.01", "failed_attempts": "2", "custom": 5.0},
		},
	}
	var r accesslog.Record
	if !decodeRecord(&f, func(p string) (any, bool) { return lookup(src, p) }, time.Time{}, &r) {
		t.Fatal("decodeRecord failed")
	}
	want := accesslog.Record{
		Time: time.Date(2024, 3, 18, 23, 59, 59, 123456789, time.UTC), Method: "GET", URI: "/x", Proto: "HTTP/1.1",
		Status: 200, RemoteAddr: "[::1]:4711", BackendAddr: "10.0.0.1:8080", XForwardedFor: "1.2.3.4, 10.0.0.1",
		ResponseTime: 12345678 * time.Nanosecond, GorouterTime: 123 * time.Microsecond, AppID: "g", AppIndex: 3,
		BackendTime: 10 * time.Millisecond, FailedAttempts: 2, Extra: map[string]string{"custom": "5"},
		Present: accesslog.FieldXForwardedFor | accesslog.FieldResponseTime | accesslog.FieldGorouterTime | accesslog.FieldAppID |
			accesslog.FieldAppIndex | accesslog.FieldInstanceID | accesslog.FieldBackendTime | accesslog.FieldFailedAttempts,
	}
	if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", want) {
		t.Errorf("got\n%+v\nwant\n%+v", r, want)
	}
	bad := map[string]any{"rtr": map[string]any{"timestamp": "yesterday"}}
	if decodeRecord(&f, func(p string) (any, bool) { return lookup(bad, p) }, time.Time{}, &r) {
		t.Error("a request time that does not parse was accepted")
	}
}

func TestFieldsSet(t *testing.T) {
	var f Fields
	if err := f.Set("response_time_sec=-, response_time_ms=latency_ms,app=kubernetes.labels.app"); err != nil {
		t.Fatal(err)
	}
	f = f.withDefaults()
	if f.ResponseTimeSec != "" || f.ResponseTimeMS != "latency_ms" || f.App != "kubernetes.labels.app" || f.Timestamp != "@timestamp" {
		t.Errorf("fields %+v", f)
	}
	for _, bad := range []string{"nosuch=x", "app", "app="} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestNewRejects(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no URL":       {},
		"bad URL":      {URLs: []string{"localhost:9200"}},
		"no timestamp": {URLs: []string{"http://x"}, Fields: Fields{Timestamp: "-"}},
		"raw, no msg":  {URLs: []string{"http://x"}, Raw: true, Fields: Fields{Message: "-"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	s, err := New(Config{URLs: []string{"https://user:secret@logs.example.com:9200/"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "elasticsearch:https://logs.example.com:9200/logs-app-*" || s.cfg.Password != "secret" {
		t.Errorf("String() = %q (password %q)", got, s.cfg.Password)
	}
}

// TestOldServerScrolls talks to an Elasticsearch 7.9 (no point in time): the pull
// scrolls, and clears its scroll.
func TestOldServerScrolls(t *testing.T) {
	var paths []string
	scrolls := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/":
			io.WriteString(w, `{"version":{"number":"7.9.3"}}`)
		case strings.HasSuffix(r.URL.Path, "/_search") && r.URL.Query().Get("scroll") != "":
			page(w, 0, 2)
		case r.URL.Path == "/_search/scroll" && r.Method == "POST":
			if scrolls++; scrolls == 1 {
				page(w, 2, 1)
			} else {
				page(w, 3, 0)
			}
		default:
			io.WriteString(w, `{"succeeded":true}`)
		}
	})
	s, _ := fakeSource(t, h, func(c *Config) { c.PageSize = 2 })
	res, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := "GET / POST /logs-app-*/_search POST /_search/scroll POST /_search/scroll DELETE /_search/scroll"
	if got := strings.Join(paths, " "); got != want || res.Retrieved != 3 {
		t.Errorf("requests\n%s\nwant\n%s\n(result %+v)", got, want, res)
	}
	if _, err := New(Config{URLs: []string{"http://x"}, Paging: PagingPIT}); err != nil {
		t.Fatal(err)
	}
	s, _ = fakeSource(t, h, func(c *Config) { c.Paging = PagingPIT })
	if _, err := s.Pull(context.Background(), window, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil }); err == nil {
		t.Error("PagingPIT on a server without points in time did not fail")
	}
}

// TestSearchBody checks the window's bounds (all nine fractional digits: the servers
// fill missing components of an lte bound with their maximum), the apps (by name or
// GUID) and the sort.
func TestSearchBody(t *testing.T) {
	var body map[string]any
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, b map[string]any) {
		body = b
		page(w, 0, 0)
	}}
	s, _ := fakeSource(t, f, nil)
	q := routerlogs.Query{From: time.Date(2024, 3, 18, 23, 55, 0, 0, time.UTC), To: time.Date(2024, 3, 18, 23, 56, 0, 0, time.FixedZone("x", 3600)), Apps: []string{"shop"}}
	if _, err := s.Pull(context.Background(), q, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil }); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	for _, want := range []string{
		`"gte":"2024-03-18T23:55:00.000000000Z"`, `"lte":"2024-03-18T22:56:00.000000000Z"`,
		`{"terms":{"@cf.app":["shop"]}}`, `{"terms":{"@cf.app_id":["shop"]}}`,
		`"sort":[{"@timestamp":{"numeric_type":"date_nanos","order":"asc"}},{"_shard_doc":"asc"}]`,
		`"track_total_hits":true`, `"pit":{"id":"pit-1"`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("search body lacks %s:\n%s", want, b)
		}
	}
}

func TestAppsNeedAnAppField(t *testing.T) {
	f := &fakeCluster{search: func(n int, w http.ResponseWriter, _ map[string]any) { page(w, 0, 0) }}
	s, _ := fakeSource(t, f, func(c *Config) { c.Fields.App, c.Fields.AppID = "-", "-" })
	_, err := s.Pull(context.Background(), routerlogs.Query{Apps: []string{"shop"}}, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil })
	if err == nil {
		t.Fatal("a query by app without app fields did not fail")
	}
	if _, err := s.Pull(context.Background(), routerlogs.Query{}, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil }); err != nil {
		t.Fatalf("a query without apps: %v", err)
	}
}
