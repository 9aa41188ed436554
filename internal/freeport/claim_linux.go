package freeport

import (
	"fmt"
	"io"
	"net"
)

// claim claims a port for this process until the claim is closed: a socket bound to an
// abstract name, which no other socket of the network namespace (the TCP ports' own
// scope) can bind, and which the kernel frees when the process ends however it ends.
func claim(port int) (io.Closer, bool) {
	l, err := net.Listen("unix", fmt.Sprintf("@cf-benchmark/port/%d", port))
	if err != nil {
		return nil, false
	}
	return l, true
}
