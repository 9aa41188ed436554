package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenLoopAtHighRatesKeepsEverySlot runs the open loop at rates whose slots are
// closer than its precise wait and its default tick (on Linux: a periodic clock, slots
// sent in batches): see keepsEverySlot.
func TestOpenLoopAtHighRatesKeepsEverySlot(t *testing.T) {
	for _, rate := range []float64{1000, 8000, 20000} {
		t.Run(time.Duration(float64(time.Second)/rate).String(), func(t *testing.T) { keepsEverySlot(t, rate, 0) })
	}
}

// TestOpenLoopOnACoarseTickKeepsEverySlot is the same on coarse ticks, below the
// precise window and above it, where slots a tick releases together wait on one Go
// timer and one tick (1 ms slots on 5 ms ticks), and where slots as far apart as the
// window still go out in batches (2 ms slots on 10 ms ticks).
func TestOpenLoopOnACoarseTickKeepsEverySlot(t *testing.T) {
	for _, c := range []struct {
		rate float64
		tick time.Duration
	}{{4000, time.Millisecond}, {1000, 5 * time.Millisecond}, {500, 10 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%v-req-s-on-%v", c.rate, c.tick), func(t *testing.T) {
			t.Parallel()
			keepsEverySlot(t, c.rate, c.tick)
		})
	}
}

// keepsEverySlot runs a phase of the open loop at rate on tick (0: the default): every
// slot of the phase is sent once or counted as missed, each request carries its own
// slot on the schedule's grid as its intended time, and none goes out before its slot.
func keepsEverySlot(t *testing.T, rate float64, tick time.Duration) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	interval := time.Duration(float64(time.Second) / rate)
	rec := &collector{}
	g := openGen(t, srv.URL, rate, 0, rec)
	if tick > 0 {
		g.cfg.Tick = tick
	}
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
}

// TestTickEvery: the periodic clock ticks on the schedule's grid, the tick rounded up
// to a multiple of the interval, also above the precise window (Linux); slots a tick
// and the window apart wait each on their own (0). The default tick keeps the formula
// it replaced (max(1, ⌈200 µs/interval⌉) × interval below the window). TickLag is half
// of what a tick's period adds to the interval.
func TestTickEvery(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	for _, c := range []struct {
		interval, tick, every, lag time.Duration
	}{
		{50 * us, DefaultTick, 200 * us, 75 * us},
		{150 * us, DefaultTick, 300 * us, 75 * us},
		{200 * us, DefaultTick, 200 * us, 0},
		{ms, DefaultTick, ms, 0},
		{50 * us, ms, ms, 475 * us},
		{300 * us, ms, 1200 * us, 450 * us},
		{ms, 5 * ms, 5 * ms, 2 * ms},
		{2 * ms, 5 * ms, 6 * ms, 2 * ms},
		{2 * ms, 10 * ms, 10 * ms, 4 * ms},
		{10 * ms, 5 * ms, 0, 0},
		{0, ms, 0, 0},
	} {
		every := tickEvery(c.interval, c.tick)
		if preciseWindow == 0 && c.interval >= c.tick {
			c.every = 0 // elsewhere: no periodic clock for slots a tick apart
		}
		if every != c.every {
			t.Errorf("tickEvery(%v, %v) = %v, want %v", c.interval, c.tick, every, c.every)
		}
		if c.interval == 0 || time.Second%c.interval != 0 {
			continue // no rate in whole req/s to give TickLag
		}
		if lag := TickLag(float64(time.Second)/float64(c.interval), c.tick); lag != c.lag {
			t.Errorf("TickLag(every %v, tick %v) = %v, want %v", c.interval, c.tick, lag, c.lag)
		}
	}
	if TickLag(20000, 0) != TickLag(20000, DefaultTick) || TickLag(0, time.Millisecond) != 0 {
		t.Errorf("TickLag: the default tick or a paused loop is off")
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
