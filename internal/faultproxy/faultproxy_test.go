package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
)

// echo serves line echoes on loopback and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestCutBreaksAndRefusesThenRestoreForwardsAgain(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "before"); err != nil || got != "before\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Cut()
	if _, err := roundTrip(c, "during"); err == nil {
		t.Fatal("a connection carried across a cut")
	}
	if d, err := net.Dial("tcp", p.Addr()); err == nil {
		d.Close()
		t.Fatal("a dial during a cut was accepted")
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	d, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial after Restore on the same address: %v", err)
	}
	defer d.Close()
	if got, err := roundTrip(d, "after"); err != nil || got != "after\n" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
	if cuts, killed := p.Stats(); cuts != 1 || killed != 2 {
		t.Fatalf("stats: %d cuts, %d connections broken; want 1 and both ends of one", cuts, killed)
	}
}
