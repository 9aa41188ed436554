package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jackc/pgx/v5/pgconn"
)

// SilentServer listens on 127.0.0.1, accepts every connection and never answers: a
// firewall that lets the handshake through, a hung server. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestOpenGivesUpOnASilentServerNamingIt(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	for name, dsn := range map[string]string{
		"default timeout": "postgres://u:secret@" + addr + "/db",
		"dsn's timeout":   "postgres://u:secret@" + addr + "/db?connect_timeout=1",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*DefaultConnectTimeout)
			defer cancel()
			_, err := Open(ctx, dsn)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Open = %v (context: %v): want its own timeout", err, ctx.Err())
			}
			if !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q must name %s and never the password", err, addr)
			}
			if !Transient(err) {
				t.Fatalf("a timeout is an outage to ride out: Transient(%v) = false", err)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("copy samples: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("heartbeat: %w", context.DeadlineExceeded), true},
		{pgx.ErrNoRows, false}, // an answer: there is no such row
		{errors.New("compute the metrics of step 1 of a: step not found"), false},
		{&pgconn.PgError{Code: "57P01"}, true}, // admin shutdown: a restart
		{&pgconn.PgError{Code: "57P03"}, true}, // starting up
		{&pgconn.PgError{Code: "53300"}, true}, // too many connections
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "23505"}, false}, // the server answered: a duplicate
		{&pgconn.PgError{Code: "42P01"}, false}, // no such table
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
