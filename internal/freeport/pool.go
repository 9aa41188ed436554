package freeport

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// Pool hands out TCP ports that stay claimed until released: the ports the local
// foundation's app instances listen on ($PORT), as Diego gives each container a port
// on its cell's host. An app may take seconds to bind its port and cannot retry with
// another, so a port must stay free for it all that time:
//   - it comes from above the kernel's ephemeral range (61000 to 65535 on a default
//     Linux), where only an explicit bind can take it;
//   - it is claimed for as long as it is held, across processes where the OS allows
//     (claim), so pools in one process or in several never hand out the same port.
//
// Its methods may be called concurrently.
type Pool struct {
	first, last int

	mu   sync.Mutex
	held map[int]io.Closer // port → its claim
}

// NewPool returns a pool over the ports above the kernel's ephemeral range where there
// is room; below Loopback's range where there is not, or the kernel does not say.
func NewPool() *Pool {
	const room = 1000
	if _, last, ok := ephemeralRange(); ok && 65535-last >= room {
		return newPool(last+1, 65535)
	}
	return newPool(lowest-room*5, lowest-1)
}

func newPool(first, last int) *Pool {
	return &Pool{first: first, last: last, held: map[int]io.Closer{}}
}

// Take returns a port of the pool's range that is free on host and claimed by no one.
// It starts at a random port, so that pools sharing the range seldom try the same ones.
func (p *Pool) Take(host string) (int, error) {
	n := p.last - p.first + 1
	start := rand.IntN(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range n {
		port := p.first + (start+i)%n
		if p.held[port] != nil {
			continue
		}
		c, ok := claim(port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			c.Close()
			continue
		}
		l.Close()
		p.held[port] = c
		return port, nil
	}
	return 0, fmt.Errorf("find a free port: every port from %d to %d is in use", p.first, p.last)
}

// Release gives a port back once the program that listened on it has stopped.
func (p *Pool) Release(port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.held[port]; c != nil {
		c.Close()
		delete(p.held, port)
	}
}
