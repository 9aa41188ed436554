package accesslog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// seed adds every line of the testdata logs to f's corpus.
func seed(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(modernLine))
	f.Add([]byte(`   2020-07-06T10:45:55.83-0700 [RTR/0] OUT ` + modernLine))
}

// checkResult holds for every parser: an error is a *ParseError pointing into the
// line, and a Record comes only without one.
func checkResult(t *testing.T, line []byte, r Record, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *ParseError", err)
	}
	if pe.Column < 1 || pe.Column > len(line)+1 {
		t.Fatalf("column %d outside a line of %d bytes", pe.Column, len(line))
	}
	if !reflect.DeepEqual(r, Record{}) {
		t.Fatalf("a failed parse returned %+v", r)
	}
}

func FuzzParseGorouter(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseGorouter(line)
		checkResult(t, line, r, err)
		if err != nil {
			return
		}
		if r.ResponseTime < 0 || r.Status < 0 || r.Status > 999 || r.BytesSent < 0 {
			t.Fatalf("impossible values %+v", r)
		}
		// The `cf logs` prefix changes nothing but the columns.
		if cfLogsPrefix(line) > 0 {
			return // carries one already
		}
		r2, err := ParseGorouter(append([]byte("2020-07-06T10:45:55.83-0700 [RTR/0] OUT "), line...))
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("with a cf logs prefix: %v\n%+v\nvs %+v", err, r2, r)
		}
	})
}

func FuzzParseCommon(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseCommon(line)
		checkResult(t, line, r, err)
	})
}

func FuzzParseCombined(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseCombined(line)
		checkResult(t, line, r, err)
		if err == nil {
			// A combined line is a common line with more fields.
			if _, err := ParseCommon(line); err != nil {
				t.Fatalf("combined parses but common does not: %v", err)
			}
		}
	})
}
