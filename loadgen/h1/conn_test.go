package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// server is a raw TCP server on loopback that answers every request with what its
// handler writes.
type server struct {
	addr   string
	conns  atomic.Int32 // connections accepted
	mu     sync.Mutex
	reqs   []*http.Request // every request read, body consumed into bodies
	bodies []string
}

// handler answers request n (0-based, over all connections) on conn; returning false
// closes the connection.
type handler func(n int, conn net.Conn) bool

// serve starts a server on 127.0.0.1 and returns it with a teardown registered on t.
// Every request is read whole before the handler runs, and the server fails the test
// if a second request arrives before the first was answered: the client must not
// pipeline.
func serve(t *testing.T, h handler) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var live sync.Map
	t.Cleanup(func() {
		ln.Close()
		live.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	var count atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			live.Store(c, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil {
						return
					}
					// Nothing more may come before we answer.
					c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
					if _, err := br.Peek(1); err == nil {
						t.Errorf("request %s %s: the client sent more before the response", req.Method, req.RequestURI)
					}
					c.SetReadDeadline(time.Time{})
					s.mu.Lock()
					s.reqs = append(s.reqs, req)
					s.bodies = append(s.bodies, string(body))
					s.mu.Unlock()
					if !h(int(count.Add(1)-1), c) {
						return
					}
				}
			}()
		}
	}()
	return s
}

// reply is a handler that writes resp to every request and then closes the connection
// when closeAfter is set.
func reply(resp string, closeAfter bool) handler {
	return func(_ int, c net.Conn) bool {
		c.Write([]byte(resp))
		return !closeAfter
	}
}

