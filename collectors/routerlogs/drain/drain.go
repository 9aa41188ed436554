// Package drain is a syslog drain for one benchmark run: Cloud Foundry's syslog agent
// sends it every log line of the apps the drain is bound to, and it keeps the router's
// access-log lines (source RTR) of the run's requests as router_requests rows, as they
// arrive, with no log store, quota or pull in between.
//
// It takes the agent's two transports: HTTPS (an https:// drain URL: one RFC 5424
// message per POST body, or several from the agent's batching writer) and syslog over
// mutual TLS (a syslog-tls:// URL: RFC 6587 octet counting). An HTTP request must carry
// the run's credentials, which the agent sends as basic authentication from the drain
// URL's user info (https://USER:PASSWORD@host/); anything else is refused (401) before
// its body is read, its connection closed, and counted.
//
// Syslog carries no credentials: CF's syslog agent sends nothing of the drain URL's user
// info on a syslog:// or syslog-tls:// connection, and what a frame holds (the app's GUID
// as app-name, org.space.app as hostname, the app's tags) is known to anyone who can see
// the app, so a frame that names one of the run's apps proves nothing. The one credential
// the agent offers there is a client certificate: for a syslog-tls:// drain whose
// user-provided service has "cert" and "key" credentials (CAPI 1.143 and later) it
// presents them in the TLS handshake. So the syslog listener takes only TLS connections
// whose client certificate the run's CA signed (Config.TLS with
// tls.RequireAndVerifyClientCert); plain syslog:// is not offered, and a connection
// without such a certificate is closed before any of its frames is read, and counted.
//
// Neither transport can be held by a client: HTTP requests have header, body, write and
// idle deadlines (package httplimit); a syslog connection must finish its handshake and
// its first frame within Config.SyslogFirstFrame and send each next frame within
// Config.SyslogIdle, and when Config.MaxConns are open the oldest connection that has
// not yet shown a certificate is closed to make room, so silent clients cannot lock the
// agent out.
//
// Every message is checked before its line is: a message whose app-name (the app's
// GUID) is not one of the run's apps is refused and counted, and so is an RTR line
// whose app_id is not the message's app. Of the run's apps' messages, other sources'
// (the apps' own output, staging, cells) are counted, router lines that do not parse
// are counted, and those without a trace id of the run (other clients) are counted;
// the rest are stored. A frame or message that does not parse is counted by reason
// (rfc5424's Field*/Reason* names, and "body-size" for an HTTP body over the limit),
// never fatal.
//
// Memory is bounded: rows wait in a buffer of Config.MaxBuffered while the results
// database is slow or away (the writer retries with the shared backoff); beyond it
// new rows are dropped and counted. The counters are stored with the rows, in the
// run's router_log_pulls row for source "drain".
package drain

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Store is where the drain keeps router requests: *resultsdb.Store. StoreRouterBatch
// is called from one goroutine at a time; an error is transient (the batch is tried
// again). LogPull reads the totals a previous receiver of the run left (nil: none).
type Store interface {
	StoreRouterBatch(ctx context.Context, p *resultsdb.LogPull, rows []resultsdb.RouterRequest) error
	LogPull(ctx context.Context, runID, source string) (*resultsdb.LogPull, error)
}

var _ Store = (*resultsdb.Store)(nil)

// Source names the drain's rows in router_log_pulls.
const Source = "drain"

