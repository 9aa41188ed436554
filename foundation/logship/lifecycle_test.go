package logship

import (
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// TestLifecycle runs the conformance suite against a shipper with lines to ship to a
// fake Elasticsearch.
func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		s := New(Config{URL: newFakeES(t, &fakeES{}).URL, FlushEvery: 10 * time.Millisecond})
		writeLines(t, s, 0, 3)
		return lifecycletest.Subject{Part: s, NoFailure: "failed requests are retried and counted, never the end of the shipper"}
	})
}
