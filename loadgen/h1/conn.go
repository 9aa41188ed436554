package h1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// readBufSize is each Conn's read buffer: a response head and a few small bodies.
const readBufSize = 8 << 10

// Conn sends requests to one address, one at a time, over one TCP connection at a time.
// A failed request closes the connection and the next one dials anew. One goroutine at
// a time may call Do or Close; Abort may be called from any goroutine at any time.
type Conn struct {
	addr      string
	dialer    net.Dialer
	keepAlive bool

	mu sync.Mutex // guards nc against Abort and Close; Do alone changes it
	nc net.Conn   // nil when there is no connection

	br  *bufio.Reader
	buf []byte   // the current request's head, stamped
	cur *Request // whose head is in buf
}

// NewConn returns a Conn that dials addr ("host:port") with dialer; nothing is dialled
// before the first Do. keepAlive keeps the connection for the next request when the
// server allows it; without it every request gets its own connection (send your
// Requests with Connection: close then).
func NewConn(addr string, dialer *net.Dialer, keepAlive bool) *Conn {
	return &Conn{addr: addr, dialer: *dialer, keepAlive: keepAlive}
}

// Do sends r with every stamped field set to stamp and reads the whole response,
// discarding its body. deadline bounds everything from dialling to the last body byte;
// it is set once on the connection. ctx is checked before sending and bounds the dial;
// to interrupt a Do blocked on the network, call Abort (context.AfterFunc(ctx,
// c.Abort)). Once ctx is done every failure is reported as ctx.Err().
//
// Errors are the network's own (net.OpError with ECONNREFUSED, ECONNRESET, a timeout;
// io.EOF or io.ErrUnexpectedEOF when the server closed the connection early), or
// wrap ErrMalformed. After an error the response still carries the status and the body
// bytes read, if the status line arrived. A request sent on a reused connection that
// the server had closed (nothing read back) is sent once more on a new connection, as
// net/http does: always if nothing could be written, else only if it is GET, HEAD,
// OPTIONS or TRACE.
func (c *Conn) Do(ctx context.Context, r *Request, stamp *[StampLen]byte, deadline time.Time) (Response, error) {
	if c.cur != r {
		c.buf = append(c.buf[:0], r.head...)
		c.cur = r
	}
	for _, off := range r.stamps {
		copy(c.buf[off:off+StampLen], stamp[:])
	}
	resp, err := c.roundTrip(ctx, r, deadline)
	if err != nil {
		c.closeConn()
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
	}
	return resp, err
}

func (c *Conn) roundTrip(ctx context.Context, r *Request, deadline time.Time) (Response, error) {
	for retried := false; ; retried = true {
		reused := c.nc != nil
		if !reused {
			if err := c.dial(ctx, deadline); err != nil {
				return Response{}, err
			}
		}
		if err := c.nc.SetDeadline(deadline); err != nil {
			return Response{}, err
		}
		// After SetDeadline: an Abort from here on comes after it and wins.
		if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		n, err := c.nc.Write(c.buf)
		if err == nil && r.body != nil {
			_, err = c.nc.Write(r.body)
		}
		if err == nil {
			// The first response byte: the server got the request. Its first read
			// usually finds nothing (EAGAIN) and then waits; waiting first instead
			// (through a RawConn) loses replies, as the poller clears a readiness
			// that came before the wait (measured: 4 of 10,000 timed out).
			_, err = c.br.Peek(1)
		}
		if err != nil {
			if reused && !retried && (n == 0 || r.replayable) && closedByPeer(err) {
				c.closeConn()
				continue
			}
			return Response{}, err
		}
		resp, keep, err := readResponse(c.br, r.headMethod)
		// Bytes after the response were not asked for: the connection is out of step.
		if err == nil && (!keep || !c.keepAlive || c.br.Buffered() > 0) {
			c.closeConn()
		}
		return resp, err
	}
}

// closedByPeer reports whether err says the server closed the connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *Conn) dial(ctx context.Context, deadline time.Time) error {
	d := c.dialer
	d.Deadline = deadline
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nc = nc
	c.mu.Unlock()
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, readBufSize)
	} else {
		c.br.Reset(nc)
	}
	return nil
}

func (c *Conn) closeConn() {
	c.mu.Lock()
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
	c.mu.Unlock()
}

// aLongTimeAgo is a deadline that has passed: setting it interrupts blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// Abort interrupts the Do in progress, if any: its I/O fails at once. A later Do sets
// its own deadline and is not affected.
func (c *Conn) Abort() {
	c.mu.Lock()
	if c.nc != nil {
		c.nc.SetDeadline(aLongTimeAgo)
	}
	c.mu.Unlock()
}

// Close closes the connection, if any. A later Do dials a new one.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		return nil
	}
	err := c.nc.Close()
	c.nc = nil
	return err
}
