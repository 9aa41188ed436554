//go:build linux

package loadgen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cf-benchmark/cf-benchmark/loadgen/h1"
)

// The open loop's event loop (Linux, the h1 client, keep-alive). One goroutine keeps
// the schedule and does all the I/O: it wakes on one periodic timer (a timerfd armed
// once per rate, ticking on the slots, not re-armed per slot), writes every request
// due itself, and reads the responses that have arrived, found with one epoll_wait
// over every connection. Between ticks it does not wake for responses: each one's
// end is the time the kernel received it (SO_TIMESTAMPING), so reading it a tick late
// does not add to its latency. The goroutine parks in Go's poller on an epoll of the
// timer and a wake-up eventfd, so it holds no P while it waits.
//
// Before, each slot woke the scheduler (a Go timer, then the slot clock re-armed for
// the slot) and handed the slot to a sender goroutine over a channel, which wrote the
// request, tried to read (EAGAIN), parked, and woke again on the response: three
// goroutine wake-ups and two timer arms per request. Now a request costs its write and
// its read, and the loop wakes at most once per slot.
//
// What is rare goes elsewhere: dialling, on a goroutine per connection, which carries
// the slot it was dialled for; a response larger than a connection's read buffer, a
// body that ends at close, or a write the socket would not take at once, finished on a
// goroutine with blocking I/O (finishSlow).

// loopReadBuf is each connection's receive buffer: a response that does not fit is
// finished on a goroutine.
const loopReadBuf = 8 << 10

// maxTick is the longest the loop sleeps: slots further apart are reached in ticks of
// at most this, so that it notices a stop, a new rate and timeouts in time.
const maxTick = 5 * time.Millisecond

// minTick is the shortest: slots closer together (above 10,000 req/s) go out in the
// same tick, each timed from its own slot, its lateness (under 100 µs) counted as send
// lag. Measured (BenchmarkOpenLoop, 20,000 req/s, a busy machine): a tick per slot
// cost 33–36 µs of CPU per request, 100 µs ticks 24–25 µs; the send lag of a tick per
// slot is 60–100 µs on average already, the wake-up's.
var minTick = 100 * time.Microsecond

// loopConn is one connection of the loop: a socket the loop owns (not in Go's poller)
// and the request it carries, if any.
type loopConn struct {
	fd     int
	idx    int // in openLoop.conns, the socket's epoll data
	reused bool
	buf    []byte // the request head, stamped
	cur    *h1.Request
	rbuf   []byte // bytes of the response received so far
	oob    [128]byte
	iov    unix.Iovec
	msg    unix.Msghdr
	stamp  [h1.StampLen]byte

	// The request in flight.
	busy            bool
	intended, start time.Time
	deadline        time.Time
	seq             uint64
	req             int
	retried         bool        // already sent again after a reused connection closed
	abort           atomic.Bool // finishSlow gives up
}

// openLoop is one phase of the event loop.
type openLoop struct {
	g   *Generator
	ctx context.Context
	ph  Phase
	rng *rand.Rand

	wake  int      // epoll of the timer and the eventfd, in Go's poller through wakeF
	socks int      // epoll of the sockets, edge-triggered: a recv takes all there is (finishSlow what overflows)
	wakeF *os.File // wake, for parking
	rc    syscall.RawConn
	timer int
	event int

	conns    []*loopConn // every connection; nil where one was closed
	free     []int       // nil slots of conns
	idle     []*loopConn
	inFlight int // requests sent, dialling or finishing elsewhere, not yet recorded
	draining bool

	mu     sync.Mutex
	handed []handoff // from dialers and finishSlow
	closed bool      // the descriptors are closed: kick no more
	kicked atomic.Bool
	slow   []*loopConn // finishing on a goroutine

	nextExpire time.Time

	// The closed loop: users send their next request as soon as one ends; left, when
	// set, counts the requests of the Count model.
	closedLoop bool
	left       *atomic.Int64
	now        time.Time // when the loop last woke

	parser   h1.Parser
	events   [64]unix.EpollEvent
	tick     time.Duration
	armed    float64   // the rate the timer is armed for
	deadline time.Time // park's, as set on wakeF
	parked   bool
	parkFn   func(uintptr) bool // for rc.Read: false (wait) the first time, then true
}

