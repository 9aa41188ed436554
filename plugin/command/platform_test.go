package command

import (
	"bytes"
	"context"
	"flag"
	"runtime"
	"strings"
	"testing"
)

func TestFoundationUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ goos, want string }{
		{"linux", ""},
		{"darwin", "the local foundation runs on Linux only (it runs apps in cgroups): on macOS run it in a Linux VM or container, or target a Cloud Foundry with cf login"},
		{"windows", "the local foundation runs on Linux only (it runs apps in cgroups): on Windows run it in a Linux VM or container, or target a Cloud Foundry with cf login"},
		{"freebsd", "the local foundation runs on Linux only (it runs apps in cgroups): on freebsd run it in a Linux VM or container, or target a Cloud Foundry with cf login"},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			if got := foundationUnavailable(tc.goos); got != tc.want {
				t.Errorf("foundationUnavailable(%q) = %q, want %q", tc.goos, got, tc.want)
			}
		})
	}
	// The command built for this platform says the same.
	if got, want := foundationCmd.Unavailable, foundationUnavailable(runtime.GOOS); got != want {
		t.Errorf("foundationCmd.Unavailable = %q on %s, want %q", got, runtime.GOOS, want)
	}
}

// TestExecuteUnavailable: a command that cannot run here says why in one line, before
// its flags are parsed (the other platform's flags are not declared), and never runs.
func TestExecuteUnavailable(t *testing.T) {
	t.Parallel()
	why := foundationUnavailable("darwin")
	ran := false
	c := &Command{Name: "foundation", Summary: "Run a local Cloud Foundry (Linux only)", Synopsis: "start|stop|status",
		ExampleArgs: "foundation start", Unavailable: why,
		Flags: func(*flag.FlagSet) func(context.Context, *Env, []string) error {
			return func(context.Context, *Env, []string) error { ran = true; return nil }
		}}
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"start", []string{"start", "--detach", "--cells", "apps=0"}, ExitUsage, "error: " + why + "\n"},
		{"no args", nil, ExitUsage, "error: " + why + "\n"},
		{"help", []string{"-h"}, ExitOK, "Run a local Cloud Foundry (Linux only)\n\nUsage: cf-benchmark foundation start|stop|status\n\nNot on this platform: " + why + ".\n"},
	} {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		if code := Execute(context.Background(), env, "cf-benchmark", c, tc.args); code != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.code)
		}
		if errb.String() != tc.wantStderr || out.Len() != 0 {
			t.Errorf("%s: stderr %q, stdout %q; want stderr %q", tc.name, errb.String(), out.String(), tc.wantStderr)
		}
	}
	if ran {
		t.Error("an unavailable command ran")
	}
}

func TestCFHome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		want       string
	}{
		{"CF_HOME first", "linux", map[string]string{"CF_HOME": "/cf", "HOME": "/home/u"}, "/cf"},
		{"HOME on Unix", "darwin", map[string]string{"HOME": "/Users/u", "USERPROFILE": `C:\Users\u`}, "/Users/u"},
		{"CF_HOME on Windows", "windows", map[string]string{"CF_HOME": `D:\cf`, "USERPROFILE": `C:\Users\u`}, `D:\cf`},
		{"HOMEDRIVE and HOMEPATH", "windows", map[string]string{"HOMEDRIVE": "H:", "HOMEPATH": `\u`, "USERPROFILE": `C:\Users\u`, "HOME": "/ignored"}, `H:\u`},
		{"USERPROFILE", "windows", map[string]string{"USERPROFILE": `C:\Users\u`, "HOME": "/ignored"}, `C:\Users\u`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cfHome(tc.goos, func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("cfHome(%s) = %q, want %q", tc.goos, got, tc.want)
			}
		})
	}
}

// TestHelpListsFoundation: help lists the local foundation on every platform, with
// "(Linux only)" where it cannot run.
func TestHelpListsFoundation(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printHelp(&b)
	line := ""
	for l := range strings.Lines(b.String()) {
		if strings.HasPrefix(strings.TrimSpace(l), "foundation ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("help lists no foundation command:\n%s", b.String())
	}
	if linuxOnly := strings.Contains(line, "(Linux only)"); linuxOnly != (runtime.GOOS != "linux") {
		t.Errorf("help on %s: %q", runtime.GOOS, line)
	}
}
