// Package testpg gives tests a real PostgreSQL server: one private server per test binary,
// and a fresh database per caller. Under -short (`make check`) its callers skip; otherwise
// they fail (they do not skip) when no server binaries are installed: `make test`
// installs them.
package testpg

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/pgserver"
)

var (
	once     sync.Once
	srv      *pgserver.Server
	dir      string
	startErr error
	dbs      atomic.Int64
)

func start() {
	dir, startErr = os.MkdirTemp("", "cfbench-testpg-")
	if startErr != nil {
		return
	}
	// Enterable by the unprivileged user the server runs as when tests run as root.
	if startErr = os.Chmod(dir, 0o755); startErr != nil {
		return
	}
	// The server lives until Stop; its start-up is bounded by pgserver itself.
	s := pgserver.New(pgserver.Options{Dir: dir, Fast: true})
	if startErr = s.Start(context.Background()); startErr == nil {
		srv = s
	}
}

// DSN creates a new, empty database on the shared server and returns its URL. Under
// -short it skips t.
func DSN(t testing.TB) string {
	t.Helper()
	testtier.External(t, "a real PostgreSQL server")
	once.Do(start)
	if startErr != nil {
		t.Fatalf("start test postgres: %v", startErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	return srv.DSN(name)
}

// Server returns the shared server, starting it if needed. Under -short it skips t.
func Server(t testing.TB) *pgserver.Server {
	t.Helper()
	testtier.External(t, "a real PostgreSQL server")
	once.Do(start)
	if startErr != nil {
		t.Fatalf("start test postgres: %v", startErr)
	}
	return srv
}

// Main runs the tests and then stops the server and removes its files. Use it from
// TestMain: func TestMain(m *testing.M) { testpg.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the shared server, if started, and removes its files: for a TestMain that
// also runs other shared servers (see Main).
func Stop() {
	if srv != nil {
		srv.Close()
		srv = nil
	}
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
	}
}
