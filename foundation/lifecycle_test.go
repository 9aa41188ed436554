//go:build linux

package foundation

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against foundations on one state directory,
// one after the other (as restarts, on the same ports). The failure is one of a part:
// the services' Postgres ends abruptly (SIGQUIT, immediate shutdown) and cannot come
// back (its cluster claims another major version), and the foundation's Wait must see
// it once the restarts are used up, not only the API server's.
func TestLifecycle(t *testing.T) {
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	dir := stateDir(t)
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second})
		return lifecycletest.Subject{Part: f, Fail: func(t *testing.T) {
			if !f.pg.server().Owned() {
				t.Fatal("the services' Postgres was not started by this test")
			}
			// Read only at start: every restart refuses the cluster from here on.
			version := filepath.Join(f.pg.server().DataDir(), "PG_VERSION")
			was, err := os.ReadFile(version)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(version, []byte("1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(version, was, 0o600) }) // for the next subtest's foundation
			if err := syscall.Kill(f.pg.server().PID(), syscall.SIGQUIT); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
