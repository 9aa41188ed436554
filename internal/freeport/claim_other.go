//go:build !linux

package freeport

import (
	"io"
	"sync"
)

var claimed = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// claim claims a port for this process's pools until the claim is closed; other
// processes' claims are not seen here (the local foundation runs on Linux only).
func claim(port int) (io.Closer, bool) {
	claimed.Lock()
	defer claimed.Unlock()
	if claimed.ports[port] {
		return nil, false
	}
	claimed.ports[port] = true
	return portClaim(port), true
}

type portClaim int

func (p portClaim) Close() error {
	claimed.Lock()
	delete(claimed.ports, int(p))
	claimed.Unlock()
	return nil
}