// handoff is a connection (or a failed dial) coming back to the loop; with slot set it
// carries a request still to be sent, due at slot.
type handoff struct {
	fd   int // -1: the dial failed
	c    *loopConn
	slot time.Time
	req  int
	seq  uint64
	has  bool
}

// openLoops are kept idle across phases, with their connections.
type loopPool struct {
	mu    sync.Mutex
	conns []*loopConn
}

func (p *loopPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		unix.Close(c.fd)
	}
	p.conns = nil
}

// runClosedLoop runs n closed-loop users (left as in Generator.users) on event loops,
// one per P; false when they are not for this generator (net/http, no keep-alive,
// think time) or this machine, before anything was sent.
func (g *Generator) runClosedLoop(ctx context.Context, ph Phase, n int, left *atomic.Int64) bool {
	if g.lean == nil || !g.cfg.KeepAlive || g.noLoop || g.cfg.ThinkTime > 0 {
		return false
	}
	k := min(runtime.GOMAXPROCS(0), n)
	share := func(i int) int {
		if i < n%k {
			return n/k + 1
		}
		return n / k
	}
	loops := make([]*openLoop, 0, k)
	for i := range k {
		l, err := newOpenLoop(g, ctx, ph, share(i))
		if err != nil {
			for _, l := range loops {
				l.close()
			}
			return false
		}
		l.closedLoop, l.left = true, left
		l.rng = rand.New(rand.NewPCG(uint64(g.cfg.WorkerID), uint64(i)<<32|uint64(ph.Step)))
		loops = append(loops, l)
	}
	var wg sync.WaitGroup
	for i, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.runClosed(share(i))
			l.close()
		}()
	}
	wg.Wait()
	return true
}

// runOpenLoop runs the phase on the event loop; false when it is not for this
// generator (net/http, no keep-alive) or this machine, before anything was sent.
func (g *Generator) runOpenLoop(ctx context.Context, ph Phase) bool {
	if g.lean == nil || !g.cfg.KeepAlive || g.noLoop {
		return false
	}
	l, err := newOpenLoop(g, ctx, ph, math.MaxInt)
	if err != nil {
		return false
	}
	l.run()
	l.close()
	return true
}

// newOpenLoop makes a loop for the phase that takes up to adopt of the generator's
// idle connections.
func newOpenLoop(g *Generator, ctx context.Context, ph Phase, adopt int) (*openLoop, error) {
	l := &openLoop{g: g, ctx: ctx, ph: ph, timer: -1, event: -1, socks: -1,
		rng: rand.New(rand.NewPCG(uint64(g.cfg.WorkerID), uint64(ph.Step)))}
	var err error
	fail := func(e error) (*openLoop, error) {
		l.close()
		return nil, e
	}
	if l.socks, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return fail(err)
	}
	if l.timer, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		return fail(err)
	}
	if l.event, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail(err)
	}
	wake, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fail(err)
	}
	l.wake = wake
	for _, fd := range []int{l.timer, l.event} {
		if err := unix.EpollCtl(wake, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			unix.Close(wake)
			return fail(err)
		}
	}
	// Non-blocking before os.NewFile, which then puts it in Go's poller.
	if err := unix.SetNonblock(wake, true); err != nil {
		unix.Close(wake)
		return fail(err)
	}
	l.wakeF = os.NewFile(uintptr(wake), "open-loop")
	l.parkFn = func(uintptr) bool {
		done := l.parked
		l.parked = true
		return done
	}
	if l.rc, err = l.wakeF.SyscallConn(); err != nil {
		return fail(err)
	}
	g.loopIdle.mu.Lock()
	for len(g.loopIdle.conns) > 0 && len(l.idle) < adopt {
		n := len(g.loopIdle.conns) - 1
		c := g.loopIdle.conns[n]
		g.loopIdle.conns = g.loopIdle.conns[:n]
		if l.adopt(c) {
			l.idle = append(l.idle, c)
		} else {
			unix.Close(c.fd)
		}
	}
	g.loopIdle.mu.Unlock()
	return l, nil
}

// close releases the loop's descriptors and keeps its idle connections for the next
// phase.
func (l *openLoop) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	for _, c := range l.idle {
		unix.EpollCtl(l.socks, unix.EPOLL_CTL_DEL, c.fd, nil)
	}
	l.g.loopIdle.mu.Lock()
	l.g.loopIdle.conns = append(l.g.loopIdle.conns, l.idle...)
	l.g.loopIdle.mu.Unlock()
	l.idle = nil
	if l.wakeF != nil {
		l.wakeF.Close()
	}
	for _, fd := range []int{l.socks, l.timer, l.event} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// kick wakes the loop from another goroutine, if it still runs.
