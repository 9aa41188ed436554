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
type slotClock struct {
	f *os.File // nil: no timerfd here, Go's timers alone
}

func newSlotClock() *slotClock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &slotClock{}
	}
	return &slotClock{f: os.NewFile(uintptr(fd), "slot-clock")}
}

// sleepUntil returns at t (at once if t has passed).
func (c *slotClock) sleepUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	if c.f == nil {
		time.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := c.settime(&spec); err != nil {
		time.Sleep(d)
		return
	}
	var buf [8]byte
	c.f.SetReadDeadline(t)
	if _, err := c.f.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		time.Sleep(time.Until(t))
	}
}

func (c *slotClock) settime(spec *unix.ItimerSpec) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), 0, spec, nil) }); err != nil {
		return err
	}
	return serr
}

func (c *slotClock) close() {
	if c.f != nil {
		c.f.Close()
	}
}
