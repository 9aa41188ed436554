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

// TestFoundationDetachPassesTheTokenAndRateLimitFlags: the background foundation gets
// the token lifetimes and the rate limit it was started with, a bool flag as
// --name=value (a separate "true" would end its flags).
func TestFoundationDetachPassesTheTokenAndRateLimitFlags(t *testing.T) {
	var args []string
	spawn := func(a, _ []string, _ string) (int, error) {
		args = a
		return 0, errors.New("stop here")
	}
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now, Spawn: spawn}
	Main(context.Background(), env, []string{"foundation", "start", "--detach", "--state-dir", t.TempDir(),
		"--access-token-ttl", "20s", "--refresh-token-ttl", "1h", "--rate-limit", "50/1m", "--rate-limit-admins"})
	if args == nil {
		t.Fatalf("nothing spawned: %s", errb.String())
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"--access-token-ttl 20s", "--refresh-token-ttl 1h0m0s", "--rate-limit 50/1m", "--rate-limit-admins=true"} {
		if !strings.Contains(got, want) {
			t.Errorf("spawned with %q: want %s", args, want)
		}
	}
	if slices.Contains(args, "true") {
		t.Errorf("spawned with %q: a bool flag's value apart", args)
	}
}

// TestFoundationStartRefusesBadSettings: a lifetime under a second or a rate limit
// that is not N/DURATION is a usage error, before anything starts.
func TestFoundationStartRefusesBadSettings(t *testing.T) {
	for _, flags := range [][]string{
		{"--access-token-ttl", "0s"}, {"--refresh-token-ttl", "500ms"}, {"--rate-limit", "2000"}, {"--rate-limit", "10/0s"},
	} {
		spawned := false
		spawn := func([]string, []string, string) (int, error) { spawned = true; return 0, errors.New("stop here") }
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now, Spawn: spawn}
		code := Main(context.Background(), env, append([]string{"foundation", "start", "--detach", "--state-dir", t.TempDir()}, flags...))
		if code != ExitUsage || spawned {
			t.Errorf("%v: exit %d (spawned %v), want a usage error; stderr %s", flags, code, spawned, errb.String())
		}
	}
}
