// Package logship ships the local foundation's router access log to Elasticsearch in
// the shape Cloud Foundry's Logstash pipeline (logsearch-for-cloudfoundry) gives RTR
// log messages: @timestamp, @type LogMessage, @source.type RTR, @cf.* app metadata and
// the parsed rtr.* fields, leftovers under rtr.extra.*.
//
// A Shipper is an io.Writer the router's access log can be tee'd into. Write never
// waits for the network: lines are buffered (up to Config.MaxBuffered, beyond which
// they are dropped and counted) and a background goroutine parses them, applies the
// optional quota (documents per window, lines beyond it dropped and counted, as hosted
// logging does) and sends them with the bulk API, retrying with backoff on 429, 5xx
// and connection errors. Stats says what became of every line.
package logship

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// AppInfo is what the pipeline knows about an app from the firehose envelope.
type AppInfo struct {
	Name, SpaceName, SpaceGUID, OrgName, OrgGUID string
}

// AppLookup resolves an app GUID to its metadata for the @cf.* fields. App is called
// from the Shipper's goroutine, one call at a time, once per document; it should answer
// from memory. ok is false for an unknown app (the document then has @cf.app_id only).
type AppLookup interface {
	App(appGUID string) (info AppInfo, ok bool)
}

// DefaultIndex is logsearch-for-cloudfoundry's app index without the org and space
// parts (which %{[@cf][org]}-%{[@cf][space]} would add).
const DefaultIndex = "logs-app-%{+YYYY.MM.dd}"

// Config configures a Shipper. Only URL is required.
type Config struct {
	// URL is Elasticsearch's base URL, e.g. http://127.0.0.1:9200.
	URL string
	// Index names the target index: a fixed name or a pattern with %{+YYYY.MM.dd},
	// %{[@cf][org]}, %{[@cf][space]} (Logstash style) or a bare YYYY.MM.dd suffix
	// (logstash-YYYY.MM.dd). Default DefaultIndex.
	Index string
	// Apps fills @cf.app, space and org; nil leaves @cf.app_id alone.
	Apps AppLookup
	// Quota is the most documents accepted per QuotaWindow (windows aligned to the
	// clock, like hourly plan quotas); lines beyond it are dropped and counted. 0 means
	// no quota. QuotaWindow defaults to an hour.
	Quota       int
	QuotaWindow time.Duration
	// FlushEvery is the longest a line waits before it is sent (default 1 s);
	// BatchSize the most documents per bulk request (default 500).
	FlushEvery time.Duration
	BatchSize  int
	// MaxBuffered bounds the lines held in memory, waiting or being retried (default
	// 10,000); lines beyond it are dropped and counted.
	MaxBuffered int
	// MaxAttempts is how often one bulk request is tried before its documents count
	// as failed (default 8); RetryBackoff the first wait between attempts (default
	// 250 ms), doubling up to 10 s, with jitter.
	MaxAttempts  int
	RetryBackoff time.Duration
	// RequestTimeout bounds one bulk request (default 30 s); a request that times out
	// is tried again like a 503.
	RequestTimeout time.Duration
	// FlushTimeout bounds how long Close keeps trying to send what is buffered, a
	// request in flight included (default 30 s); what is left then counts as failed.
	FlushTimeout time.Duration
	// IncludeNoApp ships lines without an app id (unknown routes, 404s). Gorouter
	// sends only lines with an app id to the app-log stream, so by default they are
	// skipped and counted in Stats.NoApp.
	IncludeNoApp bool
	// NoTemplate skips installing the index template that maps fields as the
	// pipeline's templates do.
	NoTemplate bool
	// Transport is the HTTP transport to Elasticsearch; nil for one of the shipper's
	// own, whose idle connections it closes when it stops.
	Transport http.RoundTripper
	// Clock gives the write time of lines, which decides their quota window; nil is
	// time.Now.
	Clock func() time.Time
	// Logger receives failures (structured); nil discards.
	Logger *slog.Logger
}

