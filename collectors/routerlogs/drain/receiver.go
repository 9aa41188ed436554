package drain

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Receiver is the drain: listeners, the buffer and the writer. It is a lifecycle.Part:
// Close stops taking messages (HTTP requests in flight get Config.Grace to finish; Wait
// reports those cut) and then goes on storing what is buffered for Config.Grace; the
// end of Start's ctx skips that grace.
type Receiver struct {
	cfg Config
	log *slog.Logger
	c   *counters
	buf *buffer
	// stored counts the rows this receiver stored (new or already there).
	stored atomic.Int64
	// bodyBytes counts what was read of HTTP bodies.
	bodyBytes atomic.Int64
	life      lifecycle.State

	mu       sync.Mutex
	httpLn   net.Listener
	syslogLn net.Listener
	conns    map[net.Conn]*syslogConn
	accepted int64 // syslog connections so far: their order, for eviction
	closed   bool
	wg       sync.WaitGroup // accept loop and connections
	httpSrv  *httpserver.Server
}

var _ lifecycle.Part = (*Receiver)(nil)

// New checks cfg and makes a Receiver; it does not listen yet.
func New(cfg Config) (*Receiver, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Apps = maps.Clone(cfg.Apps) // read by every connection: the caller's may change
	return &Receiver{cfg: cfg, log: cfg.Logger, c: newCounters(cfg.Apps), buf: newBuffer(cfg.MaxBuffered), conns: map[net.Conn]*syslogConn{}}, nil
}

// Counters returns what the receiver got so far.
func (r *Receiver) Counters() Counters { return r.c.snapshot() }

// Stored is how many rows the receiver has handed to the store so far.
func (r *Receiver) Stored() int64 { return r.stored.Load() }

// HTTPAddr and SyslogAddr are the addresses listened on, "" before Start or without.
func (r *Receiver) HTTPAddr() string { return r.addr(&r.httpLn) }

// SyslogAddr is the syslog listener's address.
func (r *Receiver) SyslogAddr() string { return r.addr(&r.syslogLn) }

func (r *Receiver) addr(ln *net.Listener) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *ln == nil {
		return ""
	}
	return (*ln).Addr().String()
}

// Start listens and starts storing.
func (r *Receiver) Start(ctx context.Context) error {
	if err := r.life.Begin(); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	var lns []net.Listener
	listen := func(addr string, tlsCfg *tls.Config) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("drain: %w", err)
		}
		lns = append(lns, ln)
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		return ln, nil
	}
	httpLn, err := listen(r.cfg.HTTPAddr, nil)
	if err != nil {
		r.life.Stopped(err)
		return err
	}
	syslogLn, err := listen(r.cfg.SyslogAddr, r.cfg.TLS)
	if err != nil {
		r.life.Stopped(err)
		return err
	}
	r.mu.Lock()
	r.httpLn, r.syslogLn = httpLn, syslogLn
	r.mu.Unlock()

	failed := make(chan error, 2)
	if httpLn != nil {
		srv := r.cfg.Timeouts.Server(r)
		srv.ErrorLog = slog.NewLogLogger(r.log.Handler(), slog.LevelWarn)
		r.httpSrv = httpserver.New(srv, httpLn, r.cfg.Grace)
		r.httpSrv.Start(ctx) // a new server: it starts
		go func() {
			if err := r.httpSrv.Wait(); err != nil {
				failed <- fmt.Errorf("drain: %w", err)
			}
		}()
	}
	if syslogLn != nil {
		r.wg.Add(1)
		go r.accept(syslogLn, failed)
	}
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		r.write(writerCtx)
	}()
	go r.supervise(ctx, failed, stopWriter, wdone)
	r.log.Info("drain listening", "http", r.HTTPAddr(), "syslog", r.SyslogAddr(), "tls", r.cfg.TLS != nil,
		"run", r.cfg.RunID, "apps", len(r.cfg.Apps))
	return nil
}

// supervise stops the receiver when asked to, when ctx ends or a listener fails: the
// listeners first, then the writer, after at most the grace (none when ctx ended).
func (r *Receiver) supervise(ctx context.Context, failed <-chan error, stopWriter context.CancelFunc, wdone <-chan struct{}) {
	var failure error
	select {
	case <-r.life.Stopping():
	case <-ctx.Done():
	case failure = <-failed:
		r.log.Error("drain: listener failed; stopping", "err", failure)
	}
	r.mu.Lock()
	r.closed = true
	if r.syslogLn != nil {
		r.syslogLn.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	if r.httpSrv != nil { // its requests in flight get the grace, unless ctx ended
		if err := r.httpSrv.Close(); err != nil && failure == nil {
			failure = fmt.Errorf("drain: %w", err)
		}
	}
	grace := r.cfg.Grace
	if ctx.Err() != nil {
		grace = 0
	}
	r.wg.Wait()
	r.buf.close()
	select {
	case <-wdone:
	case <-time.After(grace):
	}
	stopWriter()
	<-wdone
	err := failure
	if n := r.buf.len(); n > 0 {
		r.log.Error("drain: router requests left unstored", "rows", n)
		err = errors.Join(err, unstored(n))
	}
	r.life.Stopped(err)
}

// Wait blocks until the receiver has stopped.
func (r *Receiver) Wait() error { return r.life.Wait() }

// Close stops the receiver, storing what is buffered for up to the grace.
func (r *Receiver) Close() error { return r.life.Close() }

// Run is Start and Wait.
func (r *Receiver) Run(ctx context.Context) error { return lifecycle.Run(ctx, r) }

// ServeHTTP takes an HTTP drain request: POST with the run's credentials, a body of
// RFC 5424 messages. GET /health answers 200 for Cloud Foundry's health check.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && req.URL.Path == "/health" {
		w.WriteHeader(http.StatusOK)
		return
	}
	user, pass, ok := req.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(r.cfg.User)) != 1 ||
		subtle.ConstantTimeCompare([]byte(pass), []byte(r.cfg.Password)) != 1 {
		r.c.refusedAuth.Add(1)
		w.Header().Set("WWW-Authenticate", `Basic realm="cfbench-drain"`)
		httplimit.Refuse(w, "the run's credentials are required", http.StatusUnauthorized)
		return
	}
	if req.Method != http.MethodPost {
		httplimit.Refuse(w, "POST syslog messages", http.StatusMethodNotAllowed)
		return
	}
	httplimit.LimitBody(w, req, r.cfg.Timeouts, int64(r.cfg.MaxBody), &r.bodyBytes)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		if httplimit.TooLarge(err) {
			r.c.badFrame(ReasonBodySize)
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		}
		return // else the body did not arrive in time, or the client went away
	}
	rfc5424.SplitBody(body, r.message)
	w.WriteHeader(http.StatusOK)
}

