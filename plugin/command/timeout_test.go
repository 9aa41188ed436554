package command

import (
	"net"
	"strings"
	"testing"
)

// TestSilentDatabaseFailsWithItsAddress points run and status at a port that accepts
// TCP and never answers: each gives up by itself (the results database's connect
// timeout) with an error naming the address, never the password.
func TestSilentDatabaseFailsWithItsAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // never answered; closed with the listener's test
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	addr := ln.Addr().String()
	dsn := "postgres://u:secret@" + addr + "/results"
	spec := writeSpec(t, goodSpec)
	t.Run("group", func(t *testing.T) {
		for name, args := range map[string][]string{
			"status": {"status", "--db", dsn, "20261122-130501-3f9a"},
			"run":    {"run", "-f", spec, "--db", dsn},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				r := run(t, nil, args...)
				if r.code != ExitFailure || !strings.Contains(r.stderr, addr) || strings.Contains(r.stderr+r.stdout, "secret") {
					t.Fatalf("exit %d, stderr %q: want a failure naming %s", r.code, r.stderr, addr)
				}
			})
		}
	})
}
