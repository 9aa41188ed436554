package routerlogstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// Backend is an implementation under test.
type Backend struct {
	// Source returns a Source over Data; the suite calls it for every pull that stands
	// for a new process (a resume).
	Source func(t *testing.T) routerlogs.Source
	Data   *Dataset
	// Total says whether a pull from the beginning reports Result.Total.
	Total bool
	// Requests says whether Result.Requests counts requests.
	Requests bool
}

// Run runs the suite: complete retrieval of the data set's window, a budget, pulls
// interrupted and resumed from stored cursors, cancellation, an empty window and a
// foreign cursor. The subtests run in parallel and only read.
func Run(t *testing.T, b Backend) {
	t.Run("Complete", func(t *testing.T) {
		t.Parallel()
		c := NewCollector(b.Data)
		res, err := b.Source(t).Pull(context.Background(), b.Data.Query, routerlogs.Cursor{}, routerlogs.Budget{}, c.Emit)
		if err != nil {
			t.Fatal(err)
		}
		c.CheckComplete(t)
		if res.Retrieved != int64(b.Data.Wanted) || res.BudgetExhausted {
			t.Errorf("result %+v, want %d retrieved, budget not exhausted", res, b.Data.Wanted)
		}
		if b.Total && res.Total != int64(b.Data.Wanted) {
			t.Errorf("Total = %d, want %d", res.Total, b.Data.Wanted)
		}
		if !b.Total && res.Total != -1 {
			t.Errorf("Total = %d, want -1 (unknown)", res.Total)
		}
		if b.Requests && res.Requests < 2 {
			t.Errorf("Requests = %d for %d entries", res.Requests, c.Entries())
		}
	})

	t.Run("BudgetThenResume", func(t *testing.T) {
		t.Parallel()
		// 50,000 of 200,000; a quarter of smaller data sets.
		max := min(50_000, b.Data.Wanted/4)
		if max == 0 {
			t.Skip("the data set is too small")
		}
		c := NewCollector(b.Data)
		c.IDsOnly = true
		res, err := b.Source(t).Pull(context.Background(), b.Data.Query, routerlogs.Cursor{}, routerlogs.Budget{MaxDocuments: int64(max)}, c.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if res.Retrieved != int64(max) || !res.BudgetExhausted || c.Entries() != max {
			t.Fatalf("result %+v with %d entries emitted, want exactly %d and the budget exhausted", res, c.Entries(), max)
		}
		c.CheckNoDuplicates(t)
		res, err = b.Source(t).Pull(context.Background(), b.Data.Query, Stored(t, c.Last()), routerlogs.Budget{}, c.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if res.Retrieved != int64(b.Data.Wanted-max) || res.BudgetExhausted {
			t.Errorf("resumed pull: %+v, want %d retrieved", res, b.Data.Wanted-max)
		}
		c.CheckComplete(t)
	})

	t.Run("InterruptAndResume", func(t *testing.T) {
		t.Parallel()
		InterruptAndResume(t, b.Data, b.Source, []int{1, 3, 2, 5}, nil)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		batches := 0
		_, err := b.Source(t).Pull(ctx, b.Data.Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error {
			batches++
			if batches == 2 {
				cancel()
			}
			if batches > 2 {
				return errors.New("a batch after the context ended")
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Pull = %v after cancel, want context.Canceled", err)
		}
	})

	t.Run("EmptyWindow", func(t *testing.T) {
		t.Parallel()
		q := b.Data.Query
		q.From, q.To = WindowStart.Add(-72*time.Hour), WindowStart.Add(-71*time.Hour)
		c := NewCollector(b.Data)
		res, err := b.Source(t).Pull(context.Background(), q, routerlogs.Cursor{}, routerlogs.Budget{}, c.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if c.Entries() != 0 || res.Retrieved != 0 || res.BudgetExhausted {
			t.Errorf("%d entries, result %+v from an empty window", c.Entries(), res)
		}
		if b.Total && res.Total != 0 {
			t.Errorf("Total = %d, want 0", res.Total)
		}
	})

	t.Run("ForeignCursor", func(t *testing.T) {
		t.Parallel()
		cur, err := routerlogs.NewCursor(map[string]any{"source": "elsewhere", "x": 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Source(t).Pull(context.Background(), b.Data.Query, cur, routerlogs.Budget{}, func(routerlogs.Batch) error {
			return errors.New("emitted from a foreign cursor")
		})
		if !errors.Is(err, routerlogs.ErrCursorMismatch) {
			t.Fatalf("Pull from a foreign cursor = %v, want ErrCursorMismatch", err)
		}
	})
}

// errInterrupt is what an interrupting emit returns.
var errInterrupt = errors.New("interrupted by the test")

// InterruptAndResume pulls d's window in pulls that emit refuses after stops[i]
// batches (the last stop repeating), each resumed by a new Source from the JSON of
// the last accepted cursor, until one completes; between pulls it calls between (if
// not nil). The union must be complete, without duplicates.
func InterruptAndResume(t *testing.T, d *Dataset, source func(t *testing.T) routerlogs.Source, stops []int, between func(t *testing.T)) {
	t.Helper()
	c := NewCollector(d)
	c.IDsOnly = true
	cur := routerlogs.Cursor{}
	for pull := 0; ; pull++ {
		if pull > 1000 {
			t.Fatal("no end after 1000 pulls")
		}
		stop := stops[min(pull, len(stops)-1)]
		n := 0
		_, err := source(t).Pull(context.Background(), d.Query, cur, routerlogs.Budget{}, func(b routerlogs.Batch) error {
			if n == stop {
				return errInterrupt
			}
			n++
			return c.Emit(b)
		})
		if err == nil {
			break
		}
		if !errors.Is(err, errInterrupt) {
			t.Fatalf("pull %d: %v", pull, err)
		}
		cur = Stored(t, c.Last())
		if between != nil {
			between(t)
		}
	}
	c.CheckComplete(t)
}

// Stored returns c after a round trip through JSON, as the results database stores it.
func Stored(t testing.TB, c routerlogs.Cursor) routerlogs.Cursor {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back routerlogs.Cursor
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("cursor %s: %v", b, err)
	}
	return back
}

// Collector checks the entries a pull emits against a data set: each must be a wanted
// request, read exactly as its line parses, and come once.
type Collector struct {
	d *Dataset

	mu          sync.Mutex
	seen        map[string]int
	entries     int
	unparseable int
	last        routerlogs.Cursor
	errs        []string
	// Compare, when set, replaces the comparison of an entry's Record with its line's.
	Compare func(got, want *accesslog.Record) string
	// IDsOnly skips comparing records: for tests about which entries come, not what
	// they hold (a full comparison costs much under the race detector).
	IDsOnly bool
}

// NewCollector returns a Collector for d.
func NewCollector(d *Dataset) *Collector {
	return &Collector{d: d, seen: make(map[string]int, d.Wanted)}
}

// Emit takes a batch; use it as Pull's emit.
func (c *Collector) Emit(b routerlogs.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.Next.IsZero() {
		c.fail("a batch with a zero Next cursor")
	}
	c.last = b.Next
	c.unparseable += b.Unparseable
	for i := range b.Entries {
		e := &b.Entries[i]
		c.entries++
		id := e.VcapRequestID
		c.seen[id]++
		req, ok := c.d.ByID[id]
		switch {
		case !ok:
			c.fail("entry with unknown vcap_request_id %q", id)
			continue
		case !req.Wanted:
			c.fail("entry %s is not wanted (app %s, emitted %v)", id, req.App, req.Emitted)
		case e.App != req.App, e.AppGUID != req.AppGUID:
			c.fail("entry %s: app %q %q, want %q %q", id, e.App, e.AppGUID, req.App, req.AppGUID)
		}
		if c.IDsOnly {
			continue
		}
		compare := c.Compare
		if compare == nil {
			compare = RecordDiff
		}
		if diff := compare(&e.Record, &req.Record); diff != "" {
			c.fail("entry %s: %s", id, diff)
		}
	}
	return nil
}

func (c *Collector) fail(format string, args ...any) {
	if len(c.errs) < 10 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

// Last is the Next cursor of the last batch taken.
func (c *Collector) Last() routerlogs.Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Entries counts the entries taken.
func (c *Collector) Entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries
}

// CheckNoDuplicates fails t for entries that came twice or did not fit.
func (c *Collector) CheckNoDuplicates(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Error(e)
	}
	dups := 0
	for id, n := range c.seen {
		if n > 1 {
			if dups < 5 {
				t.Errorf("vcap_request_id %s emitted %d times", id, n)
			}
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("%d requests emitted more than once", dups)
	}
}

// CheckComplete fails t unless every wanted request came exactly once and nothing
// else came.
func (c *Collector) CheckComplete(t testing.TB) {
	t.Helper()
	c.CheckNoDuplicates(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unparseable != 0 {
		t.Errorf("%d unparseable documents", c.unparseable)
	}
	missing := 0
	for i := range c.d.Requests {
		r := &c.d.Requests[i]
		if r.Wanted && c.seen[r.Record.VcapRequestID] == 0 {
			if missing < 5 {
				t.Errorf("missing %s (emitted %v)", r.Record.VcapRequestID, r.Emitted)
			}
			missing++
		}
	}
	if missing > 0 || len(c.seen) != c.d.Wanted {
		t.Errorf("%d distinct requests, %d missing; want %d", len(c.seen), missing, c.d.Wanted)
	}
}

// RecordDiff describes how got differs from want ("" when equal); times compare as
// instants.
func RecordDiff(got, want *accesslog.Record) string {
	if !got.Time.Equal(want.Time) {
		return fmt.Sprintf("time %v, want %v", got.Time, want.Time)
	}
	g, w := *got, *want
	g.Time, w.Time = time.Time{}, time.Time{}
	if reflect.DeepEqual(g, w) {
		return ""
	}
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			return fmt.Sprintf("%s = %#v, want %#v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
		}
	}
	return "differs"
}
