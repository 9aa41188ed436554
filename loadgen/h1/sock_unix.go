//go:build unix

package h1

import (
	"io"
	"net"
	"os"
	"syscall"
)

const rawSupported = true

// writeRead writes s.out and reads the response's first bytes into p, in one raw read
// of the socket: RawConn.Read resets the poller's readiness before its first call, so
// a response that arrives after the write wakes the wait, and one that came before it
// is read at once.
func (s *sock) writeRead(p []byte) (int, error) {
	if s.cb == nil {
		s.cb = s.writeThenRead
	}
	s.p, s.n, s.err = p, 0, nil
	rerr := s.rc.Read(s.cb)
	n, err := s.n, s.err
	s.p, s.err = nil, nil
	if err == nil {
		err = rerr
	}
	if err != nil {
		s.out = nil
		return n, err
	}
	if len(s.out) > 0 {
		// The socket's buffer was full: write the rest, then read, through the poller.
		w, err := s.nc.Write(s.out)
		s.sent += w
		s.out = nil
		if err != nil {
			return 0, err
		}
		return s.nc.Read(p)
	}
	return n, nil
}

// writeThenRead is the raw read's callback: it writes s.out, then returns false to
// wait for the response, then reads it into s.p.
func (s *sock) writeThenRead(fd uintptr) bool {
	for len(s.out) > 0 {
		w, e := syscall.Write(int(fd), s.out)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return true // the socket takes no more now: the rest through the poller
		case e != nil:
			s.err = s.opError("write", e)
			return true
		}
		s.sent += w
		s.out = s.out[w:]
		if len(s.out) == 0 {
			return false // written: wait for the response
		}
	}
	for {
		r, e := syscall.Read(int(fd), s.p)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != nil:
			s.err = s.opError("read", e)
		case r == 0 && len(s.p) > 0:
			s.err = io.EOF
		default:
			s.n = r
		}
		return true
	}
}

// opError wraps errno as net.Conn's methods do.
func (s *sock) opError(op string, errno error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(),
		Err: os.NewSyscallError(op, errno)}
}
