package dbconns

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestReadCountsClientConnections opens connections of its own to a real server and
// reads them back, with the server's limit.
func TestReadCountsClientConnections(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	before, err := Read(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	var max int
	if err := conn.QueryRow(ctx, `SELECT setting::int FROM pg_settings WHERE name = 'max_connections'`).Scan(&max); err != nil {
		t.Fatal(err)
	}
	if before.InUse < 1 || before.ToDatabase < 1 || before.ToDatabase > before.InUse || before.MaxConnections != max {
		t.Fatalf("reading %+v: want at least this connection, in this database, and max_connections %d", before, max)
	}
	var extra []*pgx.Conn
	for range 3 {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, c)
	}
	after, err := Read(ctx, conn)
	for _, c := range extra {
		c.Close(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' connections may come and go on a shared server: at least our three.
	if after.ToDatabase < before.ToDatabase+3-1 || after.InUse < after.ToDatabase {
		t.Fatalf("before %+v, after opening 3 more %+v: want 3 more to this database", before, after)
	}
}

// TestPollerStoresReadings runs the lifecycle suite against a poller on a short interval
// and checks that it stores readings of its run.
func TestPollerStoresReadings(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "dbconns", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		p := New(Config{DSN: dsn, Service: "db", Store: store, RunID: run.ID, Interval: 10 * time.Millisecond})
		return lifecycletest.Subject{Part: p, NoFailure: "a failed reading is logged and taken again at the next tick"}
	})
	var n, bad int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE in_use < 1 OR max_connections < 1 OR service <> 'db')
		FROM db_connections WHERE run_id = $1`, run.ID).Scan(&n, &bad); err != nil {
		t.Fatal(err)
	}
	if n == 0 || bad != 0 {
		t.Fatalf("%d readings stored, %d of them wrong", n, bad)
	}
}
