package logship

import (
	"fmt"
	"testing"
	"time"
)

func TestParseQuota(t *testing.T) {
	for in, want := range map[string]string{"": "0 0s", "1000/1h": "1000 1h0m0s", "5/15m": "5 15m0s"} {
		n, w, err := ParseQuota(in)
		if got := fmt.Sprintf("%d %v", n, w); err != nil || got != want {
			t.Errorf("ParseQuota(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"1000", "x/1h", "0/1h", "5/forever", "5/-1h"} {
		if _, _, err := ParseQuota(bad); err == nil {
			t.Errorf("ParseQuota(%q) accepted it", bad)
		}
	}
}

// TestQuota: the first Limit lines of each clock-aligned window pass, the rest of the
// window is dropped, the next window starts afresh; Limit 0 is no quota.
func TestQuota(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 10, 0, time.UTC) // a window start
	q := Quota{Limit: 3, Window: 10 * time.Second}
	var got []bool
	for _, off := range []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 9 * time.Second, 10 * time.Second, 15 * time.Second, 19 * time.Second, 19500 * time.Millisecond} {
		got = append(got, q.Admit(t0.Add(off)))
	}
	if want := "[true true true false false true true true false]"; fmt.Sprint(got) != want {
		t.Errorf("admitted %v, want %v", got, want)
	}
	mid := Quota{Limit: 1, Window: 10 * time.Second}
	if !mid.Admit(t0.Add(-time.Second)) || !mid.Admit(t0) || mid.Admit(t0.Add(5*time.Second)) {
		t.Error("windows are not aligned to the clock: a line at :19 and one at :20 fall into different windows")
	}
	none := Quota{}
	for i := 0; i < 5; i++ {
		if !none.Admit(t0) {
			t.Fatal("no quota dropped a line")
		}
	}
}
