package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// handedListener counts the bytes the router hands to client connections, counted
// before each write reaches the kernel.
type handedListener struct {
	net.Listener
	handed *atomic.Int64
}

func (l handedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return handedConn{c, l.handed}, nil
}

type handedConn struct {
	net.Conn
	handed *atomic.Int64
}

func (c handedConn) Write(p []byte) (int, error) {
	c.handed.Add(int64(len(p)))
	return c.Conn.Write(p)
}

// TestResponseTimeEndsBeforeTheLastByteIsHanded checks where response_time ends: the
// router reads its clock for the end mark before it hands the response's last byte
// to the client connection. A mark read after that write may come after a client on
// the same machine has read the whole response and taken its own end mark, so that
// response_time exceeds the client's latency. The clock steps 1 ms per reading and
// notes how many bytes the router had handed to clients at each reading; the access
// log's timestamp and response_time then say which reading ended each request.
func TestResponseTimeEndsBeforeTheLastByteIsHanded(t *testing.T) {
	t.Parallel()
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			_, _ = io.WriteString(w, strings.Repeat("c", 1000))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(chunked.Close)
	table := newTable(map[string]Route{
		"small.local":   {AppGUID: appGUID, Backends: []Backend{{Addr: startFixed(t, "hello\n")}}},
		"large.local":   {AppGUID: appGUID, Backends: []Backend{{Addr: startFixed(t, strings.Repeat("x", 200<<10))}}},
		"chunked.local": {AppGUID: appGUID, Backends: []Backend{{Addr: chunked.Listener.Addr().String()}}},
		"dead.local":    {AppGUID: otherGUID, Backends: []Backend{{Addr: deadAddr(t)}}},
	})

	var handed atomic.Int64
	var mu sync.Mutex
	var handedAt []int64 // bytes handed at clock reading i
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		handedAt = append(handedAt, handed.Load())
		return start.Add(time.Duration(len(handedAt)-1) * time.Millisecond)
	}
	sink := newLogSink()
	rt := New(Config{Table: table, AccessLog: sink, Clock: clock})
	rt.listen = func(ctx context.Context, network, addr string) (net.Listener, error) {
		ln, err := new(net.ListenConfig).Listen(ctx, network, addr)
		return handedListener{ln, &handed}, err
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })

	for _, host := range []string{"small.local", "large.local", "chunked.local", "dead.local", "nope.local"} {
		// One request per connection, read to the end: the router has handed every
		// byte of its response once the client has read them all.
		before := handed.Load()
		c, err := net.Dial("tcp", rt.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || len(got) == 0 {
			t.Fatalf("%s: read %d bytes: %v", host, len(got), err)
		}
		f, err := parseAccessLine(sink.next(t))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		received, err := time.Parse(time.RFC3339Nano, f["time"])
		if err != nil {
			t.Fatal(err)
		}
		rtMS, err := strconv.ParseFloat(f["response_time"], 64)
		if err != nil {
			t.Fatalf("%s: response_time %q", host, f["response_time"])
		}
		end := int(received.Sub(start)/time.Millisecond) + int(rtMS*1000+0.5)
		mu.Lock()
		atEnd := handedAt[end]
		mu.Unlock()
		if total := handed.Load(); atEnd >= total {
			t.Errorf("%s (status %s): the end mark was read after the router had handed all %d bytes of the response to the client",
				host, f["status"], total-before)
		}
		if gr, err := strconv.ParseFloat(f["gorouter_time"], 64); err != nil || gr > rtMS {
			t.Errorf("%s: gorouter_time %q, want 0 to response_time %s", host, f["gorouter_time"], f["response_time"])
		}
	}
}
