package logship

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeES answers the bulk and index-template APIs as Elasticsearch does, keeping the
// documents it accepted by _id. reject decides, per request and item, whether to
// answer 429.
type fakeES struct {
	mu       sync.Mutex
	docs     map[string]map[string]any
	requests int
	// rejectRequest answers a whole bulk request with status (when non-zero).
	rejectRequest func(n int) int
	// rejectItem answers one item with 429 when true.
	rejectItem func(n, i int) bool
	block      chan struct{} // when non-nil, bulk requests wait for it to close
}

func newFakeES(t *testing.T, f *fakeES) *httptest.Server {
	f.docs = map[string]map[string]any{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/_index_template/") {
			fmt.Fprint(w, `{"acknowledged":true}`)
			return
		}
		if r.URL.Path != "/_bulk" {
			http.NotFound(w, r)
			return
		}
		if f.block != nil {
			select {
			case <-f.block:
			case <-r.Context().Done():
				return
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests++
		n := f.requests
		if f.rejectRequest != nil {
			if code := f.rejectRequest(n); code != 0 {
				w.WriteHeader(code)
				fmt.Fprint(w, `{"error":{"type":"es_rejected_execution_exception"},"status":429}`)
				return
			}
		}
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(nil, 1<<20)
		var items []string
		anyErr := false
		for i := 0; sc.Scan(); i++ {
			var action map[string]struct {
				Index string `json:"_index"`
				ID    string `json:"_id"`
			}
			if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
				t.Errorf("bad action line %q: %v", sc.Text(), err)
				return
			}
			if !sc.Scan() {
				t.Error("action without document")
				return
			}
			var doc map[string]any
			if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
				t.Errorf("bad document: %v", err)
				return
			}
			id := action["create"].ID
			switch {
			case f.rejectItem != nil && f.rejectItem(n, i):
				anyErr = true
				items = append(items, `{"create":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}}`)
			case f.docs[id] != nil:
				anyErr = true
				items = append(items, `{"create":{"status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}}`)
			default:
				f.docs[id] = doc
				items = append(items, `{"create":{"status":201}}`)
			}
		}
		fmt.Fprintf(w, `{"errors":%v,"items":[%s]}`, anyErr, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakeES) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.docs)
}

