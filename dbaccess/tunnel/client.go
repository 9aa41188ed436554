package tunnel

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	chclient "github.com/jpillora/chisel/client"
	chshare "github.com/jpillora/chisel/share"
	"github.com/jpillora/chisel/share/ccrypto"
	"github.com/jpillora/chisel/share/cnet"
	"github.com/jpillora/chisel/share/settings"
	"golang.org/x/crypto/ssh"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// ClientConfig configures a Client. Server, Auth, Fingerprint and Remote are required.
type ClientConfig struct {
	// Server is the tunnel app's URL: https://cfbench-tunnel.apps.example.com, or
	// http://127.0.0.1:PORT (ws:// and wss:// work too). It must not carry credentials.
	Server string
	// Host, when set, is sent as the Host header instead of the URL's host: it reaches
	// the tunnel app through a router by its route (e.g. the local foundation's router
	// with Host cfbench-tunnel.apps.localhost).
	Host string
	// Auth is "user:password", as given to the server.
	Auth string
	// Fingerprint is the server key's fingerprint (base64 SHA-256, 44 characters), as
	// Server.Fingerprint or KeyFingerprint gives it. A server with another key is refused.
	Fingerprint string
	// Remote is the host:port the server forwards to, as the server sees it: the results
	// database's host and port from its binding.
	Remote string
	// KeepAlive is the SSH keepalive interval (default 25 s).
	KeepAlive time.Duration
	// MinRetry and MaxRetry bound the backoff between reconnection attempts after the
	// tunnel drops (defaults 250 ms and 10 s). The client retries for ever, until Close.
	MinRetry, MaxRetry time.Duration
	// Timeout bounds Start: the first handshake and the wait for the tunnel (default 30 s).
	Timeout time.Duration
	// Logger receives chisel's client lines (connecting, connected, retrying) at Info.
	// Nil discards them.
	Logger *slog.Logger
}

// Client is the CLI's side of the tunnel: a local listener on 127.0.0.1 whose every
// connection goes through the tunnel to Remote. It follows the lifecycle of package
// lifecycle; Start fails fast on a wrong fingerprint, credentials or remote, and Close (or
// the end of Start's context) also aborts a Start in progress. While running it
// reconnects by itself, with backoff, when the tunnel drops; a connection accepted
// meanwhile waits for the tunnel (up to chisel's SSH_WAIT, 35 s) before it fails.
//
// chisel's client logs through loggers it forks before this package can configure them:
// its proxy prints one "Listening" line (and "Stream error" lines when a channel fails)
// to the process's standard error. Those lines name the local and remote addresses,
// never credentials.
type Client struct {
	cfg        ClientConfig
	user, pass string
	httpURL    string // for chisel's client, which wants http(s)
	wsURL      string // for the first handshake
	headers    http.Header
	log        *slog.Logger

	life  lifecycle.State
	mu    sync.Mutex
	local string
}

var _ lifecycle.Part = (*Client)(nil)

// NewClient checks cfg. Errors never quote the credentials.
func NewClient(cfg ClientConfig) (*Client, error) {
	user, pass, err := splitAuth(cfg.Auth, 1)
	if err != nil {
		return nil, fmt.Errorf("tunnel client: %w", err)
	}
	if raw, err := base64.StdEncoding.DecodeString(cfg.Fingerprint); err != nil || len(raw) != 32 {
		return nil, errors.New("tunnel client: the fingerprint must be the server key's base64 SHA-256 (44 characters, as the tunnel app logs it)")
	}
	if err := checkRemote(cfg.Remote); err != nil {
		return nil, fmt.Errorf("tunnel client: %w", err)
	}
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Host == "" {
		return nil, errors.New("tunnel client: the server must be a URL like https://cfbench-tunnel.apps.example.com")
	}
	if u.User != nil {
		return nil, errors.New("tunnel client: the server URL must not carry credentials (give them as the tunnel auth)")
	}
	var secure bool
	switch u.Scheme {
	case "http", "ws":
	case "https", "wss":
		secure = true
	default:
		return nil, fmt.Errorf("tunnel client: server URL scheme %q: want http or https", u.Scheme)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), map[bool]string{false: "80", true: "443"}[secure])
	}
	hu, wu := *u, *u
	hu.Scheme, wu.Scheme = map[bool]string{false: "http", true: "https"}[secure], map[bool]string{false: "ws", true: "wss"}[secure]
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 25 * time.Second
	}
	if cfg.MinRetry <= 0 {
		cfg.MinRetry = 250 * time.Millisecond
	}
	if cfg.MaxRetry < cfg.MinRetry {
		cfg.MaxRetry = max(cfg.MinRetry, 10*time.Second)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	h := http.Header{}
	if cfg.Host != "" {
		// gorilla/websocket, which chisel dials with, sends a "Host" entry as the
		// request's Host rather than as a header line.
		h.Set("Host", cfg.Host)
	}
	return &Client{cfg: cfg, user: user, pass: pass, httpURL: hu.String(), wsURL: wu.String(), headers: h, log: orDiscard(cfg.Logger)}, nil
}

