// Package loadgen generates HTTP load and measures every request. A Generator plays one
// load-generator instance: it runs its users (closed loop, or a fixed request count) or
// its arrival schedule (open loop) against one target and hands each finished request,
// as a sample.Sample, to a Recorder. Failed requests are samples too, with an error
// class; they are never errors of the generator.
//
// Latency is measured from the intended send time: in the open loop that is the slot of
// the schedule, so a target that stalls shows its stall in every request that was due
// meanwhile, however late the generator got to send it (no coordinated omission).
//
// Plain http:// targets are loaded with the lean client of package h1: one connection
// per user (closed loop) or per sender (open loop), each request prepared as bytes once
// and only stamped with its trace ids. Everything else goes through net/http: https://
// targets, a target URL with user info or a host that needs IDNA or zone handling, and
// a request mix with a request h1 cannot send verbatim (a method or header that is not
// a valid token, a header value with control characters, a URL that does not parse) or
// one that sets Host, Content-Length, Transfer-Encoding, Trailer, Connection, TE,
// Upgrade, Expect, Keep-Alive or Proxy-Connection. Both send the same requests, but for
// header order and the case of header names (X-B3-TraceId where net/http writes
// X-B3-Traceid), and both measure and classify responses and failures alike; Client
// says which one a generator uses.
//
// Config.ConnectTo makes both clients dial another address than the target URL's, as
// curl --connect-to does: the local foundation's app routes do not resolve by DNS and
// are reached through the router's port, with the URL's host in the Host header and as
// the TLS server name.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// Recorder receives every finished request. Add is called from many goroutines at once
// and must not block on I/O.
type Recorder interface {
	Add(sample.Sample)
}

// Request is one entry of the weighted request mix.
type Request struct {
	Method string
	Path   string // with query, relative to the target
	Header http.Header
	Body   []byte
	Weight int
}

// Model is how a generator paces its requests.
type Model int

// The load models.
const (
	// Closed: Users users, each sending its next request when the previous one is
	// answered (plus ThinkTime).
	Closed Model = iota
	// Count: like Closed, but the users stop after Count requests per phase in total.
	Count
	// Open: requests at a constant rate (SetRate), whatever the responses.
	Open
)

// DefaultMaxInFlight bounds the open loop's concurrent requests when Config leaves it 0.
const DefaultMaxInFlight = 1024

// DefaultTick is the open loop's clock period when Config leaves Tick 0. Each tick
// wakes the scheduler, the senders and the target, so the CPU per request falls with
// the ticks per request, and the mean send lag grows by about half the tick
// (BenchmarkOpenLoopTick, 20,000 req/s, generator and target on one core of a 2-core
// VM: per request 31 µs of CPU with a tick per slot, 24 at 100 µs, 19 at 200 µs, 17 at
// 500 µs, 14 at 1 ms; mean send lag 151, 78, 144, 344 and 705 µs).
const DefaultTick = 200 * time.Microsecond

// Config describes one generator instance.
type Config struct {
	Target   *url.URL // scheme and host (and optional base path) of the system under test
	Requests []Request
	Model    Model
	// Users is the number of concurrent users (Closed and Count).
	Users int
	// Count is the number of requests per phase (Count model).
	Count int
	// Rate is the initial rate in requests per second (Open model); SetRate changes it.
	Rate float64
	// MaxInFlight bounds concurrent requests in the open loop (default
	// DefaultMaxInFlight). When all are busy, due requests wait and are sent late, their
	// latency still counted from their slot; slots still waiting when the phase ends are
	// counted as missed.
	MaxInFlight int
	// Tick is the open loop's clock period on Linux (default DefaultTick): slots closer
	// than Tick go out together, on ticks Tick rounded up to a multiple of the slots'
	// interval apart, each request timed from its own slot, so that its lateness (less
	// than a tick) is its send lag. Fewer ticks cost less CPU per request. Elsewhere
	// each slot waits on Go's timers.
	Tick              time.Duration
	ThinkTime         time.Duration // pause between a response and the user's next request
	KeepAlive         bool
	Timeout           time.Duration // whole request, connect to last body byte
	CorrelationHeader string        // optional header that also carries the trace id
	TraceTag          uint32        // the run's trace tag
	WorkerID          uint32        // this instance's worker id
	Epoch             time.Time     // the run's zero point for sample offsets
	// ConnectTo, when set, is the "host:port" every connection dials instead of the
	// target URL's host and port; the Host header and the TLS server name stay the
	// URL's. Empty: dial the URL's host, resolved by DNS.
	ConnectTo string
}

