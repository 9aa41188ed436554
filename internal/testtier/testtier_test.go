package testtier

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestExternal runs a child test binary with and without -short: with it the test is
// skipped with a message naming what it needs; without it the test body runs.
func TestExternal(t *testing.T) {
	if os.Getenv("TESTTIER_CHILD") == "1" {
		External(t, "a real example service")
		t.Log("body ran")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"short", []string{"-test.short"}, []string{"--- SKIP: TestExternal", "needs a real example service", "make test"}},
		{"full", nil, []string{"--- PASS: TestExternal", "body ran"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-test.run=^TestExternal$", "-test.v"}, tc.args...)
			cmd := exec.Command(exe, args...)
			cmd.Env = append(os.Environ(), "TESTTIER_CHILD=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			for _, want := range tc.wants {
				if !strings.Contains(string(out), want) {
					t.Errorf("child output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
