//go:build unix

package pgserver

import (
	"syscall"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestLifecycle runs the conformance suite against servers on one state directory, one
// after the other (the cluster is initialised once); the server's own failure is its
// postmaster ending abruptly (SIGQUIT, immediate shutdown), as in a crash.
func TestLifecycle(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	dir := stateDir(t)
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		srv := New(Options{Dir: dir, Fast: true})
		return lifecycletest.Subject{Part: srv, Fail: func(t *testing.T) {
			if !srv.Owned() {
				t.Fatal("the server was not started by this test")
			}
			if err := syscall.Kill(srv.PID(), syscall.SIGQUIT); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
