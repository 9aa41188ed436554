package router

import (
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite; the router's own failure is its listener
// dying under it.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		rt := New(Config{Table: newTable(nil)})
		return lifecycletest.Subject{Part: rt, Fail: func(t *testing.T) {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if err := rt.ln.Close(); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
