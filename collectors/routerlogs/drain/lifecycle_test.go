package drain

import (
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against a receiver; its own failure is its
// HTTP listener closed under it.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		r, err := New(Config{HTTPAddr: "127.0.0.1:0", SyslogAddr: "127.0.0.1:0", User: user, Password: password,
			RunID: "r", TraceTag: runTag, Apps: map[string]string{appGUID: appName}, Store: &fakeStore{}, TLS: mustPKI(t).server})
		if err != nil {
			t.Fatal(err)
		}
		return lifecycletest.Subject{Part: r, Fail: func(t *testing.T) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if err := r.httpLn.Close(); err != nil {
				t.Fatal(err)
			}
		}}
	})
}