// Start checks the server with one handshake — its key against the fingerprint, the
// credentials, and that it allows Remote — then opens the local listener and starts
// chisel's client, and returns once the tunnel is up. It returns ErrFingerprint, ErrAuth
// or ErrDenied (wrapped) when the server refuses; then nothing keeps running.
func (c *Client) Start(ctx context.Context) error {
	if err := c.life.Begin(); err != nil {
		return fmt.Errorf("tunnel client: %w", err)
	}
	// run ends with Close, with ctx, or with a failed start: Close aborts a Start too.
	run, stop := context.WithCancel(ctx)
	stopping := c.life.Stopping()
	go func() {
		select {
		case <-stopping:
			stop()
		case <-run.Done():
		}
	}()
	ch, err := c.start(run)
	if err != nil {
		stop()
		select {
		case <-stopping: // Close came during Start: the client stopped as asked
			c.life.Stopped(nil)
			return fmt.Errorf("tunnel client: %w", lifecycle.ErrClosed)
		default:
		}
		c.life.Stopped(err)
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- ch.Wait() }()
	go func() {
		var werr, err error
		select {
		case <-run.Done():
			ch.Close()
			werr = <-waited
		case werr = <-waited:
		}
		// chisel runs on run: when Close or ctx ends run, chisel ends too, and both
		// cases above may be ready at once (select then picks either). So run says why
		// it ended, not which case came first.
		switch {
		case run.Err() != nil:
			if werr != nil && !errors.Is(werr, context.Canceled) {
				err = fmt.Errorf("tunnel client: stop: %w", werr)
			}
		case werr != nil: // chisel retries for ever: it ended on a failure of its own
			err = fmt.Errorf("tunnel client: chisel client stopped: %w", werr)
		default:
			err = errors.New("tunnel client: chisel client stopped")
		}
		stop()
		c.life.Stopped(err)
	}()
	return nil
}

// start does the work of Start on ctx, which Close cancels.
func (c *Client) start(ctx context.Context) (*chclient.Client, error) {
	if err := c.handshake(ctx); err != nil {
		return nil, err
	}
	port, err := freeport.Loopback()
	if err != nil {
		return nil, fmt.Errorf("tunnel client: %w", err)
	}
	local := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ch, err := chclient.NewClient(&chclient.Config{
		Server:           c.httpURL,
		Auth:             c.cfg.Auth,
		Fingerprint:      c.cfg.Fingerprint,
		KeepAlive:        c.cfg.KeepAlive,
		MaxRetryCount:    -1,
		MinRetryInterval: c.cfg.MinRetry,
		MaxRetryInterval: c.cfg.MaxRetry,
		Remotes:          []string{local + ":" + c.cfg.Remote},
		Headers:          c.headers,
	})
	if err != nil {
		return nil, fmt.Errorf("tunnel client: %w", err)
	}
	ch.Logger.SetOutput(logWriter{log: c.log, level: slog.LevelInfo})
	if err := ch.Start(ctx); err != nil {
		return nil, fmt.Errorf("tunnel client: %w", err)
	}
	ready, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if !ch.Ready(ready) {
		ch.Close()
		ch.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("tunnel client: no tunnel to %s within %s", c.httpURL, c.cfg.Timeout)
	}
	if err := awaitListener(ready, local); err != nil {
		ch.Close()
		ch.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("tunnel client: the local end %s did not listen within %s", local, c.cfg.Timeout)
	}
	c.mu.Lock()
	c.local = local
	c.mu.Unlock()
	return ch, nil
}