// Phase is one ramp step as a generator sees it.
type Phase struct {
	Step uint8
	// Users, when above 0, is the phase's users (Closed and Count) instead of
	// Config.Users: a ramp of users changes them step by step.
	Users int
	// Start is when the step began for every instance; the open loop's slots are
	// aligned on it, and slots due while the generator was late to start (a timer
	// firing late on a busy host) go out at once, their lateness counted.
	Start time.Time
	// Joined says the generator joins a step already under way (an instance started
	// by hand): its first slot is the next one from now, not Start.
	Joined      bool
	WarmupUntil time.Time // samples intended before this are tagged warm-up
	End         time.Time // no request is intended at or after End
	// Stop, when closed, ends the phase early: no new request is issued, requests in
	// flight complete (cancel the context to abort them). Nil for none.
	Stop <-chan struct{}
}

// stopped reports whether ph was stopped early.
func (ph *Phase) stopped() bool {
	select {
	case <-ph.Stop:
		return true
	default:
		return false
	}
}

// Generator is one load-generator instance. Run may be called once per phase, one
// phase at a time; SetRate and the counters may be used concurrently; Close releases
// its connections.
type Generator struct {
	cfg    Config
	rec    Recorder
	client *http.Client // net/http, for what lean cannot send
	lean   *lean        // the h1 client, nil when net/http is used
	why    string       // why net/http is used
	urls   []string
	cum    []int // cumulative weights for picking a request
	seq    atomic.Uint64
	rate   atomic.Uint64 // float64 bits, requests per second (Open)
	missed atomic.Uint64
}

// New checks cfg and returns a generator that reports to rec.
func New(cfg Config, rec Recorder) (*Generator, error) {
	switch {
	case cfg.Target == nil || cfg.Target.Host == "":
		return nil, errors.New("loadgen: target URL with a host is required")
	case len(cfg.Requests) == 0 || len(cfg.Requests) > 256:
		return nil, fmt.Errorf("loadgen: want 1 to 256 requests in the mix, got %d", len(cfg.Requests))
	case cfg.Model != Open && cfg.Users < 1:
		return nil, fmt.Errorf("loadgen: users must be at least 1, got %d", cfg.Users)
	case cfg.Model == Count && cfg.Count < 1:
		return nil, fmt.Errorf("loadgen: count must be at least 1, got %d", cfg.Count)
	case cfg.Model == Open && !(cfg.Rate >= 0):
		return nil, fmt.Errorf("loadgen: rate must not be negative, got %v", cfg.Rate)
	case cfg.Timeout <= 0:
		return nil, errors.New("loadgen: timeout must be positive")
	case cfg.Tick < 0:
		return nil, fmt.Errorf("loadgen: tick must not be negative, got %s", cfg.Tick)
	}
	if cfg.ConnectTo != "" {
		if err := checkConnectTo(cfg.ConnectTo); err != nil {
			return nil, err
		}
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	conns := cfg.Users
	if cfg.Model == Open {
		conns = cfg.MaxInFlight
	}
	g := &Generator{cfg: cfg, rec: rec}
	g.SetRate(cfg.Rate)
	total := 0
	for _, r := range cfg.Requests {
		if r.Weight < 1 {
			return nil, fmt.Errorf("loadgen: request %s %s: weight must be at least 1", r.Method, r.Path)
		}
		total += r.Weight
		g.cum = append(g.cum, total)
		g.urls = append(g.urls, joinURL(cfg.Target, r.Path))
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if to := cfg.ConnectTo; to != "" {
		// The Transport has no proxy, so it dials only the target. It does TLS itself
		// over this connection with the URL's host as server name: no DialTLSContext.
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, to)
		}
	}
	g.client = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			DialContext:         dial,
			DisableKeepAlives:   !cfg.KeepAlive,
			DisableCompression:  true,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: cfg.Timeout,
		},
		// A redirect is a response like any other: measure it, do not follow it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if l, err := newLean(&g.cfg, g.urls); err != nil {
		g.why = err.Error()
	} else {
		g.lean = l
	}
	return g, nil
}

