package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPoolAvoidsTheEphemeralRange: a pool's ports lie above the ports the kernel gives
// outgoing connections, so none of them can take one before its program binds it.
func TestPoolAvoidsTheEphemeralRange(t *testing.T) {
	_, last, ok := ephemeralRange()
	if !ok || 65535-last < 1000 {
		t.Skipf("no room above the ephemeral range here (%d, %v)", last, ok)
	}
	p := NewPool()
	for range 20 {
		port, err := p.Take("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Release(port)
		if port <= last {
			t.Fatalf("port %d, want it above the ephemeral range (last %d)", port, last)
		}
	}
}

// TestPoolHandsOutAPortOnce: a port another pool holds, or another socket listens on,
// is not handed out; once both let go, it is.
func TestPoolHandsOutAPortOnce(t *testing.T) {
	a := NewPool()
	port, err := a.Take("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	b := newPool(port, port)
	if got, err := b.Take("127.0.0.1"); err == nil {
		t.Fatalf("a second pool took port %d while the first held it", got)
	}

	a.Release(port)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("bind the released port: %v", err)
	}
	_, err = b.Take("127.0.0.1")
	l.Close()
	want := "find a free port: every port from " + strconv.Itoa(port) + " to " + strconv.Itoa(port) + " is in use"
	if err == nil || err.Error() != want {
		t.Fatalf("Take while another socket listens on the port: err = %v, want %q", err, want)
	}

	got, err := b.Take("127.0.0.1")
	if err != nil || got != port {
		t.Fatalf("Take after both let go = %d, %v; want %d", got, err, port)
	}
	b.Release(got)
}
