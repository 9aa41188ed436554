//go:build linux

package loadgen

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Go's timers wake up to a millisecond late on Linux: the runtime's poller waits in
// whole milliseconds (epoll_wait), so a timer due in 0.3 ms fires after 1 ms. In an
// open loop that lateness is send lag, added to every latency and as large as a fast
// app's response time (measured here: 0.57 ms on average for a timer, 0.06 ms for the
// wait below). The open loop's scheduler therefore waits on a timer until preciseWindow
// before a slot and sleeps the rest on its own thread, with a timer slack of 1 µs.
const preciseWindow = 1500 * time.Microsecond

// preciseThread locks the calling goroutine to its thread and sets the thread's timer
// slack to 1 µs (the kernel's default is 50 µs); the returned function undoes both.
// With one P (GOMAXPROCS 1: one core, or a generator pinned to one) it does nothing:
// a locked thread must hand that P over each time the scheduler waits and get it back
// each time it wakes, and the senders starved (at 7,000 req/s pinned to one core: p50
// 9 ms, p99 25 ms locked; 0.7 and 1.8 ms not), while the slack only trims the send lag
// by some tens of microseconds.
func preciseThread() (undo func()) {
	if runtime.GOMAXPROCS(0) < 2 {
		return func() {}
	}
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(time.Microsecond), 0, 0, 0) != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		runtime.UnlockOSThread()
	}
}

// sleepPrecisely blocks the thread for d (at most preciseWindow).
func sleepPrecisely(d time.Duration) {
	if d <= 0 {
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