// Client names the HTTP client the generator uses: "h1", or "net/http (" and why not
// h1 ")".
func (g *Generator) Client() string {
	if g.lean != nil {
		return "h1"
	}
	return "net/http (" + g.why + ")"
}

// newClient returns a client for one user or sender; release it with putClient.
func (g *Generator) newClient() client {
	if g.lean == nil {
		return stdClient{g}
	}
	return g.lean.client(g.cfg.KeepAlive)
}

// putClient keeps c, with its connection, for the next user or sender.
func (g *Generator) putClient(c client) {
	if lc, ok := c.(*leanClient); ok {
		g.lean.put(lc)
	}
}

// withClient runs f with a client whose requests are aborted when ctx ends.
func (g *Generator) withClient(ctx context.Context, f func(client)) {
	c := g.newClient()
	defer g.putClient(c)
	if _, ok := c.(*leanClient); ok {
		stop := context.AfterFunc(ctx, c.abort)
		defer stop()
	}
	f(c)
}

// checkConnectTo checks Config.ConnectTo: a host and a numeric port 1 to 65535.
func checkConnectTo(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("loadgen: connect-to address %q: want host:port: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("loadgen: connect-to address %q: want host:port, the host is missing", addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("loadgen: connect-to address %q: want host:port with a numeric port 1 to 65535", addr)
	}
	return nil
}

func joinURL(base *url.URL, path string) string {
	b := *base
	b.RawQuery, b.Fragment = "", ""
	s := b.String()
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s + path
}

// Sent is the number of requests started so far.
func (g *Generator) Sent() uint64 { return g.seq.Load() }

// Missed is the number of open-loop slots that were due within a phase but could not
// be sent before it ended, because MaxInFlight requests were outstanding.
func (g *Generator) Missed() uint64 { return g.missed.Load() }

// SetRate sets the open loop's rate in requests per second; it applies from the next
// slot. 0 pauses sending.
func (g *Generator) SetRate(perSecond float64) { g.rate.Store(math.Float64bits(max(perSecond, 0))) }

// Rate is the open loop's current rate.
func (g *Generator) Rate() float64 { return math.Float64frombits(g.rate.Load()) }

// Run runs one phase in the configured model and returns when every request it started
// has been recorded. Requests in flight at ph.End complete (bounded by the timeout);
// cancelling ctx stops issuing and aborts them.
func (g *Generator) Run(ctx context.Context, ph Phase) {
	switch g.cfg.Model {
	case Open:
		g.RunOpen(ctx, ph)
	case Count:
		var left atomic.Int64
		left.Store(int64(g.cfg.Count))
		g.users(ctx, ph, &left)
	default:
		g.users(ctx, ph, nil)
	}
}

// Close releases idle connections; those of requests in flight stay open.
func (g *Generator) Close() {
	g.client.CloseIdleConnections()
	if g.lean != nil {
		g.lean.closeIdle()
	}
}

// RunClosed runs the phase's users in a closed loop until ph.End or until ctx is done; see Run.
func (g *Generator) RunClosed(ctx context.Context, ph Phase) { g.users(ctx, ph, nil) }

// users runs the phase's users (cfg.Users unless the phase says); with left set they
// stop when it reaches zero.
func (g *Generator) users(ctx context.Context, ph Phase, left *atomic.Int64) {
	var wg sync.WaitGroup
	n := g.cfg.Users
	if ph.Users > 0 {
		n = ph.Users
	}
	for u := range n {
		wg.Add(1)
		rng := rand.New(rand.NewPCG(uint64(g.cfg.WorkerID), uint64(u)<<32|uint64(ph.Step)))
		go func() {
			defer wg.Done()
			g.withClient(ctx, func(c client) { g.user(ctx, ph, rng, left, c) })
		}()
	}
	wg.Wait()
}

