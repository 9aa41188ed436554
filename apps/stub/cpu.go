package stub

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// work burns d of CPU time on the calling goroutine's thread, or less when ctx ends.
// It counts CPU time, not wall time: a request that needs 5 ms of CPU takes longer
// when its cell is busy, as real work does, and costs the same CPU either way.
func work(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	runtime.LockOSThread() // the thread's CPU clock must be the one that spins
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		return spin(ctx, time.Now().Add(d)) // no thread clock: wall time is the next best
	}
	for {
		for range 1000 {
			sink++
		}
		now, _ := threadCPU()
		if now-start >= d {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// sink keeps the busy loops from being optimised away. Racy by design: only the CPU
// the increments cost matters, never the value.
var sink uint64

// spin keeps a thread busy until the wall clock reaches end or ctx ends.
func spin(ctx context.Context, end time.Time) bool {
	for time.Now().Before(end) {
		for range 10000 {
			sink++
		}
		if ctx.Err() != nil {
			return false
		}
	}
	return true
}

// burn is a noisy neighbour: from after after the first request the stub serves, it
// keeps cores threads busy for length (0: until the process ends). Its methods may be
// called concurrently.
type burn struct {
	cores         int
	after, length time.Duration
	once          sync.Once
}

// start begins the burn's clock; calls after the first do nothing.
func (b *burn) start() {
	if b.cores <= 0 {
		return
	}
	b.once.Do(func() {
		// Every burning thread needs a P, and the server one more to keep answering.
		if runtime.GOMAXPROCS(0) <= b.cores {
			runtime.GOMAXPROCS(b.cores + 1)
		}
		time.AfterFunc(b.after, func() {
			end := time.Now().Add(b.length)
			if b.length <= 0 {
				end = time.Now().Add(100 * 365 * 24 * time.Hour)
			}
			for range b.cores {
				go func() {
					runtime.LockOSThread()
					spin(context.Background(), end)
				}()
			}
		})
	})
}
