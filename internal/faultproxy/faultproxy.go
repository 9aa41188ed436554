// Package faultproxy is a TCP proxy for fault tests: it forwards loopback connections
// to a target (a Postgres server, a tunnel server) until Cut, which closes every
// connection it carries and stops listening, so that the target looks gone (dials are
// refused); Restore listens again on the same address. Tests put it in front of a
// server to stage an outage of a given length at a given moment.
package faultproxy

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is one proxy; its methods are safe for concurrent use.
type Proxy struct {
	addr, target string

	mu     sync.Mutex
	ln     net.Listener // nil while cut
	conns  map[net.Conn]struct{}
	cuts   int
	killed int
	wg     sync.WaitGroup
}

// Start listens on 127.0.0.1 (a free port) and forwards every connection to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's address, host:port; it stays the same across Cut and Restore.
func (p *Proxy) Addr() string { return p.addr }

// Cut breaks every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return
	}
	p.ln.Close()
	p.ln = nil
	p.cuts++
	for c := range p.conns {
		c.Close()
		p.killed++ // both ends of each forwarded connection
	}
	clear(p.conns)
}

// Restore listens again on the same address. The port was ours a moment ago; another
// process taking it meanwhile is retried for a few seconds, then an error.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faultproxy: listen again on %s: %w", p.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Outage cuts the proxy for d, then restores it.
func (p *Proxy) Outage(d time.Duration) error {
	p.Cut()
	time.Sleep(d)
	return p.Restore()
}

// Stats are the cuts so far and the connections they broke.
func (p *Proxy) Stats() (cuts, killed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts, p.killed
}

// Close cuts the proxy for good and waits for its goroutines.
func (p *Proxy) Close() error {
	p.Cut()
	p.wg.Wait()
	return nil
}

// serve accepts on ln until it is closed. Callers hold mu (or own p alone).
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(ln, c)
			}()
		}
	}()
}

func (p *Proxy) forward(ln net.Listener, c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln != ln { // cut while dialling
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		copyClose(up, c)
		close(done)
	}()
	copyClose(c, up)
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// copyClose copies until either side ends (or a cut closes them), then closes both.
func copyClose(dst, src net.Conn) {
	io.Copy(dst, src) //nolint:errcheck // a cut or either side closing ends it alike
	dst.Close()
	src.Close()
}
