package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	chserver "github.com/jpillora/chisel/server"
	"github.com/jpillora/chisel/share/ccrypto"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// ServerConfig configures a Server. Every field but KeepAlive and Logger is required.
type ServerConfig struct {
	// Addr is the address to listen on, e.g. "0.0.0.0:"+$PORT on Cloud Foundry.
	Addr string
	// Remote is the one host:port clients may reach: the bound results database.
	Remote string
	// Auth is "user:password", generated per run; the password has at least 16
	// characters (chisel does not throttle guesses).
	Auth string
	// Key is the server's key: chisel's inline "ck-…" form (NewKey) or a seed. A stable
	// key gives a stable fingerprint, which clients pin.
	Key string
	// KeepAlive is the SSH keepalive interval (default 25 s; the router drops idle
	// WebSockets after 15 minutes).
	KeepAlive time.Duration
	// HandshakeTimeout bounds the wait, from a connection's accept, for chisel's first
	// bytes to it: chisel answers the WebSocket upgrade once it has the request's headers,
	// so a client that sends none, or sends them too slowly, is closed (default 10 s;
	// chisel's own HTTP server has no timeouts).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection after a direction of it carried nothing for this
	// long (default 4 KeepAlives, at least 2 min): on an established tunnel chisel pings
	// every KeepAlive and the client answers, so only a silent client, or one that
	// stalled its SSH handshake, goes that long. It is detected within twice the time.
	IdleTimeout time.Duration
	// Logger receives the server's own records and chisel's server lines (failed logins,
	// non-chisel WebSocket clients) at Warn. Nil discards them.
	Logger *slog.Logger
}

// Server is the tunnel app's side: a chisel server that lets one user reach one
// host:port. It follows the lifecycle of package lifecycle. Close (and the end of Start's
// context) drops every tunnel at once, like a crash of the app would; a client reconnects
// to a restarted server with the same key. A listener that fails for good (closed under
// it) stops the server; Wait reports it. Failed accepts (out of file descriptors) are
// logged and retried.
//
// Why a relay: chisel's own Close stops accepting but leaves established tunnels running
// (their WebSockets are hijacked connections the HTTP server no longer tracks), and chisel
// does not take a listener from outside. So the server listens on Addr itself and relays
// each connection (splice(2) on Linux, no copy through user space) to chisel on a private
// loopback port, and Close closes those connections.
//
// Logs: the server's own records go to Logger; chisel's lines about failed logins go to
// Logger at Warn; chisel's per-session lines (open and close with the user name and the
// remotes asked for, channels denied by the ACL) come from loggers chisel forks per
// session and go to the process's standard error. None of them carries a password.
type Server struct {
	cfg         ServerConfig
	log         *slog.Logger
	ch          *chserver.Server
	fingerprint string
	// starting mutes chisel's log while it starts (its start-up lines).
	starting atomic.Bool

	life     lifecycle.State
	mu       sync.Mutex
	closed   bool
	ln       net.Listener
	internal string // chisel's loopback address
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup // accept loop and relays
}

var _ lifecycle.Part = (*Server)(nil)

// NewServer checks cfg and prepares the chisel server. The user is kept in memory, never
// in a file, and chisel's allow-all Auth option is not used.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Addr == "" {
		return nil, errors.New("tunnel server: no listen address")
	}
	if err := checkRemote(cfg.Remote); err != nil {
		return nil, fmt.Errorf("tunnel server: %w", err)
	}
	user, pass, err := splitAuth(cfg.Auth, minPassword)
	if err != nil {
		return nil, fmt.Errorf("tunnel server: %w", err)
	}
	fp, err := KeyFingerprint(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("tunnel server: %w", err)
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 25 * time.Second
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = max(4*cfg.KeepAlive, 2*time.Minute)
	}
	chcfg := &chserver.Config{KeepAlive: cfg.KeepAlive}
	if ccrypto.IsChiselKey([]byte(cfg.Key)) {
		chcfg.KeyFile = cfg.Key // chisel takes an inline ck- key in KeyFile
	} else {
		chcfg.KeySeed = cfg.Key
	}
	ch, err := chserver.NewServer(chcfg)
	if err != nil {
		return nil, errors.New("tunnel server: chisel refused the key") // its message may quote the key file
	}
	// With no user at all chisel lets everyone in: the user goes in before Start.
	if err := ch.AddUser(user, pass, remoteACL(cfg.Remote)); err != nil {
		return nil, fmt.Errorf("tunnel server: %w", err)
	}
	s := &Server{cfg: cfg, log: orDiscard(cfg.Logger), ch: ch, fingerprint: fp, conns: map[net.Conn]struct{}{}}
	// Failed logins are chisel's Info lines. Info is set here, once, before any of its
	// goroutines runs: they read it unsynchronised (each session forks the logger).
	ch.Info = true
	ch.Logger.SetOutput(logWriter{log: s.log, level: slog.LevelWarn, mute: &s.starting})
	return s, nil
}

// Fingerprint is the fingerprint of the server's key, for clients to pin.
func (s *Server) Fingerprint() string { return s.fingerprint }