// Config configures a Receiver.
type Config struct {
	// HTTPAddr is where HTTP drain requests are taken ("" for none). On Cloud Foundry
	// it is $PORT: the router terminates TLS in front of it.
	HTTPAddr string
	// SyslogAddr is where syslog over mutual TLS is taken ("" for none). TLS must then
	// require and verify client certificates (ClientAuth tls.RequireAndVerifyClientCert,
	// ClientCAs the run's CA): see the package comment.
	SyslogAddr string
	TLS        *tls.Config
	// User and Password are the run's credentials HTTP requests must carry.
	User, Password string
	// RunID and TraceTag are the run's; Apps its apps, GUID to name.
	RunID    string
	TraceTag uint32
	Apps     map[string]string
	Store    Store
	// MaxBuffered bounds the rows waiting for the database (default 250,000, about
	// 20 s of a busy router and 50 MB).
	MaxBuffered int
	// MaxBody bounds an HTTP body (default 4 MiB: the agent batches up to 1 MiB). A
	// longer one is refused (413) having read no more than this.
	MaxBody int
	// Timeouts are the HTTP server's (package httplimit; the defaults when zero).
	Timeouts httplimit.Timeouts
	// MaxConns bounds concurrent syslog connections (default 64).
	MaxConns int
	// SyslogFirstFrame bounds a syslog connection's TLS handshake and first frame
	// (default 10 s: the agent dials when it has a message to send); SyslogIdle the wait
	// for each next frame (default 5 min: a closed connection costs the agent a dial, and
	// may cost it the message it was writing when it found out).
	SyslogFirstFrame, SyslogIdle time.Duration
	// Grace is how long Close goes on trying to store what is buffered (default 10 s,
	// CF's grace before SIGKILL).
	Grace  time.Duration
	Logger *slog.Logger
}

func (c *Config) check() error {
	switch {
	case c.HTTPAddr == "" && c.SyslogAddr == "":
		return errors.New("drain: no address to listen on")
	case c.HTTPAddr != "" && (c.User == "" || len(c.Password) < 16):
		return errors.New("drain: HTTP needs the run's credentials: a user and a password of at least 16 characters")
	case c.RunID == "":
		return errors.New("drain: no run")
	case len(c.Apps) == 0:
		return errors.New("drain: no apps: the run's apps are the only ones whose lines are taken")
	case c.Store == nil:
		return errors.New("drain: no store")
	case c.SyslogAddr != "" && (c.TLS == nil || c.TLS.ClientAuth != tls.RequireAndVerifyClientCert || c.TLS.ClientCAs == nil):
		return errors.New("drain: syslog needs mutual TLS (a server certificate, and client certificates required and verified against the run's CA): " +
			"plain syslog carries no credentials, so its frames could come from anyone")
	}
	if c.MaxBuffered <= 0 {
		c.MaxBuffered = 250_000
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 4 << 20
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 64
	}
	if c.SyslogFirstFrame <= 0 {
		c.SyslogFirstFrame = 10 * time.Second
	}
	if c.SyslogIdle <= 0 {
		c.SyslogIdle = 5 * time.Minute
	}
	c.Timeouts = c.Timeouts.WithDefaults()
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// ErrUnstored is returned (wrapped) by Wait when rows were still buffered when the
// receiver stopped and could not be stored within the grace.
var ErrUnstored = errors.New("drain: router requests left unstored")

func unstored(n int) error { return fmt.Errorf("%w: %d", ErrUnstored, n) }

// RunApps reads what a receiver for runID needs from the results database: the run's
// trace tag and its variants' apps (GUID to name). appsJSON, when not empty, gives the
// apps instead, as a JSON object of GUID to name: a run pushes its drain before it
// records its variants, one as each starts.
func RunApps(ctx context.Context, s *resultsdb.Store, runID, appsJSON string) (uint32, map[string]string, error) {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return 0, nil, fmt.Errorf("drain: %w", err)
	}
	apps := map[string]string{}
	if appsJSON != "" {
		if err := json.Unmarshal([]byte(appsJSON), &apps); err != nil {
			return 0, nil, fmt.Errorf("drain: the run's apps: want a JSON object of app GUID to name: %w", err)
		}
	} else {
		vs, err := s.RunVariants(ctx, runID)
		if err != nil {
			return 0, nil, fmt.Errorf("drain: %w", err)
		}
		for _, v := range vs {
			if v.AppGUID != "" {
				apps[v.AppGUID] = v.AppName
			}
		}
	}
	if len(apps) == 0 {
		return 0, nil, fmt.Errorf("drain: run %s has no pushed apps to take lines of", runID)
	}
	return run.TraceTag, apps, nil
}
