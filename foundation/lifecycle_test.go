//go:build linux

package foundation

import (
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against foundations on one state directory,
// one after the other (as restarts, on the same ports). The failure is one of a part:
// the services' Postgres ends abruptly (SIGQUIT, immediate shutdown), and the
// foundation's Wait must see it, not only the API server's.
func TestLifecycle(t *testing.T) {
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	dir := stateDir(t)
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second})
		return lifecycletest.Subject{Part: f, Fail: func(t *testing.T) {
			if !f.pg.Owned() {
				t.Fatal("the services' Postgres was not started by this test")
			}
			if err := syscall.Kill(f.pg.PID(), syscall.SIGQUIT); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
