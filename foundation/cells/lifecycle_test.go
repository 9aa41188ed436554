//go:build linux

package cells

import (
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against cells with one desired instance, so
// that stopping has a process to stop.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		c := New(Config{Name: testName(t), TmpDir: t.TempDir(), StopGrace: 2 * time.Second, HealthCheckInterval: 25 * time.Millisecond})
		c.Desire(ProcessSpec{ProcessGUID: "p", Dir: t.TempDir(), Command: "sleep 300", Instances: 1, HealthCheck: HealthCheck{Type: "process"}})
		return lifecycletest.Subject{Part: c, NoFailure: "a crashed instance is restarted, never the end of the cells"}
	})
}