func newReq(t *testing.T, method string, body []byte) *Request {
	t.Helper()
	r, err := NewRequest(method, "/p?q=1", "test.local", []Field{{Name: "X-Trace", Value: "pre-", Stamped: true}}, body, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func stampOf(n int) *[StampLen]byte {
	var s [StampLen]byte
	copy(s[:], strings.Repeat("0", StampLen-len(strconv.Itoa(n)))+strconv.Itoa(n))
	return &s
}

func TestResponses(t *testing.T) {
	const chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5;name=value;other\r\nhello\r\nA \r\n0123456789\r\n0;last\r\nTrailer-One: x\r\nTrailer-Two: y\r\n\r\n"
	bigBody := strings.Repeat("x", 100<<10)
	cases := []struct {
		name       string
		method     string
		h          handler
		timeout    time.Duration
		wantStatus int
		wantBytes  int64
		wantErr    sample.ErrClass
		wantReuse  bool // the second request goes over the first one's connection
	}{
		{name: "content-length", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", false),
			wantStatus: 200, wantBytes: 5, wantReuse: true},
		{name: "large content-length", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 102400\r\n\r\n"+bigBody, false),
			wantStatus: 200, wantBytes: 100 << 10, wantReuse: true},
		{name: "empty body", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false), wantStatus: 200, wantReuse: true},
		{name: "chunked with extensions and trailers", h: reply(chunked, false), wantStatus: 200, wantBytes: 15, wantReuse: true},
		{name: "chunked large", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n19000\r\n"+bigBody+"\r\n0\r\n\r\n", false),
			wantStatus: 200, wantBytes: 100 << 10, wantReuse: true},
		{name: "chunked beats content-length", h: reply(strings.Replace(chunked, "\r\n\r\n", "\r\nContent-Length: 3\r\n\r\n", 1), false),
			wantStatus: 200, wantBytes: 15, wantReuse: true},
		{name: "bare LF line endings", h: reply("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false), wantStatus: 200, wantBytes: 2, wantReuse: true},
		{name: "close-delimited", h: reply("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello world", true),
			wantStatus: 200, wantBytes: 11},
		{name: "connection close", h: reply("HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 2\r\n\r\nok", false),
			wantStatus: 200, wantBytes: 2},
		{name: "HTTP/1.0", h: reply("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", false), wantStatus: 200, wantBytes: 5},
		{name: "HTTP/1.0 keep-alive", h: reply("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello", false),
			wantStatus: 200, wantBytes: 5, wantReuse: true},
		{name: "HTTP/1.0 close-delimited", h: reply("HTTP/1.0 200 OK\r\n\r\nhello", true), wantStatus: 200, wantBytes: 5},
		{name: "HTTP/1.0 ignores transfer-encoding", h: reply("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nhello", true),
			wantStatus: 200, wantBytes: 5},
		{name: "100 continue", h: reply("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false),
			wantStatus: 200, wantBytes: 2, wantReuse: true},
		{name: "103 early hints with headers", h: reply("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 9\r\n\r\n"+
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", false),
			wantStatus: 201, wantBytes: 2, wantReuse: true},
		{name: "HEAD has no body", method: "HEAD", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", false),
			wantStatus: 200, wantReuse: true},
		{name: "HEAD chunked has no body", method: "HEAD", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false),
			wantStatus: 200, wantReuse: true},
		{name: "204", h: reply("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", false), wantStatus: 204, wantReuse: true},
		{name: "304", h: reply("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", false), wantStatus: 304, wantReuse: true},
		{name: "redirect is a response", h: reply("HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n", false),
			wantStatus: 302, wantReuse: true},
		{name: "status without reason", h: reply("HTTP/1.1 503\r\nContent-Length: 1\r\n\r\nx", false), wantStatus: 503, wantBytes: 1, wantReuse: true},
		{name: "long unknown header", h: reply("HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("b", 3*readBufSize)+"\r\nContent-Length: 2\r\n\r\nok", false),
			wantStatus: 200, wantBytes: 2, wantReuse: true},
		{name: "101 ends the connection", h: reply("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false), wantStatus: 101},
		{name: "unasked bytes after the response", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n", false),
			wantStatus: 200, wantBytes: 2},
		{name: "server closes mid-body", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", true),
			wantStatus: 200, wantBytes: 5, wantErr: sample.ErrReset},
		{name: "server closes mid-chunk", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true),
			wantStatus: 200, wantBytes: 3, wantErr: sample.ErrReset},
		{name: "server closes before trailers end", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n", true),
			wantStatus: 200, wantErr: sample.ErrReset},
		{name: "server closes mid-headers", h: reply("HTTP/1.1 200 OK\r\nContent-Len", true), wantErr: sample.ErrReset},
		{name: "server closes without answering", h: reply("", true), wantErr: sample.ErrReset},
		{name: "server resets", h: func(_ int, c net.Conn) bool {
			c.(*net.TCPConn).SetLinger(0)
			return false
		}, wantErr: sample.ErrReset},
		{name: "server stalls", h: func(int, net.Conn) bool {
			time.Sleep(time.Second)
			return false
		}, timeout: 100 * time.Millisecond, wantErr: sample.ErrTimeout},
		{name: "server stalls mid-body", h: func(_ int, c net.Conn) bool {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel"))
			time.Sleep(time.Second)
			return false
		}, timeout: 100 * time.Millisecond, wantStatus: 200, wantBytes: 3, wantErr: sample.ErrTimeout},
		{name: "malformed status line", h: reply("HTTP/1.1 2x0 OK\r\n\r\n", false), wantErr: sample.ErrOther},
		{name: "not HTTP", h: reply("SSH-2.0-OpenSSH_9.2\r\n", false), wantErr: sample.ErrOther},
		{name: "malformed content-length", h: reply("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false), wantErr: sample.ErrOther},
		{name: "conflicting content-length", h: reply("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nok", false),
			wantErr: sample.ErrOther},
		{name: "unsupported transfer-encoding", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false),
			wantErr: sample.ErrOther},
		{name: "bad chunk size", h: reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false), wantStatus: 200,
			wantErr: sample.ErrOther},
		{name: "header line without colon", h: reply("HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", false), wantErr: sample.ErrOther},
		{name: "too many 1xx", h: reply(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 20), false), wantErr: sample.ErrOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, tc.h)
			method := tc.method
			if method == "" {
				method = "GET"
			}
			r := newReq(t, method, nil)
			c := NewConn(srv.addr, &net.Dialer{}, true)
			defer c.Close()
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			for i := range 2 {
				resp, err := c.Do(context.Background(), r, stampOf(i), time.Now().Add(timeout))
				if class := sample.Classify(err); class != tc.wantErr || resp.Status != tc.wantStatus || resp.Bytes != tc.wantBytes {
					t.Fatalf("request %d: status %d, %d bytes, err %v (%q); want %d, %d bytes, %q",
						i, resp.Status, resp.Bytes, err, class, tc.wantStatus, tc.wantBytes, tc.wantErr)
				}
			}
			wantConns := int32(2)
			if tc.wantReuse {
				wantConns = 1
			}
			if got := srv.conns.Load(); got != wantConns {
				t.Fatalf("two requests used %d connections, want %d", got, wantConns)
			}
		})
	}
}

func TestRequestsAreSentAsPrepared(t *testing.T) {
	srv := serve(t, reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false))
	big := []byte(strings.Repeat("b", 2*inlineBody))
	get := newReq(t, "GET", nil)
	post := newReq(t, "POST", []byte("small body"))
	put := newReq(t, "PUT", big)
	del := newReq(t, "DELETE", []byte{})
	c := NewConn(srv.addr, &net.Dialer{}, true)
	defer c.Close()
	seq := []*Request{get, post, get, put, put, del, get}
	for i, r := range seq {
		if _, err := c.Do(context.Background(), r, stampOf(i), time.Now().Add(5*time.Second)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Fatalf("%d connections for %d keep-alive requests", n, len(seq))
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for i, got := range srv.reqs {
		want := map[*Request]struct {
			method string
			body   string
			cl     int64
		}{get: {"GET", "", 0}, post: {"POST", "small body", 10}, put: {"PUT", string(big), int64(len(big))}, del: {"DELETE", "", 0}}[seq[i]]
		if got.Method != want.method || got.RequestURI != "/p?q=1" || got.Host != "test.local" || srv.bodies[i] != want.body ||
			got.ContentLength != want.cl || got.Header.Get("X-Trace") != "pre-"+string(stampOf(i)[:]) || got.Close {
			t.Errorf("request %d: %s %s host %q, %d body bytes (Content-Length %d), X-Trace %q; want %s with %d bytes, stamp %d",
				i, got.Method, got.RequestURI, got.Host, len(srv.bodies[i]), got.ContentLength, got.Header.Get("X-Trace"), want.method, len(want.body), i)
		}
		if _, ok := got.Header["Content-Length"]; ok != (seq[i] != get) {
			t.Errorf("request %d (%s): Content-Length sent: %v", i, got.Method, ok)
		}
	}
}

func TestWithoutKeepAliveEveryRequestHasItsConnection(t *testing.T) {
	srv := serve(t, reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false))
	r, err := NewRequest("GET", "/", "h", nil, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(srv.addr, &net.Dialer{}, false)
	defer c.Close()
	for i := range 3 {
		if resp, err := c.Do(context.Background(), r, stampOf(i), time.Now().Add(5*time.Second)); err != nil || resp.Bytes != 2 {
			t.Fatalf("request %d: %+v, %v", i, resp, err)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := srv.conns.Load(); n != 3 || !srv.reqs[0].Close {
		t.Fatalf("3 requests without keep-alive: %d connections, Connection: close sent: %v", n, srv.reqs[0].Close)
	}
}

// A keep-alive connection the server closed while idle is found out on the next
// request: idempotent requests go again on a new connection, others fail unless
// nothing could be written.
func TestIdleConnectionClosedByTheServer(t *testing.T) {
	for _, tc := range []struct {
		method  string
		wantErr sample.ErrClass
	}{{"GET", sample.ErrNone}, {"HEAD", sample.ErrNone}, {"POST", sample.ErrReset}} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			// Answers, then closes without saying so.
			srv := serve(t, reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true))
			r := newReq(t, tc.method, nil)
			c := NewConn(srv.addr, &net.Dialer{}, true)
			defer c.Close()
			if _, err := c.Do(context.Background(), r, stampOf(0), time.Now().Add(5*time.Second)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // the server's FIN arrives
			_, err := c.Do(context.Background(), r, stampOf(1), time.Now().Add(5*time.Second))
			if got := sample.Classify(err); got != tc.wantErr {
				t.Fatalf("second request on a connection closed by the server: %v (%q), want %q", err, got, tc.wantErr)
			}
			if tc.wantErr == sample.ErrNone && srv.conns.Load() != 2 {
				t.Fatalf("%d connections, want 2: the retry must dial", srv.conns.Load())
			}
		})
	}
}

func TestRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := NewConn(addr, &net.Dialer{}, true)
	_, err = c.Do(context.Background(), newReq(t, "GET", nil), stampOf(0), time.Now().Add(5*time.Second))
	if got := sample.Classify(err); got != sample.ErrRefused {
		t.Fatalf("dial to a closed port: %v (%q), want refused", err, got)
	}
}

func TestAbortInterruptsAStalledRequest(t *testing.T) {
	srv := serve(t, func(int, net.Conn) bool { time.Sleep(2 * time.Second); return false })
	c := NewConn(srv.addr, &net.Dialer{}, true)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, c.Abort)
	defer stop()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Do(ctx, newReq(t, "GET", nil), stampOf(0), time.Now().Add(10*time.Second))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("cancelled request: %v after %v; want context.Canceled at once", err, time.Since(start))
	}
	// A cancelled context also stops the next request before it is sent.
	n := srv.conns.Load()
	if _, err := c.Do(ctx, newReq(t, "GET", nil), stampOf(1), time.Now().Add(10*time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("request with a cancelled context: %v", err)
	}
	if srv.conns.Load() != n {
		t.Fatal("a request with a cancelled context dialled")
	}
}

func TestNewRequestRejectsWhatItCannotSend(t *testing.T) {
	cases := []struct {
		method, target, host string
		fields               []Field
	}{
		{"G ET", "/", "h", nil},
		{"", "/", "h", nil},
		{"GET", "/a b", "h", nil},
		{"GET", "", "h", nil},
		{"GET", "/", "", nil},
		{"GET", "/", "h\r\nX: y", nil},
		{"GET", "/", "h", []Field{{Name: "Bad Name", Value: "v"}}},
		{"GET", "/", "h", []Field{{Name: "X", Value: "a\r\nInjected: 1"}}},
		{"GET", "/", "h", []Field{{Name: "", Value: "v"}}},
	}
	for _, tc := range cases {
		if _, err := NewRequest(tc.method, tc.target, tc.host, tc.fields, nil, false); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("NewRequest(%q, %q, %q, %+v) = %v, want ErrInvalidRequest", tc.method, tc.target, tc.host, tc.fields, err)
		}
	}
}