func (l *openLoop) kick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.kicked.Store(true)
	one := [8]byte{1}
	unix.Write(l.event, one[:])
}

// park waits until the timer or a kick (or, while draining, a response) is due, in
// Go's poller, or at most until next (zero: no limit), a deadline on the Go timer
// heap: when other goroutines keep the P busy, the runtime polls the network only
// now and then, but looks at its timers at every switch (as the slot clock did,
// pace_linux.go). Where Go's poller cannot wait on an epoll, it waits in epoll_wait
// for at most 1 ms.
func (l *openLoop) park(next time.Time) {
	// To the next whole millisecond: a new deadline per tick costs more than the
	// wake-up it would bring forward when the P is busy.
	if !next.IsZero() {
		next = next.Truncate(time.Millisecond).Add(time.Millisecond)
	}
	if !next.Equal(l.deadline) {
		l.deadline = next
		l.wakeF.SetReadDeadline(next)
	}
	l.parked = false
	err := l.rc.Read(l.parkFn)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		var ev [1]unix.EpollEvent
		unix.EpollWait(l.wake, ev[:], 1)
	}
}

// arm makes the timer tick from next on, every tick (0: stop it).
func (l *openLoop) arm(next time.Time, tick time.Duration) {
	spec := unix.ItimerSpec{Interval: unix.NsecToTimespec(int64(tick))}
	if tick > 0 {
		spec.Value = unix.NsecToTimespec(max(int64(time.Until(next)), 1))
	}
	unix.TimerfdSettime(l.timer, 0, &spec, nil)
}

// watch kicks the loop when the context ends, the phase is stopped or its end comes;
// call the function it returns when the loop ends.
func (l *openLoop) watch() func() {
	stopCtx := context.AfterFunc(l.ctx, l.kick)
	done := make(chan struct{})
	if l.ph.Stop != nil {
		go func() {
			select {
			case <-l.ph.Stop:
				l.kick()
			case <-done:
			}
		}()
	}
	endTimer := time.AfterFunc(time.Until(l.ph.End), l.kick)
	return func() {
		stopCtx()
		close(done)
		endTimer.Stop()
	}
}

// runClosed runs users closed-loop users until the phase ends and every request
// they sent is recorded.
func (l *openLoop) runClosed(users int) {
	defer l.watch()()
	l.startDraining() // woken by every response, and every 10 ms for timeouts
	l.now = time.Now()
	for range users {
		l.done(nil)
	}
	var buf [8]byte
	for {
		if l.kicked.Swap(false) {
			unix.Read(l.event, buf[:])
			l.now = time.Now()
			l.collect()
		}
		if l.ctx.Err() != nil {
			l.abortAll()
			return
		}
		l.receive()
		if l.inFlight == 0 {
			return
		}
		// Let the sample writer and the rest run now: a loop that never parks keeps
		// them waiting in the run queue, and then the runtime takes the P away from
		// the loop's next system call to run them on another thread.
		runtime.Gosched()
		if now := time.Now(); now.After(l.nextExpire) {
			l.nextExpire = now.Add(10 * time.Millisecond)
			l.expire(now)
		}
		unix.Read(l.timer, buf[:])
		l.park(time.Time{})
	}
}

