// Package router is the HTTP router of the local foundation (a one-machine
// Cloud Foundry). It plays gorouter: it routes by Host header, round-robin,
// to the running instances of an app, honours X-Cf-App-Instance, passes
// WebSocket and other HTTP upgrades through, sets the request headers
// gorouter sets and writes one gorouter-format access-log line per request.
//
// Behaviour mirrors github.com/cloudfoundry/gorouter at commit b5be7589
// (2025-04-17, the last before the code moved into routing-release):
// handlers/{requestinfo,zipkin,request_id,lookup,reporter,x_forwarded_proto}.go,
// proxy/proxy.go, proxy/round_tripper/{proxy_round_tripper,error_handler}.go,
// errorwriter/error_writer.go and accesslog/schema/access_log_record.go,
// with routing-release defaults except that Zipkin tracing is on
// (router.tracing.enable_zipkin: true), so B3 headers are kept or generated
// and logged. Route services, TLS, sticky sessions, context paths,
// X-Cf-Process-Instance, endpoint pruning and the health-check user agent
// are left out.
package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Config configures a Router.
type Config struct {
	Listen string // e.g. 127.0.0.1:0; empty means 127.0.0.1:0
	Table  Table
	// AccessLog receives one gorouter-format line per request, newline
	// included, in a single Write; nil for none. Writes are serialised by
	// the router.
	AccessLog io.Writer
	Clock     func() time.Time // nil = time.Now (tests may pin)
	Logger    *slog.Logger     // nil = discard
}

const (
	defaultListen = "127.0.0.1:0"
	// shutdownGrace bounds how long Close lets in-flight requests finish.
	shutdownGrace = 10 * time.Second
	// unwindGrace bounds how long Close waits for handlers after it has
	// cancelled their contexts (upgraded connections, stragglers).
	unwindGrace = 2 * time.Second
	// frontendIdleTimeout is gorouter's router.frontend_idle_timeout default.
	frontendIdleTimeout = 900 * time.Second
	readHeaderTimeout   = 30 * time.Second
	// spareConnAge is how long Close lets a connection sit without a first
	// request before closing it. http.Server.Shutdown would wait 5 s for
	// it, and clients with keep-alive pools (load generators) leave such
	// spare connections behind.
	spareConnAge = 500 * time.Millisecond
)

// Errors returned by Start.
var (
	ErrStarted = fmt.Errorf("router: %w", lifecycle.ErrStarted)
	ErrClosed  = fmt.Errorf("router: %w", lifecycle.ErrClosed)
	ErrNoTable = errors.New("router config has no table")
)

// Router is a gorouter look-alike. Create it with New; it follows the lifecycle of
// package lifecycle (Start listens, Close drains). The end of Start's context closes it
// as Close does. All methods are safe for concurrent use.
type Router struct {
	cfg      Config
	now      func() time.Time
	logger   *slog.Logger
	backends *http.Transport
	h2c      *http.Transport // to routes whose destination protocol is http2
	proxy    *httputil.ReverseProxy
	counters counters
	// listen opens the client-facing listener (tests wrap its connections).
	listen func(ctx context.Context, network, address string) (net.Listener, error)

	logMu    sync.Mutex // serialises cfg.AccessLog writes
	active   atomic.Int64
	newConns sync.Map // net.Conn → time.Time accepted, until its first request

	life lifecycle.State
	mu   sync.Mutex
	ln   net.Listener // set by Start, replaced by a restart
	srv  *server      // the server on ln
	// closing is closed when the router begins to shut down; a restart under way
	// then ends without listening again (see Restart).
	closing    chan struct{}
	restarting bool
	restarts   sync.WaitGroup // the restart under way
	serving    sync.WaitGroup // each server, until it stopped
	failed     chan error     // a server's Serve failing, for supervise
}

// server is one HTTP server on one listener (package httpserver); a restart replaces
// it.
type server struct {
	*httpserver.Server
	// cancelBase cancels the context every request of the server descends from:
	// it aborts upgraded connections, which http.Server.Shutdown does not track.
	cancelBase context.CancelFunc
	// end is how the server ends, decided once: serverClosed when the router closes
	// it (Close, a restart), serverFailed when it stopped by itself first.
	end atomic.Int32
}

// How a server ends (server.end).
const (
	serverServing = iota
	serverClosed
	serverFailed
)

var _ lifecycle.Part = (*Router)(nil)

// New returns a Router for cfg. It does not listen until Start.
func New(cfg Config) *Router {
	rt := &Router{
		cfg:    cfg,
		now:    cfg.Clock,
		logger: cfg.Logger,
	}
	if rt.now == nil {
		rt.now = time.Now
	}
	if rt.logger == nil {
		rt.logger = slog.New(slog.DiscardHandler)
	}
	rt.listen = new(net.ListenConfig).Listen
	rt.closing = make(chan struct{})
	rt.failed = make(chan error, 1)
	rt.backends = newBackendTransport()
	rt.h2c = newBackendTransport()
	rt.h2c.Protocols = new(http.Protocols)
	rt.h2c.Protocols.SetUnencryptedHTTP2(true)
	rt.proxy = &httputil.ReverseProxy{
		Director:       rt.director,
		Transport:      &roundTripper{rt: rt, base: rt.backends, h2c: rt.h2c},
		FlushInterval:  -1, // stream: flush after every write
		BufferPool:     &copyBuffers{},
		ModifyResponse: modifyResponse,
		ErrorHandler:   rt.proxyError,
		ErrorLog:       slog.NewLogLogger(rt.logger.Handler(), slog.LevelWarn),
	}
	return rt
}

