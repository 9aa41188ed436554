package worker

import (
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against an instance that joins a running run,
// so that stopping has samples to store and a worker row to mark stopped.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		f := newFixture(t, okServer(t).URL, closedLoop())
		w := New(Config{Store: f.store, App: f.app, Host: "127.0.0.1", PollEvery: poll, SpillDir: t.TempDir()})
		return lifecycletest.Subject{Part: w, NoFailure: "database errors are retried, never the end of a worker"}
	})
}