// Stats counts what became of the lines written so far. Received = Shipped +
// DroppedQuota + DroppedBuffer + Failed + Unparseable + NoApp + Buffered.
type Stats struct {
	Received      int64 // lines written
	Shipped       int64 // documents Elasticsearch accepted
	DroppedQuota  int64 // lines over the quota of their window
	DroppedBuffer int64 // lines that found the buffer full, came after Close, or were written to a shipper closed before Start
	Failed        int64 // documents given up on after retries, or rejected
	Unparseable   int64 // lines that are not gorouter access-log lines
	NoApp         int64 // lines without an app id, skipped (see Config.IncludeNoApp)
	Buffered      int64 // lines held now, waiting or being retried
	Retries       int64 // bulk requests (or items) tried again
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("logship: shipper closed")

// Shipper ships access-log lines to Elasticsearch. It follows the lifecycle of package
// lifecycle; Write and Stats may be called from any goroutine, before Start too. Failed
// requests are retried with backoff and counted; they never stop the shipper.
type Shipper struct {
	cfg    Config
	es     *elastictransport.Client
	esErr  error
	logger *slog.Logger
	idBase string
	seq    uint64

	mu      sync.Mutex
	buf     []byte     // waiting lines, back to back
	lines   []lineSpan // their spans in buf
	closed  bool
	started bool
	stopAt  time.Time // when Close was called

	own  *http.Transport // the transport when Config.Transport is nil
	kick chan struct{}
	stop <-chan struct{} // life.Stopping()
	life lifecycle.State

	// Owned by the shipping goroutine.
	batch        []item
	templateDone bool
	quota        Quota

	received, shipped, droppedQuota, droppedBuffer, failed, unparseable, noApp, buffered, retries atomic.Int64
}

type lineSpan struct {
	start, end int
	at         time.Time
}

// item is one encoded bulk action and document.
type item struct{ body []byte }

var (
	_ io.Writer      = (*Shipper)(nil)
	_ lifecycle.Part = (*Shipper)(nil)
)

// New returns a Shipper for cfg with defaults filled in. It does not contact
// Elasticsearch; a URL the client cannot use makes every document fail (and is
// logged).
func New(cfg Config) *Shipper {
	if cfg.Index == "" {
		cfg.Index = DefaultIndex
	}
	if cfg.QuotaWindow <= 0 {
		cfg.QuotaWindow = time.Hour
	}
	if cfg.FlushEvery <= 0 {
		cfg.FlushEvery = time.Second
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = 10_000
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 250 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = 30 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Shipper{cfg: cfg, logger: cfg.Logger, kick: make(chan struct{}, 1), quota: Quota{Limit: cfg.Quota, Window: cfg.QuotaWindow}}
	s.stop = s.life.Stopping()
	var r [6]byte
	_, _ = crand.Read(r[:])
	s.idBase = hex.EncodeToString(r[:])
	if cfg.Transport == nil {
		s.own = http.DefaultTransport.(*http.Transport).Clone()
		cfg.Transport = s.own
	}
	s.es, s.esErr = newTransport(cfg.URL, cfg.Transport)
	return s
}

// Start ships in the background until Close, or until ctx ends (then, as on Close,
// what is buffered is sent within FlushTimeout). It fails only when the shipper was
// started or closed before.
func (s *Shipper) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("logship: %w", err)
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go func() {
		s.run(ctx)
		if s.own != nil {
			s.own.CloseIdleConnections()
		}
		s.life.Stopped(nil)
	}()
	return nil
}

// Wait blocks until the shipping goroutine has ended (after Close, or after Start's
// context ended and the buffer was flushed). It returns nil: lines that could not be
// sent are counted in Stats, not returned.
func (s *Shipper) Wait() error { return s.life.Wait() }

// Run is Start followed by Wait.
func (s *Shipper) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }

// Close stops accepting lines, sends what is buffered (for up to FlushTimeout) and
// waits for that. Lines it could not send count as failed. A shipper closed before
// Start sends nothing: the lines written to it count as dropped.
func (s *Shipper) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.stopAt.IsZero() {
		s.stopAt = time.Now()
	}
	s.mu.Unlock()
	err := s.life.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started && len(s.lines) > 0 {
		n := int64(len(s.lines))
		s.buf, s.lines = nil, nil
		s.buffered.Add(-n)
		s.droppedBuffer.Add(n)
	}
	return err
}

// Write takes one or more complete access-log lines (a final line without a newline
// counts as complete). It copies them and returns at once; it never blocks on
// Elasticsearch. After Close it returns ErrClosed.
func (s *Shipper) Write(p []byte) (int, error) {
	at := s.cfg.Clock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		n := int64(countLines(p))
		s.received.Add(n)
		s.droppedBuffer.Add(n)
		return 0, ErrClosed
	}
	var n, dropped int64
	for rest := p; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		if s.buffered.Load() >= int64(s.cfg.MaxBuffered) {
			dropped++
			continue
		}
		s.buffered.Add(1)
		start := len(s.buf)
		s.buf = append(s.buf, line...)
		s.lines = append(s.lines, lineSpan{start, len(s.buf), at})
	}
	full := len(s.lines) >= s.cfg.BatchSize
	s.mu.Unlock()
	s.received.Add(n)
	s.droppedBuffer.Add(dropped)
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func countLines(p []byte) int {
	n := 0
	for _, l := range bytes.Split(p, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// Stats returns the counters so far.
func (s *Shipper) Stats() Stats {
	return Stats{
		Received: s.received.Load(), Shipped: s.shipped.Load(),
		DroppedQuota: s.droppedQuota.Load(), DroppedBuffer: s.droppedBuffer.Load(),
		Failed: s.failed.Load(), Unparseable: s.unparseable.Load(), NoApp: s.noApp.Load(),
		Buffered: s.buffered.Load(), Retries: s.retries.Load(),
	}
}

func (s *Shipper) run(ctx context.Context) {
	// A request in flight when Close comes may go on until FlushTimeout, no longer.
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
		case <-sendCtx.Done():
			return
		}
		t := time.NewTimer(s.cfg.FlushTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-sendCtx.Done():
		}
	}()
	ticker := time.NewTicker(s.cfg.FlushEvery)
	defer ticker.Stop()
	for {
		tick := false
		select {
		case <-ctx.Done():
			s.drain(time.Now().Add(s.cfg.FlushTimeout))
			return
		case <-s.stop:
			s.drain(s.stopAt.Add(s.cfg.FlushTimeout))
			return
		case <-ticker.C:
			tick = true
		case <-s.kick:
		}
		s.take()
		for len(s.batch) >= s.cfg.BatchSize || tick && len(s.batch) > 0 {
			if !s.send(sendCtx, s.stop) {
				break // interrupted: drain takes over
			}
		}
	}
}

