//go:build !unix

package stub

import "time"

// threadCPU reports no thread clock here, so work falls back to wall time.
func threadCPU() (time.Duration, bool) { return 0, false }
