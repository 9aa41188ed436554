// Package syslogagent is the local foundation's syslog agent: it sends each app's log
// lines — the router's access-log lines for its routes (RTR) and its instances' output
// (APP/PROC/WEB, CELL) — to the syslog drains of the user-provided service instances
// bound to it, in the formats CF's syslog agent uses (package rfc5424): for https://
// (and, locally, http://) drains RFC 5424 messages in POST bodies, and for syslog:// and
// syslog-tls:// drains octet-counted frames over one TCP (TLS) connection. The drain
// URL's user info is sent as basic authentication, as the agent does.
//
// HTTP bodies are batched as the agent's batching writer does (newline-terminated
// messages, up to 1 MiB), flushed every FlushInterval (200 ms here, 3 s in CF's agent,
// so that a local run's last lines arrive within a step's slack). A failed send is
// retried with the shared backoff; each drain's queue is bounded, and lines beyond it
// are dropped and counted, as on a platform whose drain cannot keep up.
package syslogagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// App names an app for the hostname org.space.app.
type App struct{ Org, Space, Name string }

// Config configures an Agent.
type Config struct {
	// Drains returns the drain URLs of every app with one, by app GUID; it is called
	// every Refresh and must be safe for concurrent use.
	Drains func() map[string][]string
	// App names an app (false: unknown; its lines are not sent).
	App func(guid string) (App, bool)
	// Refresh is how often bindings are read again (default 500 ms).
	Refresh time.Duration
	// FlushInterval bounds how long an HTTP batch waits (default 200 ms).
	FlushInterval time.Duration
	// Queue bounds the messages waiting per drain (default 200,000).
	Queue int
	// TLS is for syslog-tls:// and https:// drains (nil: the system's roots).
	TLS *tls.Config
	// Dial connects to a drain's host:port (default: a net.Dialer). The local
	// foundation reaches drains on its apps domain through its router, as CF's DNS
	// does.
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger *slog.Logger
}

// Stats counts what the agent did.
type Stats struct {
	Sent, Dropped, Failed int64
}

// Agent is a lifecycle.Part. Close sends what is queued for up to 5 s.
type Agent struct {
	cfg  Config
	life lifecycle.State

	mu     sync.Mutex
	drains map[string][]*drain // app GUID → its drains
	byURL  map[string]*drain
	hosts  map[string]string // app GUID → org.space.app

	sent, dropped, failed atomic.Int64
	bound                 atomic.Bool // any app has a drain: else Write parses nothing
	wg                    sync.WaitGroup
}

var _ lifecycle.Part = (*Agent)(nil)

// New makes an Agent.
func New(cfg Config) *Agent {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 500 * time.Millisecond
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 200 * time.Millisecond
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 200_000
	}
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{cfg: cfg, drains: map[string][]*drain{}, byURL: map[string]*drain{}, hosts: map[string]string{}}
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	return Stats{Sent: a.sent.Load(), Dropped: a.dropped.Load(), Failed: a.failed.Load()}
}

// Start reads the bindings and keeps them current until the agent stops.
func (a *Agent) Start(ctx context.Context) error {
	if err := a.life.Begin(); err != nil {
		return fmt.Errorf("syslog agent: %w", err)
	}
	a.refresh()
	go func() {
		t := time.NewTicker(a.cfg.Refresh)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				a.refresh()
				continue
			case <-a.life.Stopping():
			case <-ctx.Done():
			}
			break
		}
		a.mu.Lock()
		for _, d := range a.byURL {
			d.stop(ctx.Err() != nil)
		}
		a.byURL, a.drains = map[string]*drain{}, map[string][]*drain{}
		a.bound.Store(false)
		a.mu.Unlock()
		a.wg.Wait()
		a.life.Stopped(nil)
	}()
	return nil
}

// Wait blocks until the agent has stopped.
func (a *Agent) Wait() error { return a.life.Wait() }

// Close stops the agent.
func (a *Agent) Close() error { return a.life.Close() }

// Run is Start and Wait.
func (a *Agent) Run(ctx context.Context) error { return lifecycle.Run(ctx, a) }

// refresh starts drains newly bound and stops those no longer bound.
func (a *Agent) refresh() {
	want := a.cfg.Drains()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byURL == nil {
		return
	}
	drains := map[string][]*drain{}
	used := map[string]bool{}
	for app, urls := range want {
		if _, ok := a.hosts[app]; !ok {
			if m, ok := a.cfg.App(app); ok {
				a.hosts[app] = m.Org + "." + m.Space + "." + m.Name
			}
		}
		for _, u := range urls {
			d := a.byURL[u]
			if d == nil {
				var err error
				if d, err = a.newDrain(u); err != nil {
					a.cfg.Logger.Warn("syslog agent: drain URL refused", "err", err)
					continue
				}
				a.byURL[u] = d
			}
			used[u] = true
			drains[app] = append(drains[app], d)
		}
	}
	for u, d := range a.byURL {
		if !used[u] {
			d.stop(false)
			delete(a.byURL, u)
		}
	}
	a.drains = drains
	a.bound.Store(len(drains) > 0)
}

// Write takes router access-log lines (one or more, newline-terminated), as the
// router's AccessLog writer; it never fails.
func (a *Agent) Write(p []byte) (int, error) {
	if !a.bound.Load() {
		return len(p), nil // the router's hot path: nothing to do without drains
	}
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, err := accesslog.ParseGorouter(line)
		if err != nil || rec.AppID == "" {
			continue
		}
		a.Line(rec.AppID, "RTR", "0", bytes.TrimRight(line, "\r\n"), time.Now())
	}
	return len(p), nil
}

