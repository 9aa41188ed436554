// Package freeport picks TCP ports for servers that must be told their port before
// they start. Loopback picks one for a server of our own (Postgres, Elasticsearch,
// chisel, the local foundation's parts): free when it returns, not reserved, so callers
// that can, retry on "address already in use". A Pool hands out ports that stay claimed
// until released, for programs that cannot retry (the local foundation's app instances).
//
// Both keep out of the range the kernel gives the local ends of outgoing connections
// (Linux: net.ipv4.ip_local_port_range): a port from it can become the local end of any
// process's connection between the moment it is picked and the server's bind (CI: a
// foundation's Postgres found its port taken, the tests around it making thousands of
// connections; an app instance that takes seconds to start crashed on a taken port).
// Loopback picks below that range and a Pool above it, so the two do not meet.
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
// Where the kernel says which ports it gives the local ends of outgoing connections,
// the port is picked below that range; elsewhere the kernel picks, as for any listener.
func Loopback() (int, error) {
	if first, _, ok := ephemeralRange(); ok && first > lowest+1000 {
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

// ephemeralRange is Linux's ip_local_port_range, which IPv6 shares; false where there
// is none to read.
func ephemeralRange() (first, last int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	first, err1 := strconv.Atoi(f[0])
	last, err2 := strconv.Atoi(f[1])
	return first, last, err1 == nil && err2 == nil && 0 < first && first <= last && last <= 65535
}
