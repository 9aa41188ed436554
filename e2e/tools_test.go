//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// installedTool runs one of the project's install scripts (scripts/install-tofu.sh,
// install-bosh-cli.sh: they build once per machine and print the cached binary's path)
// and returns the binary.
func installedTool(t *testing.T, root, script string) string {
	t.Helper()
	testtier.External(t, "tools built by "+script)
	res := run(t, buildTimeout, root, os.Environ(), filepath.Join(root, "scripts", script))
	path := strings.TrimSpace(res.stdout)
	if res.err != nil || res.code != 0 || !filepath.IsAbs(path) {
		t.Fatalf("scripts/%s: exit %d, %v, printed %q\n%s", script, res.code, res.err, res.stdout, res.stderr)
	}
	return path
}

// sharedDir returns the shared folder of pinned public material beside the checkout
// (../shared, as the project's docs name it: tools/terraform-mirror, data/), found by
// walking up from the module root so that it is found from a worktree too;
// CFBENCH_SHARED overrides. The material is never copied into the project.
func sharedDir(t *testing.T, root string) string {
	t.Helper()
	if d := os.Getenv("CFBENCH_SHARED"); d != "" {
		return d
	}
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "shared", "data", "README.md")); err == nil {
			return filepath.Join(dir, "shared")
		}
		if dir == filepath.Dir(dir) {
			t.Fatalf("no shared/data/README.md in any folder above %s: set CFBENCH_SHARED to the shared folder (tools/terraform-mirror, data/)", root)
		}
	}
}
