package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestLoopbackPortCanBeBound(t *testing.T) {
	port, err := Loopback()
	if err != nil {
		t.Fatal(err)
	}
	if port < 1 || port > 65535 {
		t.Fatalf("port %d out of range", port)
	}
	// The listener Loopback used is closed: the port can be bound again at once.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("bind the port Loopback gave: %v", err)
	}
	l.Close()
}

// TestLoopbackAvoidsTheEphemeralRange: where the kernel says which ports it gives
// outgoing connections, Loopback's ports lie below them.
func TestLoopbackAvoidsTheEphemeralRange(t *testing.T) {
	first, _, ok := ephemeralRange()
	if !ok || first <= lowest+1000 {
		t.Skipf("no ephemeral range to avoid here (%d, %v)", first, ok)
	}
	for range 20 {
		port, err := Loopback()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowest || port >= first {
			t.Fatalf("port %d, want it in [%d, %d): below the ephemeral range", port, lowest, first)
		}
	}
}
