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
