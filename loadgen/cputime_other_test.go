//go:build !unix

package loadgen

import (
	"testing"
	"time"
)

// cpuTime skips the benchmark: there is no getrusage(2) here.
func cpuTime(b *testing.B) time.Duration {
	b.Skip("CPU per request needs getrusage(2), which this OS lacks")
	return 0
}
