package drain

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestStoresIntoResultsDB runs the receiver against a real results database: rows land
// in router_requests keyed by trace id, the counters in the run's drain row, and a
// second receiver of the run (a restarted app instance) goes on from its totals.
func TestStoresIntoResultsDB(t *testing.T) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	run, err := store.CreateRun(ctx, "drain", "spec.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	creds := user + ":" + password + "@"
	for round := range 2 {
		r := newReceiver(t, store, func(c *Config) { c.RunID, c.TraceTag = run.ID, run.TraceTag })
		var body []byte
		for seq := range uint64(1000) {
			body = append(body, message(appGUID, "[RTR/1]", rtrLine(run.TraceTag, uint64(round)*1000+seq, appGUID))...)
		}
		body = append(body, rtr(5)...) // the test's fixed tag: another run's request
		if got := post(t, r, creds, body); got != 200 {
			t.Fatalf("status %d", got)
		}
		post(t, r, "", body[:10])
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	var guid, name string
	if err := store.Pool().QueryRow(ctx, `SELECT count(*), min(app_guid), min(app_name) FROM router_requests WHERE run_id = $1`, run.ID).Scan(&n, &guid, &name); err != nil {
		t.Fatal(err)
	}
	if n != 2000 || guid != appGUID || name != appName {
		t.Errorf("router_requests: %d rows of %s (%s), want 2000 of %s", n, guid, name, appGUID)
	}
	pull, err := store.LogPull(ctx, run.ID, Source)
	if err != nil || pull == nil {
		t.Fatalf("drain row: %v, %v", pull, err)
	}
	var c Counters
	if err := json.Unmarshal(pull.Counters, &c); err != nil {
		t.Fatal(err)
	}
	if pull.Retrieved != 2002 || pull.Stored != 2000 || pull.Foreign != 2 || c.RefusedAuth != 2 {
		t.Errorf("drain row %+v, counters %s", pull, pull.Counters)
	}
}
