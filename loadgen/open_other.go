//go:build !linux

package loadgen

import (
	"context"
	"sync/atomic"
	"time"
)

// minTick is the Linux event loop's shortest tick; the benchmarks' TestMain sets it
// from LOADGEN_MIN_TICK on every OS, and nothing reads it here.
var minTick = 100 * time.Microsecond

// Elsewhere the open loop runs on a scheduler goroutine and senders (RunOpen); the
// event loop is Linux's (open_linux.go).
type loopPool struct{}

func (*loopPool) closeAll() {}

func (g *Generator) runOpenLoop(context.Context, Phase) bool { return false }

func (g *Generator) runClosedLoop(context.Context, Phase, int, *atomic.Int64) bool { return false }
