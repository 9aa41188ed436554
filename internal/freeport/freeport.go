// Package freeport picks a TCP port on 127.0.0.1 for a server that must be told its
// port before it starts (Postgres, Elasticsearch, chisel, the local foundation's parts).
// The port is free when Loopback returns, not reserved: another process may take it
// before the server binds, so callers that can, retry on "address already in use".
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port Loopback picks itself.
const lowest = 10000

// Loopback returns a TCP port that was free on 127.0.0.1 a moment ago.
//
// Where the kernel says which ports it gives the local ends of outgoing connections
// (Linux: net.ipv4.ip_local_port_range), the port is picked below that range: a port
// from it can become the local end of any process's connection between now and the
// server's bind (CI: a foundation's Postgres found its port taken, the tests around it
// making thousands of connections). Elsewhere the kernel picks, as for any listener.
func Loopback() (int, error) {
	if first, ok := ephemeralFirst(); ok && first > lowest+1000 {
		for range 50 {
			p := lowest + rand.IntN(first-lowest)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralFirst is the first port of Linux's ip_local_port_range; false where there is
// none to read.
func ephemeralFirst() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	first, err := strconv.Atoi(f[0])
	return first, err == nil
}
