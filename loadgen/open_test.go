package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenLoopAtHighRatesKeepsEverySlot runs the open loop at rates whose slots are
// closer than its precise wait and its minimum tick (on Linux: a periodic clock, slots
// sent in batches): every slot of the phase is sent once or counted as missed, each
// request carries its own slot on the schedule's grid as its intended time, and none
// goes out before its slot.
func TestOpenLoopAtHighRatesKeepsEverySlot(t *testing.T) {
	for _, rate := range []float64{1000, 8000, 20000} {
		t.Run(time.Duration(float64(time.Second)/rate).String(), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			interval := time.Duration(float64(time.Second) / rate)
			rec := &collector{}
			g := openGen(t, srv.URL, rate, 0, rec)
			start := time.Now().Add(20 * time.Millisecond)
			g.cfg.Epoch = start
			const phase = 300 * time.Millisecond
			g.Run(context.Background(), Phase{Start: start, End: start.Add(phase)})
			slots := uint64(phase / interval)
			if got := uint64(len(rec.s)) + g.Missed(); got < slots-1 || got > slots+1 {
				t.Fatalf("sent %d and missed %d, want the phase's %d slots", len(rec.s), g.Missed(), slots)
			}
			seen := map[int64]bool{}
			for _, s := range rec.s {
				off := time.Duration(s.IntendedUS) * time.Microsecond
				// Intended times are stored in whole µs: on the grid to within one.
				if r := (off + interval/2) % interval; r > interval/2+time.Microsecond || r < interval/2-time.Microsecond {
					t.Fatalf("slot at %v is off the %v grid", off, interval)
				}
				if seen[s.IntendedUS] {
					t.Fatalf("two requests intended at %v", off)
				}
				seen[s.IntendedUS] = true
				if s.StartDelayUS < 0 {
					t.Fatalf("the request of the slot at %v went out %d µs before it", off, -s.StartDelayUS)
				}
			}
		})
	}
}

// TestOpenLoopHoldsMaxInFlightAtHighRates offers a slow target far more than
// MaxInFlight requests at once: the target never sees more than MaxInFlight at a
// time, and every slot is sent or counted as missed.
func TestOpenLoopHoldsMaxInFlightAtHighRates(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			t.Parallel()
			var cur, peak atomic.Int64
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				n := cur.Add(1)
				mu.Lock()
				peak.Store(max(peak.Load(), n))
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				cur.Add(-1)
			}))
			defer srv.Close()
			const rate, inFlight = 5000.0, 2
			rec := &collector{}
			g := openGen(t, srv.URL, rate, inFlight, rec)
			useClient(t, g, client)
			start := time.Now()
			g.Run(context.Background(), Phase{Start: start, End: start.Add(400 * time.Millisecond)})
			if p := peak.Load(); p > inFlight {
				t.Fatalf("the target saw %d requests at once, want at most %d", p, inFlight)
			}
			slots := uint64(rate * 0.4)
			if sent, missed := uint64(len(rec.s)), g.Missed(); sent == 0 || sent+missed < slots-1 || sent+missed > slots+1 {
				t.Fatalf("sent %d and missed %d, want the phase's %d slots", sent, missed, slots)
			}
		})
	}
}