func (l *openLoop) run() {
	g, ph := l.g, &l.ph
	defer l.watch()()

	// The first slot, as RunOpen.
	slot := ph.Start
	if rate := g.Rate(); rate > 0 && ph.Joined {
		if late := time.Since(ph.Start); late > 0 {
			interval := time.Duration(float64(time.Second) / rate)
			slot = ph.Start.Add((late + interval - 1) / interval * interval)
		}
	}
	l.armed = -1
	var buf [8]byte
	for {
		if l.kicked.Swap(false) {
			unix.Read(l.event, buf[:])
			l.collect()
		}
		if l.ctx.Err() != nil {
			l.abortAll()
			return
		}
		l.receive()
		now := time.Now()
		if !l.draining {
			rate := g.Rate()
			switch {
			case ph.stopped():
				l.startDraining()
			case rate <= 0:
				// Paused: look again shortly (the rate may be raised within the phase).
				slot = now.Add(10 * time.Millisecond)
				if !slot.Before(ph.End) {
					l.startDraining()
				} else if l.armed != 0 {
					l.armed = 0
					l.arm(slot, 10*time.Millisecond)
				}
			default:
				interval := time.Duration(float64(time.Second) / rate)
				if rate != l.armed {
					l.armed = rate
					l.tick = max(interval, minTick)
					if interval > maxTick {
						l.tick = interval / time.Duration((interval+maxTick-1)/maxTick)
					}
					l.arm(slot, l.tick)
				}
				for slot.Before(ph.End) && !slot.After(now) {
					if !l.sendNext(slot) {
						break // every allowed request is in flight: the slot waits
					}
					slot = slot.Add(interval)
				}
				switch {
				case !slot.Before(ph.End):
					l.startDraining()
				case !now.Before(ph.End):
					// Every slot from this one to the end was due but never went out.
					g.missed.Add(slotsBetween(slot, ph.End, rate))
					l.startDraining()
				}
			}
		}
		if l.draining && l.inFlight == 0 {
			return
		}
		if now.After(l.nextExpire) {
			l.nextExpire = now.Add(10 * time.Millisecond)
			l.expire(now)
		}
		// Consume the ticks that passed, then sleep until the next unless one is due.
		if n, _ := unix.Read(l.timer, buf[:]); n == 8 && !l.draining {
			continue
		}
		next := time.Time{}
		if !l.draining {
			next = slot // or a tick before it: a spare wake-up, not a late one
		}
		l.park(next)
	}
}

// startDraining ends sending: from now on the loop waits for the requests in flight,
// woken by their responses too.
func (l *openLoop) startDraining() {
	if l.draining {
		return
	}
	l.draining = true
	unix.EpollCtl(l.wake, unix.EPOLL_CTL_ADD, l.socks, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.socks)})
	l.arm(time.Now().Add(10*time.Millisecond), 10*time.Millisecond) // for timeouts
}

// sendNext sends the request due at slot on an idle connection, or hands it to a new
// connection's dialler; false when every allowed request is in flight.
func (l *openLoop) sendNext(slot time.Time) bool {
	g := l.g
	i := g.pick(l.rng)
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		l.inFlight++
		l.send(c, slot, i, g.seq.Add(1), false)
		return true
	}
	if l.inFlight >= g.cfg.MaxInFlight {
		return false
	}
	l.inFlight++
	l.dial(slot, i, g.seq.Add(1))
	return true
}

// dial connects a new connection on a goroutine and hands it back with the request
// due at slot; a failed dial is that request's sample.
func (l *openLoop) dial(slot time.Time, i int, seq uint64) {
	lean, g := l.g.lean, l.g
	go func() {
		start := time.Now()
		d := lean.dialer
		d.Deadline = start.Add(g.cfg.Timeout)
		nc, err := d.DialContext(l.ctx, "tcp", lean.addr)
		fd := -1
		if err == nil {
			fd, err = detach(nc)
		}
		if err != nil {
			if ctxErr := l.ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			g.record(l.ph, slot, start, time.Now(), i, seq, 0, 0, err)
		}
		l.mu.Lock()
		l.handed = append(l.handed, handoff{fd: fd, slot: slot, req: i, seq: seq, has: true})
		l.mu.Unlock()
		l.kick()
	}()
}

// detach takes nc's socket out of Go's poller: a duplicate the loop owns, non-blocking,
// with receive timestamps on.
func detach(nc net.Conn) (int, error) {
	defer nc.Close()
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("loadgen: not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// Best effort: without timestamps a response ends when the loop reads it.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE)
	return fd, nil
}

// adopt registers c's socket with the loop.
func (l *openLoop) adopt(c *loopConn) bool {
	if n := len(l.free); n > 0 {
		c.idx = l.free[n-1]
		l.free = l.free[:n-1]
		l.conns[c.idx] = c
	} else {
		c.idx = len(l.conns)
		l.conns = append(l.conns, c)
	}
	if err := unix.EpollCtl(l.socks, unix.EPOLL_CTL_ADD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET,
		Fd: int32(c.idx)}); err != nil {
		l.conns[c.idx] = nil
		l.free = append(l.free, c.idx)
		return false
	}
	return true
}

