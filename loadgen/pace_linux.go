//go:build linux

package loadgen

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Go's timers wake up to a millisecond late on Linux when nothing else runs: the
// runtime's poller then waits in whole milliseconds (epoll_wait), so a timer due in
// 0.3 ms fires after 1 ms. In an open loop that lateness is send lag, added to every
// latency and as large as a fast app's response time (measured: 0.57 ms on average
// for a timer). The open loop's scheduler therefore waits on a Go timer until
// preciseWindow before a slot and the rest on a slotClock.
const preciseWindow = 1500 * time.Microsecond

// slotClock waits for a moment within microseconds without holding a P: a timerfd
// (an hrtimer without slack) read through the runtime's poller, which it wakes the
// moment it expires, with a read deadline at the same moment, which the runtime's
// timers meet when it is busy and polls the network less often. An earlier design
// slept the window in nanosleep on the scheduler's locked thread: a goroutine in a
// syscall keeps its P until the runtime's monitor takes it back (after 20 µs to
// 10 ms), so with one P (a generator on one core) no sender ran and no response was
// read meanwhile, and the open loop held 6,500 req/s at p99 < 10 ms against oha's
// 60,000.
//
// Slots closer than preciseWindow or the open loop's tick are waited for on a periodic
// timer (tickEvery), armed once per rate rather than once per slot: arming a timer is
// a system call, and on a virtual machine it also exits to the hypervisor (measured: a
// fifth of the open loop's CPU at 20,000 req/s when armed per slot).
type slotClock struct {
	f *os.File // nil: no timerfd here, Go's timers alone

	every time.Duration // the armed periodic timer's period; 0 when it is not ticking
	tick  time.Time     // one of its ticks: they are tick + n*every
}

func newSlotClock() *slotClock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &slotClock{}
	}
	return &slotClock{f: os.NewFile(uintptr(fd), "slot-clock")}
}

// tickSlack is how far after each slot the periodic timer ticks, so that the tick
// never comes before its slot by Go's clock (the two clocks are matched to within
// the time of reading both).
const tickSlack = 2 * time.Microsecond

// sleepUntil returns at t (at once if t has passed). With every > 0 the clock ticks
// every `every` from t on (armed once for many waits, until idle), and this and later
// waits return on the first tick at or after their t: slots less than every apart go
// out together, each still late only from its own t.
func (c *slotClock) sleepUntil(t time.Time, every time.Duration) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if c.f == nil {
		time.Sleep(d)
		return
	}
	wake := t
	if every <= 0 {
		c.every = 0
		if err := c.settime(&unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, 0); err != nil {
			time.Sleep(d)
			return
		}
	} else {
		if every != c.every {
			// Ticks on t's grid, as absolute times on the timer's clock: Go's clock is
			// read first, so that the match errs late, never early.
			before := time.Now()
			var now unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
				time.Sleep(d)
				return
			}
			first := unix.NsecToTimespec(now.Nano() + int64(t.Sub(before)+tickSlack))
			spec := unix.ItimerSpec{Value: first, Interval: unix.NsecToTimespec(int64(every))}
			if err := c.settime(&spec, unix.TFD_TIMER_ABSTIME); err != nil {
				time.Sleep(d)
				return
			}
			c.every, c.tick = every, t
		}
		wake = c.next(t, every).Add(tickSlack)
	}
	var buf [8]byte
	c.f.SetReadDeadline(wake)
	for {
		_, err := c.f.Read(buf[:])
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(time.Until(t))
			return
		}
		// A periodic timer may have ticked while nobody waited (its count is then
		// read at once): wait for the next.
		if err != nil || !time.Now().Before(t) {
			return
		}
	}
}

// next is when the clock, ticking every `every`, releases a wait for t: its first tick
// at or after t; t itself when it ticks at another period or not at all (sleepUntil
// then arms it on t).
func (c *slotClock) next(t time.Time, every time.Duration) time.Time {
	if every <= 0 || every != c.every {
		return t
	}
	if n := t.Sub(c.tick); n > 0 {
		return c.tick.Add((n + every - 1) / every * every)
	}
	return t
}

// idle stops a periodic timer while nothing waits for it, so that its ticks do not
// wake the process (the open loop's scheduler blocked on MaxInFlight, or paused).
func (c *slotClock) idle() {
	if c.f == nil || c.every == 0 {
		return
	}
	c.every = 0
	c.settime(&unix.ItimerSpec{}, 0)
}

func (c *slotClock) settime(spec *unix.ItimerSpec, flags int) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), flags, spec, nil) }); err != nil {
		return err
	}
	return serr
}

func (c *slotClock) close() {
	if c.f != nil {
		c.f.Close()
	}
}
