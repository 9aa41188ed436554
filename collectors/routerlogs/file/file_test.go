package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
	"github.com/cf-benchmark/cf-benchmark/internal/testrace"
)

// writeLines writes the data set's lines, with noise a router log file or `cf logs`
// output has: other sources' lines, blank lines, a line that is not an access log.
func writeLines(t *testing.T, d *routerlogstest.Dataset, cfLogs bool) string {
	t.Helper()
	var b strings.Builder
	for i, r := range d.Requests {
		if cfLogs {
			b.WriteString("   2024-03-18T23:59:59.00+0000 [RTR/0] OUT ")
		}
		b.WriteString(r.Line)
		b.WriteByte('\n')
		if i%1000 == 0 && cfLogs {
			b.WriteString("   2024-03-18T23:59:59.00+0000 [APP/PROC/WEB/0] OUT listening on 8080\n\n")
		}
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSuite(t *testing.T) {
	// A tenth of the data under -short (make check); under the race detector (make
	// test) over eight pages of 997 lines, as routerlogs/elastic's: the interrupted
	// pulls stop after 1, 3 and 2 pages and the last one ends the file.
	wanted := 60_000
	switch {
	case testing.Short():
		wanted = 6_000
	case testrace.Enabled:
		wanted = 8_000
	}
	d := routerlogstest.Generate(wanted, 7)
	for _, cfLogs := range []bool{false, true} {
		name := map[bool]string{false: "access.log", true: "cf logs output"}[cfLogs]
		t.Run(name, func(t *testing.T) {
			path := writeLines(t, d, cfLogs)
			routerlogstest.Run(t, routerlogstest.Backend{Data: d, Source: func(t *testing.T) routerlogs.Source {
				s, err := New(path, d.Apps)
				if err != nil {
					t.Fatal(err)
				}
				s.pageLines = 997 // pages that end mid-group of a millisecond
				return s
			}})
		})
	}
}

func TestUnparseableRouterLinesAreCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	text := "   2024-03-18T23:59:59.00+0000 [RTR/0] OUT garbage\n" + // a router line that does not parse
		"   2024-03-18T23:59:59.00+0000 [APP/PROC/WEB/0] OUT hello\n" + // another source: skipped
		"\n" +
		"not an access log line\n" + // a plain file's line that does not parse
		"partial line being written"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var unparseable int
	var last routerlogs.Cursor
	res, err := s.Pull(context.Background(), routerlogs.Query{}, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
		unparseable += b.Unparseable
		last = b.Next
		return nil
	})
	if err != nil || unparseable != 2 || res.Retrieved != 2 {
		t.Fatalf("unparseable %d, result %+v, %v; want 2 unparseable lines", unparseable, res, err)
	}
	// The partial last line is read once it is whole.
	if err := os.WriteFile(path, []byte(text+" and done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = s.Pull(context.Background(), routerlogs.Query{}, last, routerlogs.Budget{}, func(b routerlogs.Batch) error {
		unparseable += b.Unparseable
		return nil
	})
	if err != nil || res.Retrieved != 1 || unparseable != 3 {
		t.Fatalf("after the line was finished: %+v, %d unparseable, %v", res, unparseable, err)
	}
	// A file replaced since the cursor was made is not read from the cursor's offset.
	if err := os.WriteFile(path, []byte("another file entirely\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(context.Background(), routerlogs.Query{}, last, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil }); !errors.Is(err, ErrFileChanged) {
		t.Fatalf("a replaced file: %v, want ErrFileChanged", err)
	}
}

func TestNewRefusesWhatIsNotAFile(t *testing.T) {
	for _, p := range []string{filepath.Join(t.TempDir(), "missing.log"), t.TempDir()} {
		if _, err := New(p, nil); err == nil {
			t.Errorf("New(%s) accepted it", p)
		}
	}
}
