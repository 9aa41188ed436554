package h1

import (
	"net"
	"syscall"
)

// sock is what a Conn's bufio.Reader reads: the connection, and, when armed with a
// request (out), the request written first. On Unix the write and the wait for the
// response are one raw read of the socket (sock_unix.go): the request is written and
// the reader parks until the poller says the response is there, then reads it with one
// read(2), where a write followed by a read would first try a read that finds nothing
// (EAGAIN) and only then park: one system call of three per request saved.
type sock struct {
	nc   net.Conn
	rc   syscall.RawConn // nil: plain writes and reads
	out  []byte          // the request the next Read writes before it waits
	sent int             // bytes of out written

	// The raw read's callback and what it reads and returns, kept here so that a
	// request allocates nothing.
	cb  func(fd uintptr) bool
	p   []byte
	n   int
	err error
}

// reset makes s read nc, without a request armed.
func (s *sock) reset(nc net.Conn) {
	s.nc, s.rc, s.out, s.sent = nc, nil, nil, 0
	if sc, ok := nc.(syscall.Conn); ok && rawSupported {
		if rc, err := sc.SyscallConn(); err == nil {
			s.rc = rc
		}
	}
}

// arm makes the next Read write req first, on the raw path; it reports false when
// there is none (write req yourself).
func (s *sock) arm(req []byte) bool {
	if s.rc == nil {
		return false
	}
	s.out, s.sent = req, 0
	return true
}

func (s *sock) Read(p []byte) (int, error) {
	if len(s.out) == 0 {
		return s.nc.Read(p)
	}
	return s.writeRead(p)
}