// Line sends one log line of app from sourceType ("RTR", "APP/PROC/WEB", "CELL")
// and instance to the app's drains.
func (a *Agent) Line(app, sourceType, instance string, line []byte, at time.Time) {
	a.mu.Lock()
	ds, host := a.drains[app], a.hosts[app]
	a.mu.Unlock()
	if len(ds) == 0 {
		return
	}
	m := rfc5424.Message{Priority: rfc5424.PriorityOut, Timestamp: at, Hostname: host, AppName: app,
		ProcID: rfc5424.ProcID(sourceType, instance), StructuredData: tags(app, sourceType, instance), Msg: line}
	msg := rfc5424.Append(nil, &m)
	for _, d := range ds {
		if !d.push(msg) {
			a.dropped.Add(1)
		}
	}
}

func tags(app, sourceType, instance string) []byte {
	return []byte(`[tags@47450 app_id="` + app + `" instance_id="` + instance + `" source_id="` + app + `" source_type="` + sourceType + `"]`)
}

// drain is one drain URL's queue and sender.
type drain struct {
	a     *Agent
	u     *url.URL
	queue chan []byte
	quit  chan struct{}
	abort chan struct{}
	once  sync.Once
}

func (a *Agent) newDrain(raw string) (*drain, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, errors.New("not a URL with a host")
	}
	switch u.Scheme {
	case "http", "https", "syslog", "syslog-tls":
	default:
		return nil, fmt.Errorf("scheme %q: want https, http, syslog or syslog-tls", u.Scheme)
	}
	d := &drain{a: a, u: u, queue: make(chan []byte, a.cfg.Queue), quit: make(chan struct{}), abort: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if u.Scheme == "http" || u.Scheme == "https" {
			d.postLoop()
		} else {
			d.streamLoop()
		}
	}()
	return d, nil
}

func (d *drain) push(msg []byte) bool {
	select {
	case d.queue <- msg:
		return true
	default:
		return false
	}
}

// stop ends the sender: after sending what is queued (at most 5 s), or at once.
func (d *drain) stop(now bool) {
	d.once.Do(func() {
		close(d.quit)
		if now {
			close(d.abort)
			return
		}
		go func() {
			select {
			case <-time.After(5 * time.Second):
				close(d.abort)
			case <-d.abort:
			}
		}()
	})
}

// next returns the next queued message; false once stopped and the queue is empty.
func (d *drain) next(wait <-chan time.Time) ([]byte, bool, bool) {
	select {
	case m := <-d.queue:
		return m, true, true
	default:
	}
	select {
	case m := <-d.queue:
		return m, true, true
	case <-wait:
		return nil, false, true
	case <-d.quit:
		select {
		case m := <-d.queue:
			return m, true, true
		default:
			return nil, false, false
		}
	}
}

// retry runs send until it succeeds or the drain is aborted.
func (d *drain) retry(n int, send func() error) {
	b := backoff.Backoff{First: 100 * time.Millisecond, Max: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-d.abort:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		err := send()
		if err == nil {
			d.a.sent.Add(int64(n))
			return
		}
		d.a.cfg.Logger.Debug("syslog agent: send to drain failed; retrying", "host", d.u.Host, "err", err)
		if !b.Wait(ctx) {
			d.a.failed.Add(int64(n))
			return
		}
	}
}

// postLoop sends batches of messages in POST bodies.
func (d *drain) postLoop() {
	target := *d.u
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: d.a.cfg.TLS, MaxConnsPerHost: 5,
		DialContext: d.a.cfg.Dial}}
	defer client.CloseIdleConnections()
	var body []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		d.retry(n, func() error {
			resp, err := client.Post(target.String(), "text/plain", bytes.NewReader(body))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				return fmt.Errorf("drain answered %d", resp.StatusCode)
			}
			return nil
		})
		body, n = body[:0], 0
	}
	t := time.NewTicker(d.a.cfg.FlushInterval)
	defer t.Stop()
	for {
		m, got, more := d.next(t.C)
		if got {
			body = append(body, m...)
			n++
			if len(body) >= 1<<20 {
				flush()
			}
			continue
		}
		flush()
		if !more {
			return
		}
	}
}

// streamLoop sends octet-counted frames over one connection, reconnecting on failure.
func (d *drain) streamLoop() {
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	var buf []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		d.retry(n, func() error {
			if conn == nil {
				c, err := d.dial()
				if err != nil {
					return err
				}
				conn = c
			}
			conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Write(buf); err != nil {
				conn.Close()
				conn = nil
				return err
			}
			return nil
		})
		buf, n = buf[:0], 0
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		m, got, more := d.next(t.C)
		if got {
			buf = rfc5424.AppendFrame(buf, m)
			n++
			if len(buf) >= 256<<10 {
				flush()
			}
			continue
		}
		flush()
		if !more {
			return
		}
	}
}

func (d *drain) dial() (net.Conn, error) {
	host := d.u.Host
	if d.u.Port() == "" {
		host = net.JoinHostPort(d.u.Hostname(), strconv.Itoa(514))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := d.a.cfg.Dial(ctx, "tcp", host)
	if err != nil || d.u.Scheme != "syslog-tls" {
		return conn, err
	}
	cfg := d.a.cfg.TLS.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = d.u.Hostname()
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}
