//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestMain runs the command itself when a test runs it as a child process.
func TestMain(m *testing.M) {
	if os.Getenv("CFBENCH_PG_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestCitusCluster: start --citus-workers makes a cluster and prints a DSN of a
// distributed database; a plain start, status and stop recognise the cluster by its
// layout; stop ends every node.
func TestCitusCluster(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries and Citus (scripts/install-citus.sh)")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Enterable by the server's user when the test runs as root (t.TempDir is not).
	dir, err := os.MkdirTemp("", "cfbench-pg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The command in a process of its own, as scripts/pg-local.sh runs it: a detached
	// cluster outlives it, unsupervised.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := func(verb string, workers int) (int, string) {
		t.Helper()
		c := exec.CommandContext(ctx, exe, verb, "--state-dir", dir, "--db", "bench", "--citus-workers", strconv.Itoa(workers))
		c.Env = append(os.Environ(), "CFBENCH_PG_MAIN=1")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("%s: %v", verb, err)
		}
		if code := c.ProcessState.ExitCode(); code != 0 && code != 3 {
			t.Fatalf("%s: exit %d\n%s", verb, code, stderr.String())
		}
		return c.ProcessState.ExitCode(), string(out)
	}
	t.Cleanup(func() {
		c := exec.Command(exe, "stop", "--state-dir", dir)
		c.Env = append(os.Environ(), "CFBENCH_PG_MAIN=1")
		c.Run()
	})

	code, dsn := cmd("start", 2)
	dsn = strings.TrimSpace(dsn)
	if code != 0 || !strings.HasPrefix(dsn, "postgres://") {
		t.Fatalf("start: exit %d, %q", code, dsn)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var workers int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards`).Scan(&workers)
	conn.Close(ctx)
	if err != nil || workers != 2 {
		t.Fatalf("the database has %d workers (%v), want 2", workers, err)
	}
	// Started again without the flag: the running cluster, the same DSN.
	if code, again := cmd("start", 0); code != 0 || strings.TrimSpace(again) != dsn {
		t.Fatalf("second start: exit %d, %q, want %q", code, again, dsn)
	}

	code, status := cmd("status", 0)
	running := regexp.MustCompile(`(?m)^(coordinator|worker-0|worker-1): running: pid \d+`)
	if code != 0 || len(running.FindAllString(status, -1)) != 3 || !strings.Contains(status, dsn) {
		t.Fatalf("status: exit %d\n%s", code, status)
	}

	code, stopped := cmd("stop", 0)
	if code != 0 || strings.Count(stopped, "stopped ") != 3 {
		t.Fatalf("stop: exit %d\n%s", code, stopped)
	}
	if code, status := cmd("status", 0); code != 3 || strings.Contains(status, "running: pid") {
		t.Fatalf("status after stop: exit %d\n%s", code, status)
	}
	if code, out := cmd("stop", 0); code != 0 || !strings.HasPrefix(out, "not running") {
		t.Fatalf("second stop: exit %d\n%s", code, out)
	}
}
