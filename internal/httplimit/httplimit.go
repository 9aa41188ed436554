// Package httplimit gives the HTTP servers users push (the relay, the drain) the
// deadlines and bounds that keep a client without credentials, or a slow or idle one,
// from holding their connections or their memory.
//
// Why not http.Server.ReadTimeout: it runs from the first byte of a request to the end
// of the handler, and when it passes while a handler still waits (the relay answers a
// post of samples once a COPY stored them) net/http cancels the request's context. So
// the server times out headers (ReadHeaderTimeout), and a request's body gets its own
// deadline (Timeouts.Body), set once its credentials are checked and cleared when the
// body has been read.
package httplimit

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Timeouts are an HTTP server's deadlines; zero fields take the defaults.
type Timeouts struct {
	// Header bounds the request line and headers (default 10 s).
	Header time.Duration
	// Body bounds a body, from the end of its headers to its last byte (default 1 min:
	// a legitimate body of the largest size a server takes arrives in far less).
	Body time.Duration
	// Write bounds a response, from the end of the request's headers (default 2 min).
	Write time.Duration
	// Idle bounds the wait for the next request on a kept-alive connection (default
	// 2 min: longer than the 90 s after which Go's transports, gorouter's among them,
	// drop an idle connection themselves, so that they do it first).
	Idle time.Duration
}

// WithDefaults returns t with its zero fields set.
func (t Timeouts) WithDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Header, 10*time.Second)
	def(&t.Body, time.Minute)
	def(&t.Write, 2*time.Minute)
	def(&t.Idle, 2*time.Minute)
	return t
}

// Server returns a server of h with t's deadlines (t with its defaults).
func (t Timeouts) Server(h http.Handler) *http.Server {
	t = t.WithDefaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: t.Header, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// Refuse answers code (401 for missing credentials) without reading the request's body,
// and closes the connection after the answer: a client without credentials can hold it
// neither with a slow body nor kept alive.
func Refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// LimitBody replaces r's body, for a request whose credentials were checked, with one
// that reads at most max bytes (a longer one fails with *http.MaxBytesError, see
// TooLarge, and the connection is closed after the answer) and must arrive within
// t.Body (t with its defaults), after which a read fails and the connection is closed.
// read, when not nil, counts the bytes read from the connection.
func LimitBody(w http.ResponseWriter, r *http.Request, t Timeouts, max int64, read *atomic.Int64) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	// An error means the connection cannot take deadlines (HTTP/2 through a proxy in
	// tests): the server's own timeouts still hold.
	_ = rc.SetReadDeadline(time.Now().Add(t.WithDefaults().Body))
	r.Body = http.MaxBytesReader(w, &body{rc: rc, r: r.Body, read: read}, max)
}

// TooLarge reports whether err is a body over LimitBody's bound (answer 413).
func TooLarge(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig)
}

// body counts what is read and clears the read deadline at the body's end, so that a
// handler that goes on working after reading it is not cut off by it.
type body struct {
	rc   *http.ResponseController
	r    io.ReadCloser
	read *atomic.Int64
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.read != nil {
		b.read.Add(int64(n))
	}
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (b *body) Close() error { return b.r.Close() }