// drop closes c.
func (l *openLoop) drop(c *loopConn) {
	unix.EpollCtl(l.socks, unix.EPOLL_CTL_DEL, c.fd, nil)
	unix.Close(c.fd)
	if c.idx >= 0 && c.idx < len(l.conns) && l.conns[c.idx] == c {
		l.conns[c.idx] = nil
		l.free = append(l.free, c.idx)
	}
	c.fd = -1
}

// collect takes back what dialers and finishSlow handed over.
func (l *openLoop) collect() {
	l.mu.Lock()
	hs := l.handed
	l.handed = nil
	l.mu.Unlock()
	for _, h := range hs {
		c := h.c
		if c != nil {
			l.slow = removeConn(l.slow, c)
		}
		if c == nil && h.fd >= 0 {
			c = &loopConn{fd: h.fd, rbuf: make([]byte, 0, loopReadBuf)}
			if !l.adopt(c) {
				unix.Close(h.fd)
				c = nil
			}
		} else if c != nil && c.fd >= 0 && !l.adopt(c) {
			unix.Close(c.fd)
			c = nil
		}
		switch {
		case !h.has:
			// A request finished elsewhere.
			l.inFlight--
			l.done(c)
		case c == nil:
			// The dial failed and its request is recorded.
			l.inFlight--
			l.done(nil)
		case l.ctx.Err() != nil:
			l.g.record(l.ph, h.slot, time.Now(), time.Now(), h.req, h.seq, 0, 0, l.ctx.Err())
			l.inFlight--
			l.idle = append(l.idle, c)
		default:
			l.send(c, h.slot, h.req, h.seq, false)
		}
	}
}

// send writes request i, due at intended, on c.
func (l *openLoop) send(c *loopConn, intended time.Time, i int, seq uint64, retry bool) {
	g := l.g
	r := g.lean.reqs[i]
	const digits = "0123456789abcdef"
	s := seq
	for j := h1.StampLen - 1; j >= 0; j-- {
		c.stamp[j] = digits[s&15]
		s >>= 4
	}
	c.buf = r.AppendHead(c.buf[:0], &c.stamp)
	c.busy, c.intended, c.seq, c.req, c.retried = true, intended, seq, i, retry
	c.rbuf = c.rbuf[:0]
	c.start = time.Now()
	c.deadline = c.start.Add(g.cfg.Timeout)
	// syscall's Write and Read, not unix's: the race detector sees them as Go's own
	// network I/O does (a write happens before the read of what it wrote).
	n, err := syscall.Write(c.fd, c.buf)
	if err == nil && n == len(c.buf) && r.Body() != nil {
		var m int
		m, err = syscall.Write(c.fd, r.Body())
		n += max(m, 0)
	}
	switch {
	case err == nil && n == len(c.buf)+len(r.Body()):
		return
	case err == unix.EAGAIN || err == nil:
		// The socket took part of it: finish on a goroutine.
		l.finishSlow(c, max(n, 0))
	default:
		l.failed(c, 0, 0, n > 0, err)
	}
}

// receive reads the responses that have arrived.
func (l *openLoop) receive() {
	for {
		n, err := unix.EpollWait(l.socks, l.events[:], 0)
		if err != nil || n <= 0 {
			return
		}
		now := time.Now()
		l.now = now
		for _, ev := range l.events[:n] {
			idx := int(ev.Fd)
			if idx < 0 || idx >= len(l.conns) || l.conns[idx] == nil {
				continue
			}
			l.read(l.conns[idx], now)
		}
		if n < len(l.events) {
			return
		}
	}
}

