// Package testpg gives tests a real PostgreSQL server: one private server per test binary,
// and a fresh database per caller; likewise a Citus cluster (a coordinator and two
// workers) and a fresh distributed database per caller. Under -short (`make check`) its
// callers skip; otherwise they fail (they do not skip) when no server binaries, or no
// Citus, are installed: `make test` installs them.
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

	citusOnce sync.Once
	cluster   *pgserver.Cluster
	citusDir  string
	citusErr  error
)

// citusWorkers is the shared cluster's size: the least that shows shards spread.
const citusWorkers = 2

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

func startCitus() {
	if !inMain {
		citusErr = errors.New("the package's TestMain must run its tests with testpg.Main, which stops the shared Citus cluster and removes its files")
		return
	}
	if citusDir, citusErr = reachableDir("cfbench-testcitus-"); citusErr != nil {
		return
	}
	// Its nodes are copies of the template cluster; it lives until Stop.
	c := pgserver.NewCluster(pgserver.Options{Dir: citusDir, Fast: true}, citusWorkers)
	if citusErr = c.Start(context.Background()); citusErr == nil {
		cluster = c
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
// -short it skips t. With CFBENCH_TEST_STORE=citus in the environment it is CitusDSN:
// a package's tests then run against the distributed schema.
func DSN(t testing.TB) string {
	t.Helper()
	if os.Getenv("CFBENCH_TEST_STORE") == "citus" {
		return CitusDSN(t)
	}
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

// CitusDSN creates a new, empty distributed database on the shared Citus cluster (every
// node has it with the extension, the workers are registered: create_distributed_table
// spreads shards over both) and returns its URL on the coordinator. Under -short it
// skips t.
func CitusDSN(t testing.TB) string {
	t.Helper()
	c := Citus(t)
	name := fmt.Sprintf("c%d_%d", os.Getpid(), dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.CreateDatabase(ctx, name); err != nil {
		t.Fatalf("create test database on the Citus cluster: %v", err)
	}
	return c.DSN(name)
}

// Citus returns the shared Citus cluster of two workers, starting it if needed. Under
// -short it skips t.
func Citus(t testing.TB) *pgserver.Cluster {
	t.Helper()
	testtier.External(t, "a real Citus cluster (scripts/install-citus.sh)")
	citusOnce.Do(startCitus)
	if citusErr != nil {
		t.Fatalf("start test Citus cluster: %v", citusErr)
	}
	return cluster
}

// Main runs the tests and then stops the server and the Citus cluster and removes their
// files, then calls each of also (other shared servers' stops). A package whose tests use the server must
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

// stop stops the shared server and cluster, if started, and removes their files.
func stop() {
	if srv != nil {
		srv.Close()
		srv = nil
	}
	if cluster != nil {
		cluster.Close()
		cluster = nil
	}
	for _, d := range []*string{&dir, &citusDir} {
		if *d != "" {
			os.RemoveAll(*d)
			*d = ""
		}
	}
}