// TestDoDoesNotAllocate checks the steady state: a keep-alive connection, requests
// already prepared.
func TestDoDoesNotAllocate(t *testing.T) {
	addr := quietServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	c := NewConn(addr, &net.Dialer{}, true)
	defer c.Close()
	a, b := newReq(t, "GET", nil), newReq(t, "POST", []byte("body"))
	stamp := stampOf(1)
	ctx := context.Background()
	do := func() {
		for _, r := range []*Request{a, b} {
			if _, err := c.Do(ctx, r, stamp, time.Now().Add(5*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	do() // dial and size the buffer
	if n := testing.AllocsPerRun(50, do); n != 0 {
		t.Fatalf("%v allocations per two requests, want 0", n)
	}
}

// quietServer answers every request head (bodies must not contain a blank line) with
// resp, allocating nothing per request, so that the test can count the client's.
func quietServer(t *testing.T, resp string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		go func() { <-t.Context().Done(); c.Close() }()
		buf := make([]byte, 64<<10)
		out := []byte(resp)
		matched := 0 // of "\r\n\r\n"
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			for _, b := range buf[:n] {
				switch {
				case b == "\r\n\r\n"[matched]:
					matched++
				case b == '\r':
					matched = 1
				default:
					matched = 0
				}
				if matched == 4 {
					matched = 0
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}
		}
	}()
	return ln.Addr().String()
}