// read reads what c received; now is when the loop woke.
func (l *openLoop) read(c *loopConn, now time.Time) {
	if !c.busy {
		// An idle connection readable: the server closed it (or sent what was not
		// asked for). Either way it cannot carry a request.
		l.idle = removeConn(l.idle, c)
		l.drop(c)
		return
	}
	end, n, err := c.recv(now)
	if err == unix.EAGAIN {
		return
	}
	if n == 0 || err != nil {
		if err == nil {
			err = io.EOF
		}
		if len(c.rbuf) > 0 && err == io.EOF {
			l.finishSlow(c, -1) // a body that ends at close
			return
		}
		l.failed(c, 0, 0, true, err)
		return
	}
	if end.IsZero() || end.After(now) {
		end = now
	}
	resp, used, keep, perr := l.parser.Parse(c.rbuf, l.g.lean.reqs[c.req].Head())
	switch {
	case perr == h1.ErrIncomplete:
		if len(c.rbuf) == cap(c.rbuf) {
			l.finishSlow(c, -1)
		}
		return
	case perr != nil:
		l.failed(c, resp.Status, resp.Bytes, true, perr)
		return
	}
	if end.Before(c.start) {
		end = c.start
	}
	l.g.record(l.ph, c.intended, c.start, end, c.req, c.seq, resp.Status, resp.Bytes, nil)
	l.inFlight--
	c.busy, c.reused = false, true
	if !keep || used != len(c.rbuf) {
		l.drop(c)
		l.done(nil)
		return
	}
	l.done(c)
}

// done goes on after a request ended on c (nil: its connection is gone): in the
// closed loop its user sends the next request at once, on c or on an idle or a new
// connection; in the open loop c waits for the next slot.
func (l *openLoop) done(c *loopConn) {
	if !l.closedLoop || !l.userGoesOn() {
		if c != nil {
			l.idle = append(l.idle, c)
		}
		return
	}
	if n := len(l.idle); c == nil && n > 0 {
		c = l.idle[n-1]
		l.idle = l.idle[:n-1]
	}
	i, seq := l.g.pick(l.rng), l.g.seq.Add(1)
	l.inFlight++
	if c == nil {
		l.dial(l.now, i, seq)
		return
	}
	l.send(c, l.now, i, seq, false)
}

// userGoesOn says whether a closed-loop user whose request ended sends another, as
// Generator.user decides.
func (l *openLoop) userGoesOn() bool {
	return l.ctx.Err() == nil && l.now.Before(l.ph.End) && !l.ph.stopped() && (l.left == nil || l.left.Add(-1) >= 0)
}

// recv reads into c.rbuf with recvmsg and returns when the kernel received the last
// byte read (zero when it does not say).
func (c *loopConn) recv(now time.Time) (time.Time, int, error) {
	b := c.rbuf[len(c.rbuf):cap(c.rbuf)]
	c.iov.Base = &b[0]
	c.iov.SetLen(len(b))
	c.msg.Iov = &c.iov
	c.msg.Iovlen = 1
	c.msg.Control = &c.oob[0]
	c.msg.SetControllen(len(c.oob))
	c.msg.Flags = 0
	r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&c.msg)), 0)
	if e != 0 {
		return time.Time{}, 0, e
	}
	n := int(r)
	c.rbuf = c.rbuf[:len(c.rbuf)+n]
	raceAcquireIO(c.fd)
	return rxTime(c.oob[:c.msg.Controllen], now), n, nil
}

// rxTime reads the software receive time of SCM_TIMESTAMPING from control messages,
// as a time with a monotonic reading: now less the stamp's age by the wall clock.
func rxTime(oob []byte, now time.Time) time.Time {
	hdr := int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return time.Time{}
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPING && l-unix.CmsgLen(0) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[unix.CmsgLen(0)]))
			if ts.Sec == 0 && ts.Nsec == 0 {
				return time.Time{}
			}
			age := now.UnixNano() - ts.Nano()
			if age < 0 || age > int64(time.Minute) {
				return time.Time{} // the wall clock stepped
			}
			return now.Add(-time.Duration(age))
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return time.Time{}
}

