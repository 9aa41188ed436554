//go:build !unix

package stub

import (
	"testing"
	"time"
)

// processCPU skips the test: there is no getrusage(2) here, and work falls back to
// wall time without a thread CPU clock.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	t.Skip("process CPU time needs getrusage(2), which this OS lacks")
	return 0
}
