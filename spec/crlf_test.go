package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// crlf is text as a Windows editor saves it.
func crlf(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }

// A spec saved on Windows (CRLF line ends) means what it means with LF ends, and its
// errors point at the same lines.
func TestCRLFSpecsReadAsLF(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.yml")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lf, lfErr := Parse(p, b, filepath.Dir(p))
		cr, crErr := Parse(p, crlf(b), filepath.Dir(p))
		if (lfErr == nil) != (crErr == nil) || (lfErr != nil && lfErr.Error() != crErr.Error()) {
			t.Errorf("%s: LF err %v, CRLF err %v", p, lfErr, crErr)
			continue
		}
		if !reflect.DeepEqual(lf, cr) {
			t.Errorf("%s: the CRLF spec differs from the LF one", p)
		}
	}
	bad := []byte("version: 1\nname: x\nvariants:\n  - name: a\n    url: http://127.0.0.1:1\nworkload:\n  model: closed\n  users: -4\n  requests: [{path: /}]\nramp: {start: 1, step: 1, max: 1, hold: 1s}\n")
	_, lfErr := Parse("s.yml", bad, ".")
	_, crErr := Parse("s.yml", crlf(bad), ".")
	if lfErr == nil || crErr == nil || lfErr.Error() != crErr.Error() || !strings.Contains(crErr.Error(), "s.yml:8:") {
		t.Errorf("LF err %v, CRLF err %v; want the same error at line 8", lfErr, crErr)
	}
}
