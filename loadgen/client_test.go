package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/sample"
)

// wireRequest is what a server can tell of a request.
type wireRequest struct {
	Method, RequestURI, Proto, Host string
	Header                          http.Header
	ContentLength                   int64
	TransferEncoding                []string
	Close                           bool
	Body                            string // its length and CRC-32
}

// capture runs a generator with one user for one request per entry of reqs and
// returns what the server read, in order.
func capture(t *testing.T, client string, cfg Config) []wireRequest {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		got []wireRequest
		wg  sync.WaitGroup
	)
	defer func() { ln.Close(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(r.Body)
					host := r.Host
					if host == ln.Addr().String() {
						host = "the target"
					}
					mu.Lock()
					got = append(got, wireRequest{r.Method, r.RequestURI, r.Proto, host, r.Header, r.ContentLength,
						r.TransferEncoding, r.Close, fmt.Sprintf("%d bytes, CRC %08x", len(body), crc32.ChecksumIEEE(body))})
					mu.Unlock()
					if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	cfg.Target, _ = url.Parse("http://" + ln.Addr().String() + cfg.Target.Path)
	rec := &collector{}
	for i := range cfg.Requests {
		one := cfg
		one.Requests = cfg.Requests[i : i+1]
		g, err := New(one, rec)
		if err != nil {
			t.Fatal(err)
		}
		useClient(t, g, client)
		g.seq.Store(uint64(i))
		g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
		g.Close()
	}
	for _, s := range rec.s {
		if s.Err != sample.ErrNone || s.Status != 200 {
			t.Fatalf("%s: sample %+v", client, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// TestLeanClientSendsWhatNetHTTPSends compares what a server reads from either
// client: the same requests but for header order and case.
func TestLeanClientSendsWhatNetHTTPSends(t *testing.T) {
	reqs := []Request{
		{Method: "GET", Path: "/a?x=1&y=%20z"},
		{Method: "", Path: "/default-method"},
		{Method: "HEAD", Path: "/"},
		{Method: "POST", Path: "/form", Body: []byte("a=1&b=2"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
		{Method: "POST", Path: "/empty"},
		{Method: "PUT", Path: "/empty-body", Body: []byte{}},
		{Method: "PATCH", Path: "/big", Body: []byte(strings.Repeat("0123456789", 1000))},
		{Method: "DELETE", Path: "/x"},
		{Method: "DELETE", Path: "/empty-body", Body: []byte{}},
		{Method: "OPTIONS", Path: "/x"},
		{Method: "GET", Path: "/body-on-get", Body: []byte("odd")},
		{Method: "GET", Path: "/headers", Header: http.Header{
			"Accept":       {"text/plain", "application/json"},
			"X-Spaces":     {"  padded\t"},
			"X-Empty":      {""},
			"User-Agent":   {"custom/1.0", "ignored"},
			"X-B3-Traceid": {"overridden by the generator"},
			"x-lower":      {"kept as sent"},
		}},
		{Method: "GET", Path: "/no-agent", Header: http.Header{"User-Agent": {""}}},
		{Method: "GET", Path: "/correlation", Header: http.Header{"X-Request-Id": {"overridden too"}}},
		{Method: "GET", Path: "/unicode/%C3%A9?q=%E2%82%AC"},
	}
	for i := range reqs {
		reqs[i].Weight = 1
	}
	for _, keepAlive := range []bool{true, false} {
		base, _ := url.Parse("http://placeholder/base")
		cfg := Config{Target: base, Requests: reqs, Model: Count, Users: 1, Count: 1, KeepAlive: keepAlive, Timeout: 5 * time.Second,
			CorrelationHeader: "x-request-id", TraceTag: 0x12345678, WorkerID: 42, Epoch: time.Now()}
		lean, std := capture(t, "h1", cfg), capture(t, "net/http", cfg)
		if len(lean) != len(reqs) || len(std) != len(reqs) {
			t.Fatalf("keep-alive %v: server read %d requests from h1 and %d from net/http, want %d", keepAlive, len(lean), len(std), len(reqs))
		}
		for i := range reqs {
			if !reflect.DeepEqual(lean[i], std[i]) {
				t.Errorf("keep-alive %v, request %d:\n h1:       %+v\n net/http: %+v", keepAlive, i, lean[i], std[i])
			}
		}
	}
}

func TestClientChoice(t *testing.T) {
	get := []Request{{Method: "GET", Path: "/", Weight: 1}}
	with := func(h http.Header) []Request { return []Request{{Method: "GET", Path: "/", Header: h, Weight: 1}} }
	cases := []struct {
		target string
		reqs   []Request
		lean   bool
	}{
		{"http://127.0.0.1:8080", get, true},
		{"http://localhost", get, true},
		{"http://[::1]:8080/base", get, true},
		{"HTTP://127.0.0.1", get, true},
		{"https://127.0.0.1", get, false},
		{"http://user:secret@127.0.0.1", get, false},
		{"http://[fe80::1%25eth0]:80", get, false},
		{"http://bücher.example", get, false},
		{"http://127.0.0.1", []Request{{Method: "BAD METHOD", Path: "/", Weight: 1}}, false},
		{"http://127.0.0.1", with(http.Header{"Bad Name": {"x"}}), false},
		{"http://127.0.0.1", with(http.Header{"X-Ok": {"line\r\nbreak"}}), false},
		{"http://127.0.0.1", with(http.Header{"Expect": {"100-continue"}}), false},
		{"http://127.0.0.1", with(http.Header{"connection": {"close"}}), false},
		{"http://127.0.0.1", with(http.Header{"Host": {"other"}}), false},
		{"http://127.0.0.1", with(http.Header{"Transfer-Encoding": {"chunked"}}), false},
		{"http://127.0.0.1", []Request{{Method: "GET", Path: "/%zz", Weight: 1}}, false},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(Config{Target: u, Requests: tc.reqs, Users: 1, Timeout: time.Second}, &collector{})
		if err != nil {
			t.Fatal(err)
		}
		if (g.lean != nil) != tc.lean {
			t.Errorf("%s %+v: client %s", tc.target, tc.reqs[0], g.Client())
		}
	}
}

// stallServer answers nothing until the test ends.
func stallServer(t *testing.T) *httptest.Server {
	srv, _ := countingStallServer(t)
	return srv
}

// countingStallServer never answers; arrived receives one value per request.
func countingStallServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	arrived := make(chan struct{}, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv, arrived
}

func TestCancelAbortsRequestsInFlight(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			srv, arrived := countingStallServer(t)
			rec := &collector{}
			g, _ := newGen(t, srv.URL, 3, []Request{{Method: "GET", Path: "/", Weight: 1}}, rec)
			useClient(t, g, client)
			ctx, cancel := context.WithCancel(context.Background())
			// Cancel once all three users have a request in flight.
			go func() {
				for range 3 {
					<-arrived
				}
				cancel()
			}()
			g.RunClosed(ctx, Phase{End: time.Now().Add(time.Minute)})
			if len(rec.s) != 3 {
				t.Fatalf("%d samples, want one per user", len(rec.s))
			}
			for _, s := range rec.s {
				if s.Err != sample.ErrCanceled {
					t.Fatalf("sample %+v: want canceled (the timeout is 5 s)", s)
				}
			}
		})
	}
}

func TestTimeoutsAreSamples(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			srv := stallServer(t)
			rec := &collector{}
			g, _ := newGen(t, srv.URL, 2, []Request{{Method: "GET", Path: "/", Weight: 1}}, rec)
			useClient(t, g, client)
			g.cfg.Timeout = 50 * time.Millisecond
			// A fixed count, not a short phase: a busy machine may start the users late.
			g.cfg.Model, g.cfg.Count = Count, 4
			g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
			if len(rec.s) != 4 {
				t.Fatalf("%d samples, want 4", len(rec.s))
			}
			for _, s := range rec.s {
				if s.Err != sample.ErrTimeout || s.Status != 0 {
					t.Fatalf("sample %+v: want a timeout", s)
				}
			}
		})
	}
}

func TestKeepAlive(t *testing.T) {
	for _, client := range clients {
		for _, keepAlive := range []bool{true, false} {
			t.Run(client, func(t *testing.T) {
				t.Parallel()
				var conns, closing atomic.Int32
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Close {
						closing.Add(1)
					}
				}))
				srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
					if s == http.StateNew {
						conns.Add(1)
					}
				}
				srv.Start()
				defer srv.Close()
				u, _ := url.Parse(srv.URL)
				const users, count = 2, 10
				g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Model: Count, Users: users,
					Count: count, KeepAlive: keepAlive, Timeout: 5 * time.Second}, &collector{})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				useClient(t, g, client)
				g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
				// A second phase reuses the first one's connections.
				g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
				// With keep-alive each user opens at most one connection for both phases
				// (a user that started late may have found the count used up and opened
				// none); without it, every request has its own.
				minConns, maxConns, wantClosing := int32(1), int32(users), int32(0)
				if !keepAlive {
					minConns, maxConns, wantClosing = 2*count, 2*count, 2*count
				}
				if n := conns.Load(); n < minConns || n > maxConns || closing.Load() != wantClosing {
					t.Fatalf("keep-alive %v: %d connections, %d requests with Connection: close; want %d to %d and %d",
						keepAlive, n, closing.Load(), minConns, maxConns, wantClosing)
				}
			})
		}
	}
}
