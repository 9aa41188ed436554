package command

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFoundationDetachKeepsTheESPasswordOffTheCommandLine: the background foundation
// gets --es-url through its environment, which only its user can read, not its
// command line, which every user of the machine can.
func TestFoundationDetachKeepsTheESPasswordOffTheCommandLine(t *testing.T) {
	const esURL = "http://elastic:pw-s3cret@127.0.0.1:1"
	var args, childEnv []string
	spawn := func(a, e []string, _ string) (int, error) {
		args, childEnv = a, e
		return 0, errors.New("stop here")
	}
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now, Spawn: spawn}
	Main(context.Background(), env, []string{"foundation", "start", "--detach", "--state-dir", t.TempDir(), "--es-url", esURL, "--metrics-interval", "1s"})
	if args == nil {
		t.Fatalf("nothing spawned: %s", errb.String())
	}
	if strings.Contains(strings.Join(args, " "), "pw-s3cret") || !slices.Contains(args, "--metrics-interval") {
		t.Errorf("spawned with %q: want the other flags, and no password", args)
	}
	if !slices.Equal(childEnv, []string{esURLEnv + "=" + esURL}) {
		t.Errorf("spawned with environment %q, want %s=%s", childEnv, esURLEnv, esURL)
	}
}
