package platform

import (
	"testing"
	"time"
)

// TestPollWait: poll looks again after a quarter of the time waited so far, within its
// bounds, so what becomes ready is seen at most a quarter late (plus the first wait),
// with few looks.
func TestPollWait(t *testing.T) {
	for _, c := range []struct{ elapsed, want time.Duration }{
		{0, pollFirst},
		{100 * time.Millisecond, pollFirst},
		{time.Second, 250 * time.Millisecond},
		{4 * time.Second, time.Second},
		{time.Minute, pollMax},
	} {
		if got := pollWait(c.elapsed); got != c.want {
			t.Errorf("pollWait(%v) = %v, want %v", c.elapsed, got, c.want)
		}
	}
	// Ready at any moment up to a minute: seen within a quarter of it (or pollFirst),
	// and by 2 s in under 20 looks.
	for ready := time.Duration(0); ready <= time.Minute; ready += 7 * time.Millisecond {
		var at time.Duration
		looks := 1
		for at < ready {
			at += pollWait(at)
			looks++
		}
		if late := at - ready; late > max(pollFirst, ready/4) {
			t.Fatalf("ready at %v, seen at %v: %v late, want at most a quarter", ready, at, late)
		}
		if ready <= 2*time.Second && looks > 20 {
			t.Fatalf("ready at %v: %d looks, want under 20", ready, looks)
		}
	}
}