// Start listens on cfg.Listen and serves in the background. It returns listen errors,
// ErrNoTable, ErrStarted and ErrClosed. When ctx ends the router closes as by Close.
func (rt *Router) Start(ctx context.Context) error {
	if err := rt.life.Begin(); errors.Is(err, lifecycle.ErrClosed) {
		return ErrClosed
	} else if err != nil {
		return ErrStarted
	}
	fail := func(err error) error {
		rt.life.Stopped(err)
		return err
	}
	if rt.cfg.Table == nil {
		return fail(ErrNoTable)
	}
	addr := rt.cfg.Listen
	if addr == "" {
		addr = defaultListen
	}
	ln, err := rt.listen(ctx, "tcp", addr)
	if err != nil {
		return fail(fmt.Errorf("listen %s: %w", addr, err))
	}
	rt.mu.Lock()
	rt.ln = ln
	rt.srv = rt.serve(ln)
	rt.mu.Unlock()
	go rt.supervise(ctx)
	rt.logger.Info("router-started", slog.String("addr", ln.Addr().String()))
	return nil
}

// serve serves on ln with a new server, in the background; its failure goes to
// rt.failed. The server is started with a context of its own: the end of Start's
// context closes the router gracefully (supervise), where httpserver would cut.
func (rt *Router) serve(ln net.Listener) *server {
	base, cancel := context.WithCancel(context.Background())
	srv := &server{Server: httpserver.New(&http.Server{
		Handler:           http.HandlerFunc(rt.serveHTTP),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       frontendIdleTimeout,
		ErrorLog:          slog.NewLogLogger(rt.logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnState:         rt.connState,
	}, ln, shutdownGrace), cancelBase: cancel}
	err := srv.Start(context.Background()) // nil: the server is new
	rt.serving.Add(1)
	go func() {
		defer rt.serving.Done()
		if err == nil {
			err = srv.Wait()
		}
		if srv.end.CompareAndSwap(serverServing, serverFailed) {
			select {
			case rt.failed <- err:
			default:
			}
		}
	}()
	return srv
}

// supervise waits for Close, the end of ctx or a failure of the listener, then shuts
// the server down (after a restart under way gives up) and records why it stopped.
func (rt *Router) supervise(ctx context.Context) {
	var failed error
	select {
	case err := <-rt.failed:
		failed = fmt.Errorf("router: serve: %w", err)
		rt.logger.Error("router-failed", slog.Any("err", err))
	case <-rt.life.Stopping():
	case <-ctx.Done():
	}
	rt.mu.Lock()
	close(rt.closing)
	rt.mu.Unlock()
	rt.restarts.Wait()
	rt.mu.Lock()
	srv := rt.srv
	rt.mu.Unlock()
	err := rt.shutdown(srv)
	rt.serving.Wait()
	select {
	case serr := <-rt.failed:
		if failed == nil {
			err = errors.Join(err, fmt.Errorf("router: serve: %w", serr))
		}
	default:
	}
	rt.backends.CloseIdleConnections()
	rt.h2c.CloseIdleConnections()
	rt.logger.Info("router-stopped")
	rt.life.Stopped(errors.Join(failed, err))
}

// Addr returns the address the router listens on, or "" before Start.
func (rt *Router) Addr() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.ln == nil {
		return ""
	}
	return rt.ln.Addr().String()
}

// Wait blocks until the router has stopped serving and returns why: nil after Close or
// the end of Start's context, the serve or shutdown error otherwise.
func (rt *Router) Wait() error { return rt.life.Wait() }

// Run is Start followed by Wait.
func (rt *Router) Run(ctx context.Context) error { return lifecycle.Run(ctx, rt) }

// Close stops accepting connections, lets in-flight requests finish for up
// to 10 s, then cuts what is left. Upgraded connections (WebSocket, chisel
// tunnels) never finish on their own, so they are cut as soon as ordinary
// requests have drained. Close returns once every handler has returned (or
// a further 2 s have passed); an error means the grace ran out. Calling it
// again returns the same result.
func (rt *Router) Close() error { return rt.life.Close() }

// shutdown stops srv: its listener and idle connections close at once, requests in
// flight get shutdownGrace, then upgraded connections are cut. A server that failed
// by itself has said why through rt.failed already.
func (rt *Router) shutdown(srv *server) (err error) {
	closing := srv.end.CompareAndSwap(serverServing, serverClosed)
	stop := make(chan struct{})
	go rt.closeSpareConns(stop)
	serr := srv.Close()
	close(stop)
	srv.cancelBase()
	if serr != nil && closing {
		err = fmt.Errorf("router: shutdown: %w", serr)
	}
	deadline := time.Now().Add(unwindGrace)
	for rt.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := rt.active.Load(); n > 0 {
		rt.logger.Warn("router-closed-with-active-handlers", slog.Int64("handlers", n))
	}
	return err
}

func (rt *Router) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		rt.newConns.Store(c, time.Now())
	case http.StateActive, http.StateHijacked, http.StateClosed:
		if _, ok := rt.newConns.Load(c); ok {
			rt.newConns.Delete(c)
		}
	}
}

// closeSpareConns closes, until stop, connections that have waited longer
// than spareConnAge for a first request.
func (rt *Router) closeSpareConns(stop <-chan struct{}) {
	tick := time.NewTicker(spareConnAge / 5)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		rt.newConns.Range(func(k, v any) bool {
			if time.Since(v.(time.Time)) > spareConnAge {
				rt.newConns.Delete(k)
				_ = k.(net.Conn).Close()
			}
			return true
		})
	}
}
