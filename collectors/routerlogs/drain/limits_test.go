package drain

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
)

// bound is how long a test waits for the receiver to close a connection: far beyond the
// short timeouts the tests set, so a loaded machine cannot make them fail; a receiver
// that never closes fails them.
const bound = 30 * time.Second

// closedByServer reads what is left on conn and fails unless the receiver closed it.
func closedByServer(t *testing.T, conn net.Conn, br io.Reader) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the receiver kept the connection open for %v", bound)
	}
}

func dialHTTP(t *testing.T, r *Receiver) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", r.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(bound))
	return conn, bufio.NewReader(conn)
}

func readResponse(t *testing.T, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var basic = "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password)) + "\r\n"

// TestHTTPRefusedBeforeTheBody: a request without the run's credentials is answered 401
// with none of its body read, and its connection is closed, whether its body is still
// coming or the client would keep the connection alive.
func TestHTTPRefusedBeforeTheBody(t *testing.T) {
	r := newReceiver(t, &fakeStore{}, nil) // production timeouts: the close must not wait for them
	wrong := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":wrong-password-0123")) + "\r\n"
	for name, req := range map[string]string{
		"slow body":      "POST / HTTP/1.1\r\nHost: drain\r\nContent-Length: 1000000\r\n\r\n" + string(rtr(1)),
		"wrong password": "POST / HTTP/1.1\r\nHost: drain\r\n" + wrong + "Content-Length: 1000000\r\n\r\n" + string(rtr(1)),
		"keep-alive":     "POST / HTTP/1.1\r\nHost: drain\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, br := dialHTTP(t, r)
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			if resp := readResponse(t, br); resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Errorf("answer %d, close %v; want 401 and close", resp.StatusCode, resp.Close)
			}
			closedByServer(t, conn, br)
		})
	}
	if c := r.Counters(); r.bodyBytes.Load() != 0 || c.RefusedAuth != 3 || c.Router != 0 {
		t.Errorf("read %d bytes of bodies; counters %+v; want none read, 3 refused", r.bodyBytes.Load(), c)
	}
}

// TestHTTPDeadlines: with the run's credentials, a body that stops coming and a
// kept-alive connection left idle are closed once their timeouts pass.
func TestHTTPDeadlines(t *testing.T) {
	r := newReceiver(t, &fakeStore{}, func(c *Config) {
		c.Timeouts = httplimit.Timeouts{Body: 100 * time.Millisecond, Idle: 100 * time.Millisecond}
	})
	t.Run("slow body", func(t *testing.T) {
		conn, br := dialHTTP(t, r)
		io.WriteString(conn, "POST / HTTP/1.1\r\nHost: drain\r\n"+basic+"Content-Length: 1000000\r\n\r\n<14>1 ")
		closedByServer(t, conn, br)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, br := dialHTTP(t, r)
		msg := rtr(1)
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: drain\r\n%sContent-Length: %d\r\n\r\n%s", basic, len(msg), msg)
		if resp := readResponse(t, br); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("answer %d, close %v; want 200 kept alive", resp.StatusCode, resp.Close)
		}
		closedByServer(t, conn, br)
	})
}