// accept takes syslog connections until the listener is closed.
func (r *Receiver) accept(ln net.Listener, failed chan<- error) {
	defer r.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			r.mu.Lock()
			closed := r.closed
			r.mu.Unlock()
			var ne net.Error
			switch {
			case closed:
				return
			case errors.As(err, &ne) && ne.Timeout():
				time.Sleep(10 * time.Millisecond)
				continue
			}
			failed <- fmt.Errorf("drain: syslog: %w", err)
			return
		}
		r.mu.Lock()
		if !r.closed && len(r.conns) >= r.cfg.MaxConns {
			r.evict()
		}
		if r.closed || len(r.conns) >= r.cfg.MaxConns {
			full := !r.closed
			r.mu.Unlock()
			if full {
				r.log.Warn("drain: too many syslog connections; refusing one", "max", r.cfg.MaxConns)
			}
			conn.Close()
			continue
		}
		r.accepted++
		sc := &syslogConn{seq: r.accepted}
		r.conns[conn] = sc
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serveConn(conn, sc)
	}
}

// syslogConn is what the accept loop knows of a syslog connection; r.mu guards it.
type syslogConn struct {
	seq    int64 // its order of acceptance
	authed bool  // it showed a client certificate of the run
}

// evict closes the oldest syslog connection that has not shown a certificate yet, if
// any, to make room for a new one. Callers hold r.mu.
func (r *Receiver) evict() {
	var oldest net.Conn
	for c, sc := range r.conns {
		if !sc.authed && (oldest == nil || sc.seq < r.conns[oldest].seq) {
			oldest = c
		}
	}
	if oldest != nil {
		delete(r.conns, oldest) // its serveConn deletes it again, harmlessly
		oldest.Close()
	}
}

// serveConn reads octet-counted frames from one connection until it ends: after the
// TLS handshake has verified the sender's certificate, within SyslogFirstFrame, and
// each next frame within SyslogIdle.
func (r *Receiver) serveConn(conn net.Conn, sc *syslogConn) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		delete(r.conns, conn)
		r.mu.Unlock()
		conn.Close()
	}()
	conn.SetDeadline(time.Now().Add(r.cfg.SyslogFirstFrame))
	tc, ok := conn.(*tls.Conn)
	if !ok { // Config.check allows no other
		return
	}
	if err := tc.Handshake(); err != nil {
		r.c.refusedAuth.Add(1)
		r.log.Debug("drain: syslog connection without the run's client certificate", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	r.mu.Lock()
	sc.authed = true
	r.mu.Unlock()
	fr := rfc5424.NewFrameReader(conn, 0)
	for {
		msg, err := fr.Next()
		var fe *rfc5424.FrameError
		switch {
		case err == nil:
			conn.SetDeadline(time.Now().Add(r.cfg.SyslogIdle))
			r.message(msg)
		case errors.As(err, &fe):
			conn.SetDeadline(time.Now().Add(r.cfg.SyslogIdle))
			r.c.badFrame(fe.Reason)
		default:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.log.Debug("drain: syslog connection ended", "remote", conn.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// message takes one RFC 5424 message; it may be called concurrently.
func (r *Receiver) message(b []byte) {
	m, err := rfc5424.Parse(b)
	if err != nil {
		var pe *rfc5424.ParseError
		if errors.As(err, &pe) {
			r.c.badFrame(pe.Field)
		}
		return
	}
	name, ok := r.cfg.Apps[m.AppName]
	if !ok {
		r.c.refusedApp.Add(1)
		return
	}
	if !m.IsRouter() {
		r.c.other.Add(1)
		return
	}
	rec, err := accesslog.ParseGorouter(m.Msg)
	if err == nil && rec.AppID != m.AppName {
		// The agent names the app whose drain this is; gorouter the app it routed to.
		r.c.refusedApp.Add(1)
		return
	}
	r.c.routerLine(m.AppName)
	if err != nil {
		r.c.unparseable.Add(1)
		return
	}
	row, ok := routerlogs.RouterRequest(&rec, m.AppName, name, r.cfg.TraceTag)
	if !ok {
		r.c.foreign.Add(1)
		return
	}
	if !r.buf.push(row) {
		r.c.dropped.Add(1)
	}
}
