package ccstats

import (
	"context"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// oneInstance answers every stats request with one running instance.
type oneInstance struct{}

func (oneInstance) GetStats(context.Context, string) (*resource.ProcessStats, error) {
	return &resource.ProcessStats{Stats: []resource.ProcessStat{{Type: "web", Index: 0, State: "RUNNING", Host: "127.0.0.1"}}}, nil
}

// TestLifecycle runs the conformance suite against a poller that stores into a real
// results database on a short interval.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "ccstats-lifecycle", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		p := New(Config{Client: oneInstance{}, Store: store, RunID: run.ID, Interval: 10 * time.Millisecond})
		p.SetTargets([]Target{{AppName: "a", AppGUID: "g", ProcessGUID: "g", ProcessType: "web"}})
		return lifecycletest.Subject{Part: p, NoFailure: "a failed poll is logged and retried at the next tick"}
	})
}
