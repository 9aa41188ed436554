//go:build linux

package foundation

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestLifecycle runs the conformance suite against foundations on one state directory,
// one after the other (as restarts, on the same ports). The failure is one of a part:
// the services' Postgres dies for good (killPostgresForGood), and the foundation's Wait
// must see it once the restarts are used up, not only the API server's.
func TestLifecycle(t *testing.T) {
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	dir := testpg.Dir(t)
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true})
		return lifecycletest.Subject{Part: f, Fail: func(t *testing.T) { killPostgresForGood(t, f.pg.server()) }}
	})
}

// TestServicesPGLifecycle runs the conformance suite against the services' Postgres
// alone; its own failure is a server that dies and cannot be started again.
func TestServicesPGLifecycle(t *testing.T) {
	testtier.External(t, "a real PostgreSQL server")
	dir := filepath.Join(testpg.Dir(t), "pg")
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		pg := newServicesPG(pgserver.Options{Dir: dir, Fast: true}, slog.New(slog.DiscardHandler))
		return lifecycletest.Subject{Part: pg, Fail: func(t *testing.T) { killPostgresForGood(t, pg.server()) }}
	})
}

// killPostgresForGood ends srv abruptly (SIGQUIT, immediate shutdown) after making its
// cluster claim another major version, so that every restart refuses it; the test's
// cleanup gives the cluster its version back for the next subtest.
func killPostgresForGood(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	if !srv.Owned() {
		t.Fatal("the services' Postgres was not started by this test")
	}
	// Read only at start: every restart refuses the cluster from here on.
	version := filepath.Join(srv.DataDir(), "PG_VERSION")
	was, err := os.ReadFile(version)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(version, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(version, was, 0o600) })
	if err := syscall.Kill(srv.PID(), syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
}