// Start listens on Addr and serves until ctx ends or Close. It returns once the listener
// is bound. A Server starts once; to restart, make a new one with the same config.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("tunnel server: %w", err)
	}
	fail := func(err error) error {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.life.Stopped(err)
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	// chisel prints its start-up lines (fingerprint, the private address) through its
	// top-level logger: drop them, then let it report failed logins.
	s.starting.Store(true)
	var err error
	for range 5 { // chisel cannot report the port it got: pick one; retry if taken meanwhile
		var port int
		if port, err = freeport.Loopback(); err != nil {
			break
		}
		s.internal = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.ch.StartContext(ctx, "127.0.0.1", strconv.Itoa(port)); err == nil {
			break
		}
	}
	if err != nil {
		stop()
		return fail(fmt.Errorf("tunnel server: start chisel: %w", err))
	}
	s.starting.Store(false)
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		stop()
		s.ch.Close()
		s.ch.Wait()
		return fail(fmt.Errorf("tunnel server: %w", err))
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	failed := make(chan error, 1)
	s.wg.Add(1)
	go s.accept(ctx, ln, failed)
	go s.supervise(ctx, stop, failed)
	s.log.Info("tunnel server listening", "addr", ln.Addr().String(), "remote", s.cfg.Remote, "fingerprint", s.fingerprint)
	return nil
}

// supervise waits for Close, the end of ctx or a failed listener, then drops every
// tunnel and records why the server stopped.
func (s *Server) supervise(ctx context.Context, stop context.CancelFunc, failed <-chan error) {
	var failure error
	select {
	case <-s.life.Stopping():
	case <-ctx.Done():
	case failure = <-failed:
		s.log.Error("tunnel server: listener failed; stopping", "err", failure)
	}
	s.mu.Lock()
	s.closed = true
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	stop()
	// chisel drains on the end of its context; Close cuts what is left. Its error
	// repeats what Wait reports.
	_ = s.ch.Close()
	s.wg.Wait()
	var err error
	if werr := s.ch.Wait(); werr != nil && !errors.Is(werr, context.Canceled) {
		err = fmt.Errorf("tunnel server: stop chisel: %w", werr)
	}
	s.life.Stopped(errors.Join(failure, err))
}

// Addr is the address the server listens on (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Server) accept(ctx context.Context, ln net.Listener, failed chan<- error) {
	defer s.wg.Done()
	// Out of file descriptors and the like: wait and go on, as net/http does; any other
	// failure (closed, or shut down under it) is for good.
	retry := backoff.Backoff{First: 5 * time.Millisecond, Max: time.Second}
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return
			}
			if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Temporary() {
				failed <- fmt.Errorf("tunnel server: accept: %w", err)
				return
			}
			delay := retry.Next()
			s.log.Warn("tunnel server: accept failed; retrying", "err", err, "retry_in", delay)
			if !wait.For(ctx, delay) {
				return
			}
			continue
		}
		retry.Reset()
		s.wg.Add(1)
		go s.relay(c)
	}
}

// relay joins an accepted connection with one to chisel until either side ends.
func (s *Server) relay(c net.Conn) {
	defer s.wg.Done()
	up, err := net.Dial("tcp", s.internal)
	if err != nil {
		c.Close()
		if !s.isClosed() {
			s.log.Warn("tunnel server: reach chisel", "err", err)
		}
		return
	}
	if !s.track(c, up) {
		c.Close()
		up.Close()
		return
	}
	defer s.untrack(c, up)
	start := time.Now()
	s.log.Debug("tunnel connection opened", "client", c.RemoteAddr().String())
	var in int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		in, _ = copyUntilIdle(up, c, s.cfg.IdleTimeout, s.cfg.IdleTimeout)
		up.Close()
		c.Close()
	}()
	out, _ := copyUntilIdle(c, up, s.cfg.HandshakeTimeout, s.cfg.IdleTimeout)
	c.Close()
	up.Close()
	<-done
	s.log.Debug("tunnel connection closed", "client", c.RemoteAddr().String(), "duration", time.Since(start).Round(time.Millisecond),
		"bytes_in", in, "bytes_out", out)
}

// copyUntilIdle copies src to dst until src ends, fails, or carries nothing for a
// window: the first window is first long, the next ones idle. The deadline is set per
// window rather than per read so that io.Copy keeps splicing; a read that times out has
// taken no bytes, so copying goes on from where it stopped.
func copyUntilIdle(dst, src net.Conn, first, idle time.Duration) (int64, error) {
	var total int64
	for window := first; ; window = idle {
		if err := src.SetReadDeadline(time.Now().Add(window)); err != nil {
			return total, err
		}
		n, err := io.Copy(dst, src)
		total += n
		var ne net.Error
		if err == nil || !errors.As(err, &ne) || !ne.Timeout() || n == 0 {
			return total, err
		}
	}
}

func (s *Server) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for _, c := range cs {
		s.conns[c] = struct{}{}
	}
	return true
}

func (s *Server) untrack(cs ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		delete(s.conns, c)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops listening, drops every tunnel and waits until every connection is gone.
// It is safe to call more than once and from any goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true // no relay starts from here on, even before Start's listener is set
	s.mu.Unlock()
	return s.life.Close()
}

// Wait blocks until the server has stopped (after Close, the end of Start's context or
// a failed listener) and every connection is gone.
func (s *Server) Wait() error { return s.life.Wait() }

// Run is Start followed by Wait.
func (s *Server) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }
