package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
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

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
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
				// none); without it, every request has its own. net/http's Transport may
				// dial anew while a finished connection is still on its way back to the
				// idle pool (once in CI: 3 connections for 2 users), so with it the
				// connections need only be far fewer than the requests.
				minConns, maxConns, wantClosing := int32(1), int32(users), int32(0)
				if client == "net/http" {
					maxConns = count
				}
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

// hostRecorder is a loopback target that counts the Host headers it reads.
type hostRecorder struct {
	mu    sync.Mutex
	hosts map[string]int
}

func (h *hostRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hosts[r.Host]++
	h.mu.Unlock()
}

func (h *hostRecorder) seen() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.hosts)
}

// runConnectTo has g send count requests (Count model) and checks that each
// succeeded.
func runConnectTo(t *testing.T, g *Generator, rec *collector, count int) {
	t.Helper()
	g.cfg.Model, g.cfg.Count = Count, count
	g.Run(context.Background(), Phase{End: time.Now().Add(time.Minute)})
	if len(rec.s) != count {
		t.Fatalf("%d samples, want %d", len(rec.s), count)
	}
	for _, s := range rec.s {
		if s.Err != sample.ErrNone || s.Status != 200 {
			t.Fatalf("sample %+v: want 200 without error", s)
		}
	}
}

// TestConnectToDialsItsAddressWithTheURLsHost: a target whose host does not resolve is
// reached at ConnectTo, as the local foundation's routes are through its router, and
// the server reads the URL's host as net/http writes it (with the port when the URL has
// one) from either client.
func TestConnectToDialsItsAddressWithTheURLsHost(t *testing.T) {
	targets := map[string]string{ // target -> Host header
		"http://unresolvable.invalid:80/":  "unresolvable.invalid:80",
		"http://unresolvable.invalid":      "unresolvable.invalid",
		"http://unresolvable.invalid:8080": "unresolvable.invalid:8080",
	}
	for _, client := range clients {
		for target, host := range targets {
			t.Run(client+" "+target, func(t *testing.T) {
				t.Parallel()
				h := &hostRecorder{hosts: map[string]int{}}
				srv := httptest.NewServer(h)
				defer srv.Close()
				u, _ := url.Parse(target)
				rec := &collector{}
				g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Users: 2,
					KeepAlive: true, Timeout: 5 * time.Second, ConnectTo: srv.Listener.Addr().String()}, rec)
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				useClient(t, g, client)
				runConnectTo(t, g, rec, 5)
				if got := h.seen(); !reflect.DeepEqual(got, map[string]int{host: 5}) {
					t.Fatalf("server read Host headers %v, want %q 5 times", got, host)
				}
			})
		}
	}
}

// TestConnectToOverHTTPS: an https target goes through net/http, which dials ConnectTo
// and still names the URL's host to TLS (SNI) and in the Host header.
func TestConnectToOverHTTPS(t *testing.T) {
	t.Parallel()
	h := &hostRecorder{hosts: map[string]int{}}
	var (
		mu  sync.Mutex
		sni = map[string]int{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		sni[hello.ServerName]++
		mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()

	u, _ := url.Parse("https://unresolvable.invalid/")
	rec := &collector{}
	g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Users: 2,
		KeepAlive: false, Timeout: 5 * time.Second, ConnectTo: srv.Listener.Addr().String()}, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.lean != nil {
		t.Fatalf("an https target uses %s, want net/http", g.Client())
	}
	// The test server's certificate is not for unresolvable.invalid; the name sent is
	// what is checked here, from the server's side.
	g.client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	runConnectTo(t, g, rec, 4)
	if got := h.seen(); !reflect.DeepEqual(got, map[string]int{"unresolvable.invalid": 4}) {
		t.Fatalf("server read Host headers %v, want unresolvable.invalid 4 times", got)
	}
	mu.Lock()
	defer mu.Unlock()
	// Without keep-alive every request has its own connection and handshake.
	if !reflect.DeepEqual(sni, map[string]int{"unresolvable.invalid": 4}) {
		t.Fatalf("TLS server names %v, want unresolvable.invalid in all 4 handshakes", sni)
	}
}

func TestConnectToIsChecked(t *testing.T) {
	u, _ := url.Parse("http://stub.apps.localhost/")
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:41234", true},
		{"[::1]:80", true},
		{"router.local:443", true},
		{"127.0.0.1", false},
		{"127.0.0.1:", false},
		{":8080", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1:0", false},
		{"127.0.0.1:65536", false},
		{"127.0.0.1:-1", false},
		{"::1:80", false},
		{"http://127.0.0.1:80", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			g, err := New(Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, Users: 1,
				Timeout: time.Second, ConnectTo: tc.addr}, &collector{})
			switch {
			case tc.ok && err != nil:
				t.Fatalf("New rejected connect-to %q: %v", tc.addr, err)
			case !tc.ok && err == nil:
				g.Close()
				t.Fatalf("New accepted connect-to %q", tc.addr)
			case !tc.ok && !strings.Contains(err.Error(), "connect-to"):
				t.Fatalf("error %q does not name the connect-to address", err)
			}
			if g != nil {
				g.Close()
			}
		})
	}
}