// drain sends everything buffered, giving up at deadline.
func (s *Shipper) drain(deadline time.Time) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	s.take()
	for len(s.batch) > 0 && s.send(ctx, nil) {
	}
	if n := len(s.batch); n > 0 {
		s.failed.Add(int64(n))
		s.buffered.Add(-int64(n))
		s.logger.Warn("logship: gave up on buffered documents at close", "documents", n, "timeout", s.cfg.FlushTimeout)
		s.batch = nil
	}
}

// take turns the waiting lines into bulk items, applying the quota.
func (s *Shipper) take() {
	s.mu.Lock()
	buf, lines := s.buf, s.lines
	s.buf, s.lines = nil, nil
	s.mu.Unlock()
	for _, l := range lines {
		s.accept(buf[l.start:l.end], l.at)
	}
}

func (s *Shipper) accept(line []byte, at time.Time) {
	rec, err := accesslog.ParseGorouter(line)
	switch {
	case err != nil:
		s.unparseable.Add(1)
		s.buffered.Add(-1)
		return
	case rec.AppID == "" && !s.cfg.IncludeNoApp:
		s.noApp.Add(1)
		s.buffered.Add(-1)
		return
	}
	if !s.quota.Admit(at) {
		s.droppedQuota.Add(1)
		s.buffered.Add(-1)
		return
	}
	var app AppInfo
	known := false
	if s.cfg.Apps != nil && rec.AppID != "" {
		app, known = s.cfg.Apps.App(rec.AppID)
	}
	doc := newDocument(string(line), &rec, app, known)
	s.seq++
	body, err := appendBulkItem(nil, indexName(s.cfg.Index, envelopeTime(&rec), doc.CF), s.idBase+strconv.FormatUint(s.seq, 36), &doc)
	if err != nil { // cannot happen with the document's types; counted all the same
		s.failed.Add(1)
		s.buffered.Add(-1)
		s.logger.Error("logship: encode document", "err", err)
		return
	}
	s.batch = append(s.batch, item{body})
}

// send sends up to BatchSize items from the batch, retrying with backoff. It returns
// false when ctx ended or stop closed before the items were settled (they stay in the
// batch); items settled (shipped or failed) leave the batch.
func (s *Shipper) send(ctx context.Context, stop <-chan struct{}) bool {
	n := min(len(s.batch), s.cfg.BatchSize)
	pending := append([]item(nil), s.batch[:n]...)
	if !s.cfg.NoTemplate && !s.templateDone {
		s.installTemplate(ctx)
	}
	b := backoff.Backoff{First: s.cfg.RetryBackoff, Max: 10 * time.Second}
	for attempt := 1; ; attempt++ {
		retry, err := s.bulk(ctx, pending)
		pending = retry
		if len(pending) == 0 {
			s.batch = s.batch[n:]
			return true
		}
		if attempt >= s.cfg.MaxAttempts {
			s.failed.Add(int64(len(pending)))
			s.buffered.Add(-int64(len(pending)))
			s.logger.Warn("logship: bulk request failed, documents dropped", "documents", len(pending), "attempts", attempt, "err", err)
			s.batch = s.batch[n:]
			return true
		}
		s.retries.Add(1)
		if !wait.Until(ctx, stop, time.Now().Add(b.Next())) {
			// Keep what is unsettled for the drain: the settled ones are counted.
			s.batch = append(pending, s.batch[n:]...)
			return false
		}
	}
}

func (s *Shipper) settle(n int64, ok bool) {
	if ok {
		s.shipped.Add(n)
	} else {
		s.failed.Add(n)
	}
	s.buffered.Add(-n)
}
