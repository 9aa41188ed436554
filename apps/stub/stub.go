// Package stub is a small HTTP service with a predictable cost: a configurable latency
// (fixed plus random dither) and payload size. It is the target of the demo and a
// stand-in backend when benchmarking proxies and gateways. It can also freeze once for
// a while, answering nothing, as a target does in a long GC pause or a failover (the
// confounder the stall check must catch); spend CPU per request, as an app that
// computes does; and, as a noisy neighbour, keep cores busy from a while after its first
// request (the confounder the contention check must catch).
package stub

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// MaxSize caps the payload a request may ask for.
const MaxSize = 64 << 20

// Config holds the defaults; each request may override them with query parameters
// delay, dither, cpu (durations) and size (bytes).
type Config struct {
	Delay  time.Duration // fixed latency added to every response
	Dither time.Duration // plus a uniform random 0..Dither
	// CPU is the CPU time every response costs, spent before the delay: counted on the
	// thread's CPU clock, so a busy cell makes it take longer, not cost less.
	CPU  time.Duration
	Size int // payload bytes of /bytes
	// FreezeFor, when positive, freezes the stub once: from FreezeAfter after the first
	// request it serves (so the freeze lands at a known time into a benchmark's load,
	// however long the app waited before), every request but /healthz is held until
	// FreezeFor has passed, then answered as usual.
	FreezeAfter, FreezeFor time.Duration
	// BurnCores, when positive, makes the stub a noisy neighbour: from BurnAfter after
	// the first request it serves, BurnCores threads spin for BurnFor (0: until the
	// process ends), taking their share of the cell's CPU from everything else on it.
	BurnCores          int
	BurnAfter, BurnFor time.Duration
}

// Handler serves:
//
//	GET /hello              "hello\n"
//	GET /bytes?size=N       N bytes of 'x'
//	GET /healthz            "ok\n" (never delayed)
//
// Every path except /healthz honours ?delay=5ms&dither=2ms&cpu=1ms, is held while the
// stub is frozen (Config.FreezeFor), and starts the clock of its burn (Config.BurnCores).
func Handler(cfg Config) http.Handler {
	fr := &freeze{after: cfg.FreezeAfter, length: cfg.FreezeFor, now: time.Now}
	b := &burn{cores: cfg.BurnCores, after: cfg.BurnAfter, length: cfg.BurnFor}
	// One 64 KiB chunk written as often as needed: a stub must stay small (it runs in
	// 64M containers), whatever size a request asks for.
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		if delay(w, r, cfg, fr, b) {
			w.Write([]byte("hello\n"))
		}
	})
	mux.HandleFunc("GET /bytes", func(w http.ResponseWriter, r *http.Request) {
		size := cfg.Size
		if v := r.URL.Query().Get("size"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > MaxSize {
				http.Error(w, fmt.Sprintf("size: want 0..%d bytes, got %q", MaxSize, v), http.StatusBadRequest)
				return
			}
			size = n
		}
		if delay(w, r, cfg, fr, b) {
			w.Header().Set("Content-Length", strconv.Itoa(size))
			for left := size; left > 0; left -= len(chunk) {
				if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
					return
				}
			}
		}
	})
	return mux
}

// delay spends the CPU asked for, sleeps as configured, then while the stub is frozen;
// it answers 400 and returns false on a malformed override, and false when the client
// went away meanwhile.
func delay(w http.ResponseWriter, r *http.Request, cfg Config, fr *freeze, b *burn) bool {
	b.start()
	d, dither, cpu := cfg.Delay, cfg.Dither, cfg.CPU
	for name, dst := range map[string]*time.Duration{"delay": &d, "dither": &dither, "cpu": &cpu} {
		if v := r.URL.Query().Get(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed < 0 {
				http.Error(w, fmt.Sprintf("%s: want a duration like 5ms, got %q", name, v), http.StatusBadRequest)
				return false
			}
			*dst = parsed
		}
	}
	if dither > 0 {
		d += rand.N(dither)
	}
	if !work(r.Context(), cpu) || !sleep(r, d) {
		return false
	}
	return sleep(r, fr.hold())
}

// sleep waits d, or until the request's client went away (then false).
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// freeze is the one freeze of a stub: it begins after after the first request and
// lasts length. Its methods may be called concurrently.
type freeze struct {
	after, length time.Duration
	now           func() time.Time

	once  sync.Once
	first time.Time // when the first request was served
}

// hold is how long a request arriving now must wait for the freeze to end: 0 outside
// it. The first call starts the clock.
func (f *freeze) hold() time.Duration {
	if f.length <= 0 {
		return 0
	}
	now := f.now()
	f.once.Do(func() { f.first = now })
	from := f.first.Add(f.after)
	if now.Before(from) {
		return 0
	}
	return max(from.Add(f.length).Sub(now), 0)
}