func (g *Generator) user(ctx context.Context, ph Phase, rng *rand.Rand, left *atomic.Int64, c client) {
	var p pause
	defer p.stop()
	ready := time.Now()
	for ctx.Err() == nil && ready.Before(ph.End) && !ph.stopped() {
		if left != nil && left.Add(-1) < 0 {
			return
		}
		end := g.send(ctx, ph, ready, g.pick(rng), c)
		ready = end
		if g.cfg.ThinkTime > 0 {
			ready = end.Add(g.cfg.ThinkTime)
			if !p.until(ctx, ph.Stop, ready) {
				return
			}
		}
	}
}

// RunOpen sends requests on a schedule of slots 1/rate apart, aligned on ph.Start, until
// ph.End or until ctx is done; see Run. A request's latency counts from its slot. When
// MaxInFlight requests are outstanding, due slots wait and go out late; those still
// waiting at ph.End are counted in Missed. On Linux, slots closer than Config.Tick go
// out together on a tick at least Tick apart, each timed from its own slot (its
// lateness is its send lag).
func (g *Generator) RunOpen(ctx context.Context, ph Phase) {
	due := make(chan time.Time)
	var wg sync.WaitGroup
	senders := 0
	spawn := func() {
		senders++
		wg.Add(1)
		rng := rand.New(rand.NewPCG(uint64(g.cfg.WorkerID), uint64(senders)<<32|uint64(ph.Step)))
		go func() {
			defer wg.Done()
			g.withClient(ctx, func(c client) {
				for slot := range due {
					g.send(ctx, ph, slot, g.pick(rng), c)
				}
			})
		}()
	}
	defer func() {
		close(due)
		wg.Wait()
	}()
	endTimer := time.NewTimer(time.Until(ph.End))
	defer endTimer.Stop()
	p := pause{clock: newSlotClock()}
	defer p.stop()

	// The first slot: ph.Start, or for a generator joining a step under way the first
	// aligned slot from now.
	slot := ph.Start
	if rate := g.Rate(); rate > 0 && ph.Joined {
		if late := time.Since(ph.Start); late > 0 {
			interval := time.Duration(float64(time.Second) / rate)
			slot = ph.Start.Add((late + interval - 1) / interval * interval)
		}
	}
	for {
		rate := g.Rate()
		if rate <= 0 {
			// Paused: look again shortly (the rate may be raised within the phase).
			p.clock.idle()
			p.every = 0
			slot = time.Now().Add(10 * time.Millisecond)
			if !slot.Before(ph.End) || !p.until(ctx, ph.Stop, slot) {
				return
			}
			continue
		}
		interval := time.Duration(float64(time.Second) / rate)
		p.every = tickEvery(interval, g.cfg.Tick)
		if !slot.Before(ph.End) || !p.until(ctx, ph.Stop, slot) {
			return
		}
		select {
		case due <- slot:
		default:
			if senders < g.cfg.MaxInFlight {
				spawn()
			} else {
				p.clock.idle() // no ticks while every sender is busy
			}
			select {
			case due <- slot:
			case <-ctx.Done():
				return
			case <-ph.Stop:
				return
			case <-endTimer.C:
				// Every slot from this one to the end was due but never went out.
				g.missed.Add(slotsBetween(slot, ph.End, rate))
				return
			}
		}
		slot = slot.Add(interval)
	}
}

// tickEvery is the period of the open loop's periodic clock (Linux) for slots interval
// apart: tick rounded up to a multiple of interval, so that the ticks stay on the
// schedule's grid; 0, a wait per slot, when slots are at least a tick and the precise
// window apart. A tick coarser than the window still batches: slots 2 ms apart on a
// 5 ms tick go out two at a time every 6 ms.
func tickEvery(interval, tick time.Duration) time.Duration {
	if interval <= 0 || interval >= max(preciseWindow, tick) {
		return 0
	}
	return max(1, (tick+interval-1)/interval) * interval
}

