//go:build linux

package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

const needsCitus = "PostgreSQL server binaries and Citus (scripts/install-citus.sh)"

// execSQL runs sql on a connection of its own, so that no session carries Citus' cached
// connections to a worker from one step of a test into the next.
func execSQL(ctx context.Context, dsn, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// TestCluster: a coordinator and two workers; a distributed table's shards and rows
// land on both workers; with one worker stopped a write to its shards fails and one to
// the other's succeeds; started again on its port, it takes writes again; Close stops
// all three servers.
func TestCluster(t *testing.T) {
	testtier.External(t, needsCitus)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := NewCluster(Options{Dir: stateDir(t), Fast: true}, 2)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.CreateDatabase(ctx, "dist"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "dist"); err != nil {
		t.Fatalf("second CreateDatabase: %v", err)
	}
	dsn, workers := c.DSN("dist"), c.WorkerDSNs("dist")
	if len(workers) != 2 || dsn != c.Coordinator().DSN("dist") {
		t.Fatalf("DSN %s, worker DSNs %v", dsn, workers)
	}
	pids := []int{c.Coordinator().PID(), c.Worker(0).PID(), c.Worker(1).PID()}

	// Four shards over two workers: two each (Citus places them round-robin).
	if err := execSQL(ctx, dsn, `CREATE TABLE items (id int PRIMARY KEY, v text);
		SELECT create_distributed_table('items', 'id', shard_count => 4)`); err != nil {
		t.Fatal(err)
	}
	if err := execSQL(ctx, dsn, `INSERT INTO items SELECT g, 'a' FROM generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, w := range workers {
		shards := strings.Fields(query(t, dsn, `SELECT coalesce(string_agg(shardid::text, ' '), '') FROM citus_shards
			WHERE table_name = 'items'::regclass AND nodeport = `+strconv.Itoa(c.Worker(i).Port())))
		rows := 0
		for _, id := range shards {
			rows += atoi(t, query(t, w, `SELECT count(*) FROM items_`+id))
		}
		if len(shards) != 2 || rows == 0 {
			t.Errorf("worker %d holds shards %v with %d rows, want 2 shards with rows", i, shards, rows)
		}
		total += rows
	}
	if total != 100 {
		t.Errorf("the workers hold %d rows, want 100", total)
	}
	// A worker has the metadata too and queries the other worker's shards with the
	// same credentials.
	if got := query(t, workers[0], `SELECT count(*) FROM items`); got != "100" {
		t.Errorf("worker 0 counts %s rows, want 100", got)
	}

	// An id whose shard is on worker i.
	idOn := func(i int) int {
		return atoi(t, query(t, dsn, `SELECT min(g) FROM generate_series(1, 100) g WHERE get_shard_id_for_distribution_column('items', g) IN
			(SELECT shardid FROM citus_shards WHERE table_name = 'items'::regclass AND nodeport = `+strconv.Itoa(c.Worker(i).Port())+`)`))
	}
	up, down := idOn(0), idOn(1)
	port := c.Worker(1).Port()
	if err := c.StopWorker(1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pids[2], 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("worker 1 (pid %d) still runs after StopWorker: %v", pids[2], err)
	}
	// The write fails on the connection to the stopped worker, which Citus names.
	if err := execSQL(ctx, dsn, `UPDATE items SET v = 'b' WHERE id = $1`, down); err == nil || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("a write to the stopped worker's shard: %v, want a failed connection to 127.0.0.1:%d", err, port)
	}
	if err := execSQL(ctx, dsn, `UPDATE items SET v = 'b' WHERE id = $1`, up); err != nil {
		t.Errorf("a write to the running worker's shard: %v", err)
	}
	select {
	case <-c.life.Done():
		t.Fatalf("the cluster stopped with a worker stopped on purpose: %v", c.Wait())
	default:
	}

	if err := c.StartWorker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if c.Worker(1).Port() != port {
		t.Fatalf("worker 1 came back on port %d, had %d", c.Worker(1).Port(), port)
	}
	if err := execSQL(ctx, dsn, `UPDATE items SET v = 'c' WHERE id = $1`, down); err != nil {
		t.Fatalf("a write to the restarted worker's shard: %v", err)
	}
	if err := execSQL(ctx, dsn, `INSERT INTO items SELECT g, 'a' FROM generate_series(101, 200) g`); err != nil {
		t.Fatalf("a write to every shard after the restart: %v", err)
	}
	if got := query(t, dsn, `SELECT count(*) FROM items`); got != "200" {
		t.Fatalf("%s rows, want 200", got)
	}

	pids[2] = c.Worker(1).PID()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("node %d (pid %d) still runs after Close: %v", i, pid, err)
		}
	}
}

// TestClusterLifecycle runs the conformance suite against clusters on one state
// directory; the cluster's failure is a worker ending abruptly (SIGQUIT).
func TestClusterLifecycle(t *testing.T) {
	testtier.External(t, needsCitus)
	dir := stateDir(t)
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		c := NewCluster(Options{Dir: dir, Fast: true}, 1)
		return lifecycletest.Subject{Part: c, Fail: func(t *testing.T) {
			if err := syscall.Kill(c.Worker(0).PID(), syscall.SIGQUIT); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

// TestClusterLayout: a cluster's state dir is recognised by its layout, and a Start
// on a state dir of another shape is refused.
func TestClusterLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, ok := ClusterLayout(dir); ok {
		t.Fatal("an empty dir taken for a cluster")
	}
	for _, d := range []string{"coordinator", "worker-0", "worker-1", "worker-3"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	coord, workers, ok := ClusterLayout(dir)
	if !ok || coord != filepath.Join(dir, "coordinator") || len(workers) != 2 || workers[1] != filepath.Join(dir, "worker-1") {
		t.Fatalf("ClusterLayout = %s %v %v", coord, workers, ok)
	}
	err := NewCluster(Options{Dir: dir}, 3).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cluster of 2 workers, not 3") {
		t.Errorf("Start of 3 workers on a cluster of 2 = %v", err)
	}
	single := t.TempDir()
	if err := os.WriteFile(filepath.Join(single, "port"), []byte("5432\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = NewCluster(Options{Dir: single}, 2).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "single server") {
		t.Errorf("Start on a single server's state dir = %v", err)
	}
}

// TestNoCitus: without Citus beside the server binaries, the error says how to
// install it; with its files there, the check passes.
func TestNoCitus(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "lib", "postgresql", "15", "bin")
	lib := filepath.Join(root, "usr", "lib", "postgresql", "15", "lib", "citus.so")
	control := filepath.Join(root, "usr", "share", "postgresql", "15", "extension", "citus.control")
	for _, f := range []string{lib, control} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want bool) {
		t.Helper()
		err := citusInstalled(bin)
		if want && err != nil {
			t.Errorf("citusInstalled with both files: %v", err)
		}
		if !want && (!errors.Is(err, ErrNoCitus) || !strings.Contains(err.Error(), "scripts/install-citus.sh")) {
			t.Errorf("citusInstalled = %v, want ErrNoCitus naming scripts/install-citus.sh", err)
		}
	}
	check(false)
	os.WriteFile(lib, nil, 0o644)
	check(false) // no control file yet
	os.WriteFile(control, nil, 0o644)
	check(true)
	os.Remove(lib)
	check(false)
}

// TestClusterWithoutCitus: with server binaries that have no Citus beside them, Start
// fails with ErrNoCitus and starts no node.
func TestClusterWithoutCitus(t *testing.T) {
	// Fake binaries on PATH, the Debian directory pointed at an empty one (not in
	// parallel with other tests: they read libDirGlob).
	saved := libDirGlob
	libDirGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { libDirGlob = saved })
	bin := filepath.Join(t.TempDir(), "15", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	dir := t.TempDir()
	err := NewCluster(Options{Dir: dir, Fast: true}, 1).Start(context.Background())
	if !errors.Is(err, ErrNoCitus) || !strings.Contains(err.Error(), "scripts/install-citus.sh") {
		t.Fatalf("Start = %v, want ErrNoCitus naming scripts/install-citus.sh", err)
	}
	if _, _, ok := ClusterLayout(dir); ok {
		t.Error("Start without Citus made the nodes' state dirs")
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
