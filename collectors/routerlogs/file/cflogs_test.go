package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
)

// TestCfLogsHeadersNameApps reads `cf logs APP --recent` output of several apps, one
// after the other, without an app map: the names come from each "Retrieving logs for
// app" header, also after a resume in the middle of a section.
func TestCfLogsHeadersNameApps(t *testing.T) {
	d := routerlogstest.Generate(3000, 11)
	var b strings.Builder
	for _, app := range []string{routerlogstest.AppShop, routerlogstest.AppCart, routerlogstest.AppNoise} {
		fmt.Fprintf(&b, "Retrieving logs for app %s in org acme / space prod as admin...\n\n", app)
		for i, r := range d.Requests {
			if r.App != app {
				continue
			}
			fmt.Fprintf(&b, "   %s [RTR/%d] OUT %s\n", r.Emitted.Format("2006-01-02T15:04:05.00-0700"), i%3, r.Line)
			if i%200 == 0 {
				fmt.Fprintf(&b, "   %s [APP/PROC/WEB/0] OUT GET /items 200\n", r.Emitted.Format("2006-01-02T15:04:05.00-0700"))
			}
		}
	}
	path := filepath.Join(t.TempDir(), "cf-logs.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	q := d.Query
	q.Apps = []string{routerlogstest.AppShop, routerlogstest.AppCart} // by name only: no GUIDs
	d.Query = q
	routerlogstest.InterruptAndResume(t, d, func(t *testing.T) routerlogs.Source {
		s, err := New(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.pageLines = 101
		return s
	}, []int{1, 4, 2}, nil)
}

// TestWindowIsInclusiveOnRequestTime puts requests exactly at the window's ends and a
// nanosecond outside them.
func TestWindowIsInclusiveOnRequestTime(t *testing.T) {
	d := routerlogstest.Generate(50, 3)
	from, to := d.Requests[10].Record.Time, d.Requests[40].Record.Time
	var want []string
	for _, r := range d.Requests {
		if !r.Record.Time.Before(from) && !r.Record.Time.After(to) {
			want = append(want, r.Record.VcapRequestID)
		}
	}
	path := writeFile(t, d.Requests)
	for name, q := range map[string]routerlogs.Query{
		"exact":  {From: from, To: to},
		"inside": {From: from.Add(time.Nanosecond), To: to.Add(-time.Nanosecond)},
	} {
		got := pullIDs(t, path, q, routerlogs.Budget{})
		n := len(want)
		if name == "inside" {
			n -= 2 // the two ends are out (request times are distinct)
		}
		if len(got) != n {
			t.Errorf("%s: %d entries, want %d", name, len(got), n)
		}
	}
}

func TestBudgetExhaustedOnlyWhenMoreFollows(t *testing.T) {
	d := routerlogstest.Generate(200, 5)
	path := writeFile(t, d.Requests)
	for _, c := range []struct {
		max       int64
		exhausted bool
	}{{50, true}, {int64(d.Wanted), false}, {int64(d.Wanted) + 1, false}} {
		s, err := New(path, d.Apps)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		res, err := s.Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{MaxDocuments: c.max}, func(b routerlogs.Batch) error {
			n += len(b.Entries)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(c.max, int64(d.Wanted)); int64(n) != want || res.Retrieved != want || res.BudgetExhausted != c.exhausted {
			t.Errorf("budget %d: %d entries, result %+v; want %d, exhausted %v", c.max, n, res, want, c.exhausted)
		}
	}
}

func writeFile(t *testing.T, reqs []routerlogstest.Request) string {
	t.Helper()
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Line + "\n")
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func pullIDs(t *testing.T, path string, q routerlogs.Query, b routerlogs.Budget) []string {
	t.Helper()
	s, err := New(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if _, err := s.Pull(context.Background(), q, routerlogs.Cursor{}, b, func(b routerlogs.Batch) error {
		for _, e := range b.Entries {
			ids = append(ids, e.VcapRequestID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestLineFinishedAfterAPull takes a whole last line before its newline is written,
// then goes on once the router has written the newline and more lines.
func TestLineFinishedAfterAPull(t *testing.T) {
	d := routerlogstest.Generate(20, 8)
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(d.Requests[0].Line), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var last routerlogs.Cursor
	n := 0
	emit := func(b routerlogs.Batch) error {
		n += len(b.Entries)
		last = b.Next
		return nil
	}
	if _, err := s.Pull(context.Background(), routerlogs.Query{}, routerlogs.Cursor{}, routerlogs.Budget{}, emit); err != nil || n != 1 {
		t.Fatalf("%d entries, %v", n, err)
	}
	var rest strings.Builder
	rest.WriteString(d.Requests[0].Line + "\n")
	for _, r := range d.Requests[1:] {
		rest.WriteString(r.Line + "\n")
	}
	if err := os.WriteFile(path, []byte(rest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(context.Background(), routerlogs.Query{}, last, routerlogs.Budget{}, emit); err != nil || n != len(d.Requests) {
		t.Fatalf("%d entries after the file grew, want %d: %v", n, len(d.Requests), err)
	}
}
