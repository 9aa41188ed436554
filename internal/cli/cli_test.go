package cli

import (
	"bytes"
	"errors"
	"flag"
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
