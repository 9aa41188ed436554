package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParseAndFail(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		ok   bool
	}{{nil, 0, true}, {[]string{"-n", "3"}, 0, true}, {[]string{"-h"}, 0, false}, {[]string{"-nope"}, 2, false}, {[]string{"-n", "x"}, 2, false}} {
		var out bytes.Buffer
		fs := flag.NewFlagSet("cfbench-x", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Int("n", 0, "a number")
		if code, ok := Parse(fs, tc.args); code != tc.code || ok != tc.ok {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.args, code, ok, tc.code, tc.ok)
		}
	}
	var out bytes.Buffer
	fs := flag.NewFlagSet("cfbench-x", flag.ContinueOnError)
	fs.SetOutput(&out)
	if code := Failer(fs)(errors.New("no port")); code != 1 || out.String() != "cfbench-x: no port\n" {
		t.Errorf("Failer: code %d, printed %q", code, out.String())
	}
}

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct{ port, fallback, want, err string }{
		{"8080", "", "0.0.0.0:8080", ""},
		{"8080", "127.0.0.1:9", "0.0.0.0:8080", ""},
		{"", "127.0.0.1:8080", "127.0.0.1:8080", ""},
		{"", "", "", "no port: PORT is not set"},
		{"http", "", "", `port "http" is not a port number`},
		{"0", "", "0.0.0.0:0", ""},
		{"-1", "", "", `port "-1" is not a port number`},
		{"65536", "x", "", `port "65536" is not a port number`},
	} {
		got, err := ListenAddr(tc.port, tc.fallback)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ListenAddr(%q, %q) = %q, %v; want %q, %q", tc.port, tc.fallback, got, err, tc.want, tc.err)
		}
	}
}
