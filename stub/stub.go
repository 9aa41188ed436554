// Package stub is a small HTTP service with a predictable cost: a configurable latency
// (fixed plus random dither) and payload size. It is the target of the demo and a
// stand-in backend when benchmarking proxies and gateways.
package stub

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// MaxSize caps the payload a request may ask for.
const MaxSize = 64 << 20

// Config holds the defaults; each request may override them with query parameters
// delay, dither (durations) and size (bytes).
type Config struct {
	Delay  time.Duration // fixed latency added to every response
	Dither time.Duration // plus a uniform random 0..Dither
	Size   int           // payload bytes of /bytes
}

// Handler serves:
//
//	GET /hello              "hello\n"
//	GET /bytes?size=N       N bytes of 'x'
//	GET /healthz            "ok\n" (never delayed)
//
// Every path except /healthz honours ?delay=5ms&dither=2ms.
func Handler(cfg Config) http.Handler {
	// One 64 KiB chunk written as often as needed: a stub must stay small (it runs in
	// 64M containers), whatever size a request asks for.
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		if delay(w, r, cfg) {
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
		if delay(w, r, cfg) {
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

// delay sleeps as configured; it answers 400 and returns false on a malformed override.
func delay(w http.ResponseWriter, r *http.Request, cfg Config) bool {
	d, dither := cfg.Delay, cfg.Dither
	for name, dst := range map[string]*time.Duration{"delay": &d, "dither": &dither} {
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
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}
