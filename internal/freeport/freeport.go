// Package freeport picks a TCP port on 127.0.0.1 for a server that must be told its
// port before it starts (Postgres, Elasticsearch, chisel, the local foundation's parts).
// The port is free when Loopback returns, not reserved: another process may take it
// before the server binds, so callers that can, retry on "address already in use".
package freeport

import (
	"fmt"
	"net"
)

// Loopback returns a TCP port that was free on 127.0.0.1 a moment ago, as the kernel
// picks ephemeral ports.
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