// awaitListener returns once addr accepts a connection, or ctx's error. chisel binds a
// tunnel's local listener in a goroutine of its own, which a loaded machine may run
// after the tunnel is Ready: without this wait a caller's first dial could be refused.
// The probe sends nothing and closes: the remote end sees a connection without a byte,
// which Postgres closes without a log line.
func awaitListener(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// handshake does what chisel's client does on connecting, once, to tell a permanent
// refusal from a transient failure (chisel's client would retry for ever).
func (c *Client) handshake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	d := websocket.Dialer{HandshakeTimeout: c.cfg.Timeout, Subprotocols: []string{chshare.ProtocolVersion}}
	ws, resp, err := d.DialContext(ctx, c.wsURL, c.headers)
	if err != nil {
		if resp != nil {
			return fmt.Errorf("tunnel client: %s answered HTTP %d, not a tunnel (wrong URL or Host?)", c.httpURL, resp.StatusCode)
		}
		return fmt.Errorf("tunnel client: reach %s: %w", c.httpURL, err)
	}
	conn := cnet.NewWebSocketConn(ws)
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var keyOK bool
	var got string
	sc, chans, reqs, err := ssh.NewClientConn(conn, "", &ssh.ClientConfig{
		User:          c.user,
		Auth:          []ssh.AuthMethod{ssh.Password(c.pass)},
		ClientVersion: "SSH-" + chshare.ProtocolVersion + "-client",
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			got = ccrypto.FingerprintKey(key)
			if subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.Fingerprint)) != 1 {
				return ErrFingerprint
			}
			keyOK = true
			return nil
		},
	})
	switch {
	case err != nil && errors.Is(err, ErrFingerprint):
		return fmt.Errorf("tunnel client: %w (the server's is %s)", ErrFingerprint, got)
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("tunnel client: handshake with %s: %w", c.httpURL, ctx.Err())
	case err != nil && keyOK:
		return fmt.Errorf("tunnel client: %w", ErrAuth)
	case err != nil:
		return fmt.Errorf("tunnel client: handshake with %s: %w", c.httpURL, err)
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	go func() {
		for ch := range chans {
			ch.Reject(ssh.Prohibited, "")
		}
	}()
	r, err := settings.DecodeRemote(c.cfg.Remote)
	if err != nil {
		return fmt.Errorf("tunnel client: remote: %w", err)
	}
	ok, reply, err := sc.SendRequest("config", true, settings.EncodeConfig(settings.Config{Version: chshare.BuildVersion, Remotes: settings.Remotes{r}}))
	if err != nil {
		return fmt.Errorf("tunnel client: handshake with %s: %w", c.httpURL, err)
	}
	if !ok {
		return fmt.Errorf("tunnel client: %w: %s (%s)", ErrDenied, c.cfg.Remote, strings.TrimSpace(string(reply)))
	}
	return nil
}

// LocalAddr is the local listener's address, 127.0.0.1:PORT ("" before Start).
func (c *Client) LocalAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local
}

// DSN rewrites a postgres:// URL (the database as the tunnel app sees it) to reach it
// through the tunnel: its host and port become the local listener's, and host, hostaddr
// and port parameters that would override them are dropped. Errors never quote the URL.
// TLS to the database still works end to end, except sslmode=verify-full, which checks
// the name 127.0.0.1 against the server's certificate.
func (c *Client) DSN(base string) (string, error) {
	local := c.LocalAddr()
	if local == "" {
		return "", errors.New("tunnel client: not started")
	}
	u, err := parseDSN(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if q.Has("host") || q.Has("hostaddr") || q.Has("port") {
		q.Del("host")
		q.Del("hostaddr")
		q.Del("port")
		u.RawQuery = q.Encode()
	}
	u.Host = local
	return u.String(), nil
}

// DBRemote is the host:port of a postgres:// URL (port 5432 when it names none): the
// remote a tunnel to that database forwards to. Errors never quote the URL.
func DBRemote(dsn string) (string, error) {
	u, err := parseDSN(dsn)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	remote := net.JoinHostPort(u.Hostname(), port)
	if err := checkRemote(remote); err != nil {
		return "", errors.New("results db URL: malformed host or port")
	}
	return remote, nil
}

func parseDSN(dsn string) (*url.URL, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Hostname() == "" {
		return nil, errors.New("results db: want a postgres://user:password@host:port/db URL")
	}
	if strings.Contains(u.Host, ",") {
		return nil, errors.New("results db: a tunnel reaches one host; the URL names several")
	}
	return u, nil
}

// Close stops the client and its listener, or aborts a Start in progress, and waits
// until they are gone. It is safe to call more than once.
func (c *Client) Close() error { return c.life.Close() }

// Wait blocks until the client has stopped: nil after Close or the end of Start's
// context, else why chisel's client ended.
func (c *Client) Wait() error { return c.life.Wait() }

// Run is Start followed by Wait.
func (c *Client) Run(ctx context.Context) error { return lifecycle.Run(ctx, c) }
