package tunnel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// bound is how long a test waits for the server to close a connection: far beyond the
// short timeouts the tests set, so a loaded machine cannot make them fail; a server
// that never closes fails them.
const bound = 30 * time.Second

// closedByServer reads what comes and fails unless the server closes conn.
func closedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", bound)
	}
}

// TestHeldConnectionsAreClosed: a client that sends nothing, or headers too slowly for
// chisel to answer them, is closed by the handshake deadline; one that goes silent once
// chisel answered is closed by the idle deadline.
func TestHeldConnectionsAreClosed(t *testing.T) {
	f := newFixture(t, func(c *ServerConfig) {
		c.HandshakeTimeout, c.IdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	})
	for name, send := range map[string]string{
		"silent":       "",
		"slow headers": "GET / HTTP/1.1\r\nHost: tunnel\r\n",
		"silent after": "GET /health HTTP/1.1\r\nHost: tunnel\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", f.srvAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, send)
			closedByServer(t, conn)
		})
	}
}

// TestEstablishedTunnelOutlivesTheIdleTimeout: chisel's keepalives keep a tunnel that
// carries nothing open past the idle deadline: a connection through it still works.
func TestEstablishedTunnelOutlivesTheIdleTimeout(t *testing.T) {
	const idle = 2 * time.Second
	f := newFixture(t, func(c *ServerConfig) { c.KeepAlive, c.IdleTimeout = idle/4, idle })
	c, err := f.client(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", c.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(bound))
	br := bufio.NewReader(conn)
	for i := range 2 {
		if i == 1 {
			time.Sleep(3 * idle) // silent on both ends but for chisel's pings
		}
		if _, err := io.WriteString(conn, "ping\n"); err != nil {
			t.Fatal(err)
		}
		if got, err := br.ReadString('\n'); err != nil || got != "ping\n" {
			t.Fatalf("round trip %d: %q, %v", i, got, err)
		}
	}
}

// TestAwaitListenerWaitsForTheBind: Start's wait for chisel's local listener returns
// only once the port accepts, and gives up with its context on a port nobody binds.
func TestAwaitListenerWaitsForTheBind(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // closed: a dial is refused until it listens again
	bound := make(chan net.Listener, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
		}
		bound <- l
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := awaitListener(ctx, addr); err != nil {
		t.Fatalf("awaitListener: %v", err)
	}
	select {
	case l := <-bound:
		if l != nil {
			l.Close()
		}
	default:
		t.Fatal("awaitListener returned before the port listened")
	}
	// Now nobody listens there: it waits for its context.
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := awaitListener(short, addr); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("awaitListener on a closed port: %v, want the context's deadline", err)
	}
}
