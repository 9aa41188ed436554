package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
)

// stderrCopy receives what chisel's forked loggers print: they write to os.Stderr,
// which TestMain replaces with a pipe before any of them exists.
var stderrCopy testlog.Buffer

func TestMain(m *testing.M) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	orig := os.Stderr
	os.Stderr = w
	go io.Copy(io.MultiWriter(&stderrCopy, orig), r)
	testpg.Main(m)
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestDispatch: cfbench runs the program its first argument names, and refuses to start
// one pushed by a plugin of another version before the program does anything.
func TestDispatch(t *testing.T) {
	for _, c := range []struct {
		name       string
		args       []string
		env        map[string]string
		code       int
		out, err   string // substrings of stdout and stderr
		notInError string
	}{
		{"no command", nil, nil, 2, "", "Usage: cfbench drain|relay|tunnel|worker|version", ""},
		{"help", []string{"-h"}, nil, 0, "", "Usage: cfbench", ""},
		{"unknown command", []string{"generator"}, nil, 2, "", `cfbench: unknown command "generator"`, ""},
		{"version", []string{"version"}, nil, 0, "v1.2.3\n", "", ""},
		// The relay without its configuration fails in its own words: it was reached.
		{"a program", []string{"relay"}, nil, 1, "", "cfbench relay: no port", ""},
		{"pushed by this version", []string{"relay"}, map[string]string{"CFBENCH_VERSION": "v1.2.3"}, 1, "", "cfbench relay: no port", ""},
		{"pushed by another version", []string{"relay", "--port", "8080"}, map[string]string{"CFBENCH_VERSION": "v1.3.0"}, 1, "",
			"cfbench relay: this program is cf-benchmark v1.2.3, but the plugin that pushed it is v1.3.0", "CFBENCH_RELAY_TOKEN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), c.args, env(c.env), "host", &stdout, &stderr, "v1.2.3")
			if code != c.code || !strings.Contains(stdout.String(), c.out) || !strings.Contains(stderr.String(), c.err) ||
				(c.notInError != "" && strings.Contains(stderr.String(), c.notInError)) {
				t.Errorf("cfbench %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					c.args, code, stdout.String(), stderr.String(), c.code, c.out, c.err)
			}
		})
	}
}
