// Package testpg gives tests a real PostgreSQL server: one private server per test binary,
// and a fresh database per caller. Under -short (`make check`) its callers skip; otherwise
// they fail (they do not skip) when no server binaries are installed: `make test`
// installs them.
package testpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

var (
	once     sync.Once
	srv      *pgserver.Server
	dir      string
	startErr error
	dbs      atomic.Int64
	// inMain is set by Main: without it the server and its files would outlive the
	// test binary.
	inMain bool
)

func start() {
	if !inMain {
		startErr = errors.New("the package's TestMain must run its tests with testpg.Main, which stops the shared server and removes its files")
		return
	}
	if dir, startErr = reachableDir("cfbench-testpg-"); startErr != nil {
		return
	}
	// The server lives until Stop; its start-up is bounded by pgserver itself.
	s := pgserver.New(pgserver.Options{Dir: dir, Fast: true})
	if startErr = s.Start(context.Background()); startErr == nil {
		srv = s
	}
}

// reachableDir creates a directory under the temp dir that the unprivileged user a
// server runs as when tests run as root can enter.
func reachableDir(prefix string) (string, error) {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(d, 0o755); err != nil {
		os.RemoveAll(d)
		return "", err
	}
	return d, nil
}

// Dir returns a directory, removed when t ends, for state whose PostgreSQL server runs
// as another user when tests run as root. A t.TempDir is private to root: a server
// with its state there would keep its cluster under pgserver's fallback directory,
// which nothing removes.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := reachableDir("cfbench-pgstate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
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

// Main runs the tests and then stops the server and removes its files, then calls
// each of also (other shared servers' stops). A package whose tests use the server must
// use it from TestMain: func TestMain(m *testing.M) { testpg.Main(m) }.
func Main(m *testing.M, also ...func()) {
	inMain = true
	code := m.Run()
	stop()
	for _, f := range also {
		f()
	}
	os.Exit(code)
}

// stop stops the shared server, if started, and removes its files.
func stop() {
	if srv != nil {
		srv.Close()
		srv = nil
	}
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
	}
}