// failed records c's request as failed (status and bytes as far as they came) and
// closes c; a request on a reused connection the server had closed before answering is
// sent once more on a new one, as h1.Conn does.
func (l *openLoop) failed(c *loopConn, status int, n int64, wrote bool, err error) {
	r := l.g.lean.reqs[c.req]
	if status == 0 && len(c.rbuf) == 0 && c.reused && !c.retried && (!wrote || r.Replayable()) && closedByPeer(err) &&
		l.ctx.Err() == nil {
		intended, req, seq := c.intended, c.req, c.seq
		c.busy = false
		l.drop(c)
		l.inFlight--
		if n := len(l.idle); n > 0 {
			c := l.idle[n-1]
			l.idle = l.idle[:n-1]
			l.inFlight++
			l.send(c, intended, req, seq, true)
		} else {
			l.inFlight++
			l.dial(intended, req, seq)
		}
		return
	}
	if ctxErr := l.ctx.Err(); ctxErr != nil {
		err = ctxErr
	}
	l.g.record(l.ph, c.intended, c.start, time.Now(), c.req, c.seq, status, n, err)
	l.inFlight--
	c.busy = false
	l.drop(c)
	l.done(nil)
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// expire fails the requests past their deadline.
func (l *openLoop) expire(now time.Time) {
	for _, c := range l.conns {
		if c != nil && c.busy && now.After(c.deadline) {
			l.failed(c, 0, 0, true, os.ErrDeadlineExceeded)
		}
	}
}

// abortAll records every request in flight as aborted when the context ends, and
// waits for those finishing elsewhere.
func (l *openLoop) abortAll() {
	err := l.ctx.Err()
	for _, c := range l.slow {
		c.abort.Store(true)
	}
	for _, c := range l.conns {
		if c == nil || !c.busy {
			continue
		}
		l.g.record(l.ph, c.intended, c.start, time.Now(), c.req, c.seq, 0, 0, err)
		l.inFlight--
		c.busy = false
		l.drop(c)
	}
	var buf [8]byte
	for l.inFlight > 0 {
		l.kicked.Store(false)
		unix.Read(l.event, buf[:])
		l.collect()
		if l.inFlight > 0 {
			l.park(time.Time{})
		}
	}
}

// finishSlow finishes c's request on a goroutine with blocking I/O: the rest of the
// request from written on (-1: all written), then the response after what c.rbuf holds.
func (l *openLoop) finishSlow(c *loopConn, written int) {
	unix.EpollCtl(l.socks, unix.EPOLL_CTL_DEL, c.fd, nil)
	if c.idx >= 0 && c.idx < len(l.conns) && l.conns[c.idx] == c {
		l.conns[c.idx] = nil
		l.free = append(l.free, c.idx)
	}
	c.idx = -1
	c.abort.Store(false)
	l.slow = append(l.slow, c)
	g := l.g
	r := g.lean.reqs[c.req]
	go func() {
		var err error
		if written >= 0 {
			if written < len(c.buf) {
				err = c.writeAll(c.buf[written:])
				written = len(c.buf)
			}
			if err == nil {
				err = c.writeAll(r.Body()[written-len(c.buf):])
			}
		}
		var resp h1.Response
		keep := false
		if err == nil {
			br := newBlockingReader(c)
			resp, keep, err = h1.ReadResponse(br, r.Head())
			if err == nil && br.Buffered() > 0 {
				keep = false
			}
		}
		end := time.Now()
		if err != nil {
			if ctxErr := l.ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
		}
		g.record(l.ph, c.intended, c.start, end, c.req, c.seq, resp.Status, resp.Bytes, err)
		c.busy, c.reused = false, true
		c.rbuf = c.rbuf[:0]
		if err != nil || !keep {
			unix.Close(c.fd)
			c.fd = -1
		}
		l.mu.Lock()
		l.handed = append(l.handed, handoff{fd: c.fd, c: c})
		l.mu.Unlock()
		l.kick()
	}()
}

// waitFor polls c's socket for events until it is ready, its deadline passes or the
// loop aborts it.
func (c *loopConn) waitFor(events int16) error {
	for {
		if c.abort.Load() {
			return context.Canceled
		}
		left := time.Until(c.deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
		n, err := unix.Poll(fds, int(min(left, 100*time.Millisecond)/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

func (c *loopConn) writeAll(b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(c.fd, b)
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == unix.EAGAIN:
			if err := c.waitFor(unix.POLLOUT); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
	return nil
}

// blockingReader reads c's buffered bytes, then its socket, waiting as needed.
type blockingReader struct {
	c    *loopConn
	head []byte
}

func newBlockingReader(c *loopConn) *bufio.Reader {
	return bufio.NewReaderSize(&blockingReader{c: c, head: c.rbuf}, loopReadBuf)
}

func (r *blockingReader) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	for {
		n, err := syscall.Read(r.c.fd, p)
		switch {
		case err == unix.EAGAIN:
			if err := r.c.waitFor(unix.POLLIN); err != nil {
				return 0, err
			}
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

func removeConn(cs []*loopConn, c *loopConn) []*loopConn {
	for i, x := range cs {
		if x == c {
			return append(cs[:i], cs[i+1:]...)
		}
	}
	return cs
}
