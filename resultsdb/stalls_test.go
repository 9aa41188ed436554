package resultsdb

import (
	"testing"
	"time"
)

func TestFindStalls(t *testing.T) {
	const base = 10 * time.Millisecond
	steady := func(n int, per int64) []int64 {
		c := make([]int64, n)
		for i := range c {
			c[i] = per
		}
		return c
	}
	freeze := steady(1500, 30) // 15 s at 3000 req/s
	for i := 500; i < 700; i++ {
		freeze[i] = 0 // 2 s with no completion
	}
	jitter := steady(1500, 30)
	for i := range jitter {
		jitter[i] = int64(20 + (i*7919)%21) // 20..40 per 10 ms, never quiet
	}
	short := steady(1500, 30)
	for i := 500; i < 505; i++ {
		short[i] = 0 // 50 ms: shorter than 10 median latencies of 10 ms
	}
	// The target answers for 1.2 s, then nothing for the last 1.8 s of the window: most
	// buckets are quiet, so the median of all of them says no rate at all.
	long := steady(300, 30)
	for i := 120; i < 300; i++ {
		long[i] = 0
	}
	slow := steady(60, 0) // 2 req/s over 60 s: one completion every 50 buckets
	for i := 0; i < len(slow); i += 50 {
		slow[i] = 1
	}
	cases := []struct {
		name    string
		counts  []int64
		p50     time.Duration
		longest time.Duration
		missing int64
	}{
		{"a 2 s freeze", freeze, time.Millisecond, 2 * time.Second, 2 * 3000},
		{"a freeze longer than the rest of the window", long, time.Millisecond, 1800 * time.Millisecond, 180 * 30},
		{"steady jitter", jitter, time.Millisecond, 0, 0},
		{"a pause shorter than 10 median latencies", short, 10 * time.Millisecond, 0, 0},
		{"too few completions to see a stall", slow, 500 * time.Millisecond, 0, 0},
		{"nothing", nil, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			longest, missing := FindStalls(c.counts, base, c.p50)
			if longest != c.longest || missing != c.missing {
				t.Fatalf("FindStalls = %s, %d missing; want %s, %d", longest, missing, c.longest, c.missing)
			}
		})
	}
}
