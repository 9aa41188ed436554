//go:build !linux

package loadgen

import "time"

// Elsewhere the open loop waits on Go's timers alone (see pace_linux.go).
const preciseWindow = time.Duration(0)

func preciseThread() (undo func()) { return func() {} }

func sleepPrecisely(time.Duration) {}
