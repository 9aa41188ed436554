package ratesearch

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// ceiling is a fake generator that holds every rate up to its ceiling.
func ceiling(c int, probed *[]int) Prober {
	return func(_ context.Context, rate int) (bool, string) {
		*probed = append(*probed, rate)
		return rate <= c, ""
	}
}

func TestSearchDoublesThenBisectsOnTheGrid(t *testing.T) {
	for _, c := range []struct {
		name       string
		ceiling    int
		max        int
		probes     []int
		held, fail int
	}{
		// 5k, 10k, 20k, 40k held; 80k fails; bisect 60k, 70k, 75k (8 probes).
		{"the old report's oha", 77_000, 8, []int{5000, 10000, 20000, 40000, 80000, 60000, 70000, 75000}, 75000, 80000},
		// Bisecting stops when the bracket is within 2.5% of the held rate.
		{"stops within 2.5%", 44_000, 20, []int{5000, 10000, 20000, 40000, 80000, 60000, 50000, 45000, 42500, 43750, 44250}, 43750, 44250},
		// Below a failed start it bisects towards zero.
		{"first probe fails", 1000, 8, []int{5000, 2500, 1250, 500, 750, 1000}, 1000, 1250},
		{"nothing held", 100, 8, []int{5000, 2500, 1250, 500, 250}, 0, 250},
		// A held bracket of one grid step above the first failure.
		{"fails between the first two", 5100, 8, []int{5000, 10000, 7500, 6250, 5500, 5250}, 5000, 5250},
		{"every probe held", 1 << 30, 3, []int{5000, 10000, 20000}, 20000, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var probed []int
			o := Search(context.Background(), 5000, c.max, ceiling(c.ceiling, &probed))
			if !reflect.DeepEqual(probed, c.probes) || o.Held != c.held || o.Failed != c.fail {
				t.Fatalf("probed %v, held %d, failed %d; want %v, %d, %d", probed, o.Held, o.Failed, c.probes, c.held, c.fail)
			}
			if len(o.Probes) != len(probed) {
				t.Fatalf("%d probes recorded, %d run", len(o.Probes), len(probed))
			}
		})
	}
}

// A rate that fails for another reason (a tool that crashed) is not held, and the
// search goes on below it.
func TestSearchRecordsVerdicts(t *testing.T) {
	o := Search(context.Background(), 1000, 2, func(_ context.Context, rate int) (bool, string) {
		if rate == 2000 {
			return false, "failed: it crashed"
		}
		return true, "fine"
	})
	if o.Held != 1000 || o.Failed != 2000 || o.Verdict(2000) != "failed: it crashed" || o.Verdict(1000) != "fine" {
		t.Fatalf("%+v", o)
	}
}

func TestSearchStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	o := Search(ctx, 1000, 8, func(context.Context, int) (bool, string) { n++; cancel(); return true, "" })
	if n != 1 || len(o.Probes) != 1 {
		t.Fatalf("%d probes after the context ended, want 1", n)
	}
}

func TestJudge(t *testing.T) {
	l := Limits{Drift: 0.01, P99: 10 * time.Millisecond}
	for _, c := range []struct {
		achieved float64
		p99      time.Duration
		errors   int64
		held     bool
		verdict  string
	}{
		{49990, 3 * time.Millisecond, 0, true, "achieved 49990/s (drift -0.02%), p99 3.00 ms, 0 errors"},
		{49990, 10760 * time.Microsecond, 0, false, "p99 10.76 ms"},
		{47850, time.Millisecond, 0, false, "drift -4.30%"},
		{50600, time.Millisecond, 0, false, "drift +1.20%"},
		{50000, time.Millisecond, 1, false, "1 errors"},
	} {
		held, verdict := l.Judge(50000, c.achieved, c.p99, c.errors)
		if held != c.held || !strings.Contains(verdict, c.verdict) {
			t.Errorf("%+v: held %t, %q", c, held, verdict)
		}
	}
}