func writeLines(t *testing.T, s *Shipper, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := s.Write([]byte(routerLine(i) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetriesRejectedRequestsAndItems(t *testing.T) {
	t.Parallel()
	f := &fakeES{
		// The 1st and 3rd requests are refused whole (429, then 503); in the 2nd, every
		// third item is refused with 429.
		rejectRequest: func(n int) int { return map[int]int{1: 429, 3: 503}[n] },
		rejectItem:    func(n, i int) bool { return n == 2 && i%3 == 0 },
	}
	srv := newFakeES(t, f)
	s := New(Config{URL: srv.URL, Apps: apps, BatchSize: 50, FlushEvery: 20 * time.Millisecond, RetryBackoff: time.Millisecond})
	s.Start(context.Background())
	writeLines(t, s, 0, 120)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if f.count() != 120 || st.Shipped != 120 || st.Failed != 0 || st.Received != 120 || st.Buffered != 0 {
		t.Errorf("indexed %d, stats %+v; want all 120 shipped once", f.count(), st)
	}
	if st.Retries < 3 {
		t.Errorf("Retries = %d, want at least 3", st.Retries)
	}
}

// TestLostAnswerIsNotADuplicate: a retried item that had been indexed (its answer
// lost) comes back 409 and counts as shipped, once.
func TestLostAnswerIsNotADuplicate(t *testing.T) {
	t.Parallel()
	f := &fakeES{}
	srv := newFakeES(t, f)
	var calls atomic.Int32
	// The first answer is lost after the documents were stored.
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		res, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && r.URL.Path == "/_bulk" && calls.Add(1) == 1 {
			res.Body.Close()
			return nil, fmt.Errorf("connection reset by peer")
		}
		return res, err
	})
	s := New(Config{URL: srv.URL, Transport: rt, BatchSize: 10, RetryBackoff: time.Millisecond, FlushEvery: 10 * time.Millisecond})
	s.Start(context.Background())
	writeLines(t, s, 0, 10)
	s.Close()
	if st := s.Stats(); f.count() != 10 || st.Shipped != 10 || st.Failed != 0 || st.Retries != 1 {
		t.Errorf("indexed %d, stats %+v", f.count(), st)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWriteNeverWaitsForElasticsearch: with every bulk request hanging, writes return
// at once, the buffer bound drops and counts, and Close gives up after FlushTimeout.
func TestWriteNeverWaitsForElasticsearch(t *testing.T) {
	t.Parallel()
	f := &fakeES{block: make(chan struct{})}
	srv := newFakeES(t, f)
	defer close(f.block)
	s := New(Config{URL: srv.URL, BatchSize: 10, MaxBuffered: 100, FlushEvery: 5 * time.Millisecond, FlushTimeout: 200 * time.Millisecond})
	s.Start(context.Background())
	// Elasticsearch answers nothing until the test ends: every Write returning at all
	// shows that none waits for it. The guard only bounds a test that would hang.
	wrote := make(chan error, 1)
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := s.Write([]byte(routerLine(i) + "\n")); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Write blocked while Elasticsearch did not answer")
	}
	begin := time.Now()
	s.Close()
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Close took %v with FlushTimeout 200ms", d)
	}
	st := s.Stats()
	if st.Received != 1000 || st.DroppedBuffer < 900 || st.Shipped != 0 ||
		st.Shipped+st.Failed+st.DroppedBuffer != 1000 || st.Buffered != 0 {
		t.Errorf("stats %+v: want 1000 received, ≥ 900 dropped for the buffer, the rest failed", st)
	}
	if _, err := s.Write([]byte(routerLine(0))); err != ErrClosed {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
}

func TestCountsUnparseableAndNoApp(t *testing.T) {
	t.Parallel()
	f := &fakeES{}
	srv := newFakeES(t, f)
	s := New(Config{URL: srv.URL, FlushEvery: 10 * time.Millisecond})
	s.Start(context.Background())
	noApp := `ghost.example.com - [2024-03-18T09:13:00Z] "GET / HTTP/1.1" 404 0 67 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:0.000190 gorouter_time:0.000190 app_id:"-" app_index:"-" instance_id:"-" x_cf_routererror:"unknown_route"`
	// Several lines in one Write, a blank one, a CRLF, and a last line without newline.
	if _, err := s.Write([]byte(routerLine(1) + "\r\nnot an access log line\n\n" + noApp + "\n" + routerLine(2))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st := s.Stats(); st.Received != 4 || st.Shipped != 2 || st.Unparseable != 1 || st.NoApp != 1 || f.count() != 2 {
		t.Errorf("stats %+v, indexed %d", st, f.count())
	}

	f2 := &fakeES{}
	srv2 := newFakeES(t, f2)
	s2 := New(Config{URL: srv2.URL, IncludeNoApp: true})
	s2.Write([]byte(noApp)) // before Start: buffered
	if err := s2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if st := s2.Stats(); st.Shipped != 1 || st.NoApp != 0 || f2.count() != 1 {
		t.Errorf("with IncludeNoApp: stats %+v, indexed %d", st, f2.count())
	}

	// Closed before Start: Close returns at once, and what was written counts as dropped.
	f3 := &fakeES{}
	s3 := New(Config{URL: newFakeES(t, f3).URL})
	s3.Write([]byte(routerLine(3)))
	if err := s3.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if st := s3.Stats(); st.Received != 1 || st.DroppedBuffer != 1 || st.Buffered != 0 || f3.count() != 0 {
		t.Errorf("closed before Start: stats %+v, indexed %d", st, f3.count())
	}
}

func TestQuotaWindows(t *testing.T) {
	t.Parallel()
	f := &fakeES{}
	srv := newFakeES(t, f)
	var now atomic.Int64
	now.Store(time.Date(2024, 3, 18, 9, 59, 0, 0, time.UTC).UnixNano())
	s := New(Config{URL: srv.URL, Quota: 30, QuotaWindow: time.Hour, FlushEvery: 10 * time.Millisecond,
		Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	s.Start(context.Background())
	writeLines(t, s, 0, 50) // 09:59: 30 pass, 20 dropped
	for s.Stats().Buffered > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	now.Store(time.Date(2024, 3, 18, 10, 0, 1, 0, time.UTC).UnixNano())
	writeLines(t, s, 50, 90) // the next hour: 30 pass, 10 dropped
	s.Close()
	if st := s.Stats(); st.Shipped != 60 || st.DroppedQuota != 30 || f.count() != 60 {
		t.Errorf("stats %+v, indexed %d; want 60 shipped, 30 dropped by quota", st, f.count())
	}
}

// TestESRequest: a request goes to the URL's host under its path, with its credentials
// as basic auth; a URL the client cannot use is an error that does not repeat the URL
// (it may carry a password).
func TestESRequest(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Authorization"))
		fmt.Fprint(w, `{"acknowledged":true}`)
	}))
	t.Cleanup(srv.Close)
	s := New(Config{URL: strings.Replace(srv.URL, "http://", "http://elastic:s3cret@", 1) + "/es/", Transport: srv.Client().Transport})
	if s.esErr != nil {
		t.Fatal(s.esErr)
	}
	res, err := s.esRequest(context.Background(), http.MethodPut, "/_index_template/t", url.Values{"a": {"b"}}, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// elastic:s3cret
	if want := "PUT /es/_index_template/t?a=b Basic ZWxhc3RpYzpzM2NyZXQ="; got.Load() != want {
		t.Errorf("Elasticsearch got %v, want %q", got.Load(), want)
	}

	for _, tc := range []struct{ url, want string }{
		{"", "no Elasticsearch URL"},
		{"127.0.0.1:9200", "want http(s)://host:port"},
		{"ftp://elastic:s3cret@127.0.0.1:9200", "want http(s)://host:port"},
		{"http://elastic:s3cret@[::1", "want http(s)://host:port"},
		{"http:///path", "want http(s)://host:port"},
	} {
		_, err := newTransport(tc.url, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("newTransport(%q) = %v, want an error with %q and no password", tc.url, err, tc.want)
		}
	}
}
