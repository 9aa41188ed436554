//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// built holds the programs the tests build from this module: each is built once per
// test binary, on first use, into one directory that TestMain removes. Every test used
// to build its own, the same bytes up to ten times over, each a link of 1 to 2 CPU-s
// in a stage that keeps both cores busy.
var built struct {
	mu   sync.Mutex
	dir  string          // "" until the first build
	done map[string]bool // out paths (relative to dir) built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildOnce runs go build -trimpath args -o dir/out pkg in root with env, unless a
// test of this binary did already, and returns dir/out. Each out names one build:
// callers never give one out two builds.
func buildOnce(t *testing.T, root string, env []string, out, pkg string, args ...string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "cfbench-e2e-built-")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.done = dir, map[string]bool{}
	}
	path := filepath.Join(built.dir, out)
	if built.done[out] {
		return path
	}
	args = append(append([]string{"build", "-trimpath"}, args...), "-o", path, pkg)
	res := run(t, buildTimeout, root, env, "go", args...)
	if res.err != nil || res.code != 0 {
		t.Fatalf("go build %s: exit %d, %v\n%s", pkg, res.code, res.err, res.stderr)
	}
	built.done[out] = true
	return path
}
