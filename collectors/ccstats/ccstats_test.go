package ccstats

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestPollsTheLocalFoundation polls a real foundation's process stats, through
// go-cfclient as the engine does, and finds one row per instance per poll.
func TestPollsTheLocalFoundation(t *testing.T) {
	_, cl := testfoundation.Start(t)
	app := testfoundation.PushStub(t, cl, testfoundation.StubZip(t), "apps", "stats-target", 2)
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "ccstats", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Wait until both instances run, so that the polls below see usage.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st, err := cl.Processes.GetStats(ctx, app)
		running := 0
		for _, s := range st.Stats {
			if s.State == "RUNNING" {
				running++
			}
		}
		if err == nil && running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instances not running: %+v, %v", st, err)
		}
	}
	p := New(Config{Client: cl.Processes, Store: store, RunID: run.ID, Interval: 50 * time.Millisecond})
	p.SetTargets([]Target{{AppName: "stats-target", AppGUID: app, ProcessGUID: app, ProcessType: "web"},
		{AppName: "gone", AppGUID: "nope", ProcessGUID: "nope", ProcessType: "web"}})
	// One explicit poll: the missing process is reported, the other one stored.
	if err := p.Poll(ctx); err == nil {
		t.Fatal("polling an unknown process reported no error")
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var polls, bad int
	for deadline := time.Now().Add(time.Minute); polls < 3; time.Sleep(50 * time.Millisecond) {
		if err := conn.QueryRow(ctx, `SELECT count(DISTINCT at), count(*) FILTER (WHERE state <> 'RUNNING' OR host = '' OR mem_quota_bytes <> 64 << 20
			OR isolation_segment <> 'apps' OR app_name <> 'stats-target' OR mem_bytes IS NULL OR cpu IS NULL)
			FROM container_metrics WHERE run_id = $1`, run.ID).Scan(&polls, &bad); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d polls stored in a minute", polls)
		}
	}
	p.Close()
	var rows, perPoll int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(n) FROM (SELECT at, count(*) n FROM container_metrics WHERE run_id = $1 GROUP BY at) x`, run.ID).Scan(&rows, &perPoll); err != nil {
		t.Fatal(err)
	}
	if bad != 0 || perPoll != 2 {
		t.Fatalf("%d rows with unexpected values; %d instances per poll, want 2", bad, perPoll)
	}
}
