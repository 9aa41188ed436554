//go:build !linux

package loadgen

import "time"

// Elsewhere the open loop waits on Go's timers alone (see pace_linux.go).
const preciseWindow = time.Duration(0)

type slotClock struct{}

func newSlotClock() *slotClock { return &slotClock{} }

func (*slotClock) sleepUntil(time.Time, time.Duration) {}

func (*slotClock) next(t time.Time, _ time.Duration) time.Time { return t }

func (*slotClock) idle() {}

func (*slotClock) close() {}