// TestHTTPOversizedBody: a body over MaxBody is answered 413 having read no more than
// MaxBody of it.
func TestHTTPOversizedBody(t *testing.T) {
	const limit = 64 << 10
	r := newReceiver(t, &fakeStore{}, func(c *Config) { c.MaxBody = limit })
	conn, br := dialHTTP(t, r)
	go func() { // 64 times the limit; the receiver closes before it is all sent
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: drain\r\n%sContent-Length: %d\r\n\r\n", basic, 64*limit)
		chunk := make([]byte, limit)
		for range 64 {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	if resp := readResponse(t, br); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("answer %d, want 413", resp.StatusCode)
	}
	closedByServer(t, conn, br)
	if read := r.bodyBytes.Load(); read > limit+1 {
		t.Errorf("read %d bytes of the body, want at most the limit, %d", read, limit)
	}
	if n := r.Counters().BadFrames[ReasonBodySize]; n != 1 {
		t.Errorf("%d bodies counted too large, want 1", n)
	}
}

// TestSyslogUnauthenticatedFramesNotStored: frames of the run's app, with the run's
// trace ids, sent without a client certificate of the run (plain TCP, TLS without a
// certificate, another CA's certificate) are not read; the run's agent's are stored.
func TestSyslogUnauthenticatedFramesNotStored(t *testing.T) {
	store := &fakeStore{}
	r := newReceiver(t, store, func(c *Config) { c.HTTPAddr = "" })
	p := mustPKI(t)
	frames := rfc5424.AppendFrame(rfc5424.AppendFrame(nil, rtr(1)), rtr(2))
	dialers := map[string]func() (net.Conn, error){
		"plain tcp":      func() (net.Conn, error) { return net.Dial("tcp", r.SyslogAddr()) },
		"no certificate": func() (net.Conn, error) { return tls.Dial("tcp", r.SyslogAddr(), p.noCert) },
		"another CA's":   func() (net.Conn, error) { return tls.Dial("tcp", r.SyslogAddr(), p.outsider) },
	}
	for name, dial := range dialers {
		t.Run(name, func(t *testing.T) {
			conn, err := dial()
			if err != nil { // the handshake may fail on the client's side already
				return
			}
			defer conn.Close()
			conn.Write(frames)
			closedByServer(t, conn, conn)
		})
	}
	// A handshake that failed on the client's side first is counted a moment later.
	deadline := time.Now().Add(bound)
	for r.Counters().RefusedAuth < int64(len(dialers)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c := r.Counters(); c.Router != 0 || c.RefusedAuth != int64(len(dialers)) {
		t.Errorf("counters %+v; want no router message, %d refused", c, len(dialers))
	}
	conn := dialSyslog(t, r)
	conn.Write(frames)
	conn.Close()
	for r.Counters().Router < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if rows, _ := store.snapshot(); len(rows) != 2 {
		t.Errorf("%d rows stored, want the agent's 2", len(rows))
	}
}

// TestSyslogSilentConnectionsAreClosed: a connection that sends nothing, one that
// stops after its handshake and one that stops after a frame are closed once their
// deadlines pass.
func TestSyslogSilentConnectionsAreClosed(t *testing.T) {
	store := &fakeStore{}
	r := newReceiver(t, store, func(c *Config) {
		c.HTTPAddr, c.SyslogFirstFrame, c.SyslogIdle = "", 100*time.Millisecond, 100*time.Millisecond
	})
	t.Run("nothing", func(t *testing.T) {
		conn, err := net.Dial("tcp", r.SyslogAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		closedByServer(t, conn, conn)
	})
	t.Run("after the handshake", func(t *testing.T) {
		conn := dialSyslog(t, r)
		defer conn.Close()
		closedByServer(t, conn, conn)
	})
	t.Run("after a frame", func(t *testing.T) {
		conn := dialSyslog(t, r)
		defer conn.Close()
		conn.Write(rfc5424.AppendFrame(nil, rtr(1)))
		closedByServer(t, conn, conn)
		if n := r.Counters().Router; n != 1 {
			t.Errorf("%d router messages, want the frame sent", n)
		}
	})
}

// TestSyslogSilentClientsCannotLockOut: with every connection taken by clients that
// never shake hands, the run's agent still gets in (the oldest of them makes room), and
// its connections are never the ones closed for a newcomer.
func TestSyslogSilentClientsCannotLockOut(t *testing.T) {
	const max = 3
	store := &fakeStore{}
	r := newReceiver(t, store, func(c *Config) { c.HTTPAddr, c.MaxConns, c.SyslogFirstFrame = "", max, time.Hour })
	open := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.conns)
	}
	waitOpen := func(n int) {
		t.Helper()
		deadline := time.Now().Add(bound)
		for open() != n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if open() != n {
			t.Fatalf("%d connections open, want %d", open(), n)
		}
	}
	for range max {
		conn, err := net.Dial("tcp", r.SyslogAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	waitOpen(max)
	var agents []net.Conn
	for i := range max {
		conn := dialSyslog(t, r)
		defer conn.Close()
		if _, err := conn.Write(rfc5424.AppendFrame(nil, rtr(uint64(i)))); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, conn)
	}
	deadline := time.Now().Add(bound)
	for r.Counters().Router < max && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.Counters().Router; n != max {
		t.Fatalf("%d of the agents' %d messages arrived", n, max)
	}
	// Full of the agent's connections: a newcomer is refused, the agent keeps them all.
	conn, err := net.Dial("tcp", r.SyslogAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closedByServer(t, conn, conn)
	for i, a := range agents {
		if _, err := a.Write(rfc5424.AppendFrame(nil, rtr(uint64(100+i)))); err != nil {
			t.Fatal(err)
		}
	}
	for r.Counters().Router < 2*max && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.Counters().Router; n != 2*max {
		t.Errorf("%d of the agents' %d messages arrived", n, 2*max)
	}
}