// TickLag is the mean send lag that an open loop of rate requests per second on a
// Linux generator adds by itself with the given tick (0: DefaultTick): the slots a
// tick releases together were due up to a tick period before it, (period − 1/rate)/2
// on average. 0 when each slot has a wake-up of its own. The same on every OS: the
// precise window only decides whether slots a tick or more apart wait on a periodic
// clock or a wake-up each, and neither adds lag.
func TickLag(rate float64, tick time.Duration) time.Duration {
	if !(rate > 0) {
		return 0
	}
	if tick <= 0 {
		tick = DefaultTick
	}
	interval := time.Duration(float64(time.Second) / rate)
	if every := tickEvery(interval, tick); every > 0 {
		return (every - interval) / 2
	}
	return 0
}

// pause is wait.Until with one timer for many waits, so that waiting per request
// does not allocate. The zero value is ready; stop releases the timer. A pause with a
// clock waits the last preciseWindow on it, and so wakes within tens of microseconds
// of t, not up to a millisecond late (see pace_linux.go): the open loop's schedule.
type pause struct {
	t     *time.Timer
	clock *slotClock
	every time.Duration // for the clock: its period when slots are close, 0 for one-off waits
}

func (p *pause) until(ctx context.Context, stop <-chan struct{}, t time.Time) bool {
	d := time.Until(t)
	if p.clock != nil {
		if p.every > preciseWindow {
			// Ticks further apart than the window: the clock releases t on its next
			// tick, so the Go timer waits until the window before that tick, not before
			// t (which would take a second wake-up per tick).
			d = time.Until(p.clock.next(t, p.every))
		}
		d -= preciseWindow
	}
	if d <= 0 {
		if !wait.Until(ctx, stop, time.Time{}) { // checks ctx and stop without waiting
			return false
		}
	} else {
		if p.t == nil {
			p.t = time.NewTimer(d)
		} else {
			p.t.Reset(d) // since Go 1.23 no stale tick can be left in the channel
		}
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		case <-p.t.C:
		}
	}
	if p.clock != nil {
		p.clock.sleepUntil(t, p.every)
	}
	return true
}

func (p *pause) stop() {
	if p.t != nil {
		p.t.Stop()
	}
	if p.clock != nil {
		p.clock.close()
	}
}

// slotsBetween counts the slots from first (included) to end (excluded) at rate.
func slotsBetween(first, end time.Time, rate float64) uint64 {
	return max(uint64(math.Ceil(end.Sub(first).Seconds()*rate)), 1)
}

func (g *Generator) pick(rng *rand.Rand) int {
	if len(g.cum) == 1 {
		return 0
	}
	n := rng.IntN(g.cum[len(g.cum)-1])
	for i, c := range g.cum {
		if n < c {
			return i
		}
	}
	return len(g.cum) - 1
}

// send issues request i that was due at intended over c, records it and returns when
// it ended.
func (g *Generator) send(ctx context.Context, ph Phase, intended time.Time, i int, c client) time.Time {
	seq := g.seq.Add(1)
	s := sample.Sample{
		IntendedUS: intended.Sub(g.cfg.Epoch).Microseconds(),
		Seq:        uint32(seq),
		Step:       ph.Step,
		Request:    uint8(i),
	}
	if intended.Before(ph.WarmupUntil) {
		s.Flags |= sample.FlagWarmup
	}
	start := time.Now()
	status, n, err := c.do(ctx, i, seq, start.Add(g.cfg.Timeout))
	end := time.Now()
	s.Status = int16(status)
	s.Bytes = int32(min(n, 1<<31-1))
	s.StartDelayUS = int32(start.Sub(intended).Microseconds())
	s.LatencyUS = int32(min(end.Sub(intended).Microseconds(), 1<<31-1))
	if err != nil {
		s.Err = sample.Classify(err)
	}
	g.rec.Add(s)
	return end
}
