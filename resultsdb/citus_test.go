package resultsdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
)

func TestOlder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"13.2-1", "11.0", false},
		{"11.0-4", "11.0", false},
		{"11.0", "11.0", false},
		{"10.2-5", "11.0", true},
		{"9.5", "11.0", true},
		{"11", "11.0", true},
		{"12.1-1", "12.10", true},
	} {
		if got := older(c.a, c.b); got != c.want {
			t.Errorf("older(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// placements reads where every table of the public schema is on a Citus cluster:
// "reference", "coordinator", "distributed by COL (colocation N)", or "" for a table
// Citus does not know.
func placements(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
SELECT c.relname, CASE WHEN p.partmethod = 'h' THEN 'distributed by ' || column_to_column_name(p.logicalrelid, p.partkey)
                       WHEN p.repmodel = 't' THEN 'reference'
                       WHEN p.logicalrelid IS NOT NULL THEN 'coordinator' ELSE '' END,
       coalesce(p.colocationid, 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	colocation := map[string]int{}
	for rows.Next() {
		var table, where string
		var group int
		if err := rows.Scan(&table, &where, &group); err != nil {
			t.Fatal(err)
		}
		out[table], colocation[table] = where, group
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if colocation["router_requests"] != colocation["samples"] || colocation["app_timings"] != colocation["samples"] {
		t.Errorf("colocation groups %v: router_requests and app_timings must be co-located with samples", colocation)
	}
	return out
}

// TestCitusLayout: on a Citus cluster every table of the schema lands where layout
// says, the layout survives a second Open, and a migration written after the schema
// was distributed applies to it.
func TestCitusLayout(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.CitusDSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	// All but the newest migration, laid out; then the newest on the laid out schema.
	if err := migrate(ctx, conn, ms[:len(ms)-1]); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, conn); err != nil {
		t.Fatalf("the newest migration on a distributed schema: %v", err)
	}
	want := map[string]string{}
	for _, l := range layout {
		want[l.table] = map[placement]string{reference: "reference", coordinator: "coordinator", distributed: "distributed by seq"}[l.kind]
	}
	got := placements(t, conn)
	for table, where := range got {
		if want[table] != where {
			t.Errorf("table %s is %q on the cluster, want %q (every table of the schema needs its place in layout)", table, where, want[table])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d tables on the cluster, layout names %d", len(got), len(want))
	}

	store, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	topo, err := store.Topology(ctx)
	if err != nil || topo.Citus == "" || len(topo.Nodes) != 2 {
		t.Fatalf("topology %+v, %v: want Citus with 2 nodes holding shards", topo, err)
	}
	if err := store.CheckNodes(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPlainPostgresIsAsBefore: without the citus extension nothing of the layout
// applies, and the store says it is one server.
func TestPlainPostgresIsAsBefore(t *testing.T) {
	ctx := context.Background()
	srv := testpg.Server(t) // one server also when CFBENCH_TEST_STORE=citus
	name := fmt.Sprintf("plain_%d_%d", os.Getpid(), time.Now().UnixNano())
	if err := srv.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	store, err := Open(ctx, srv.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	topo, err := store.Topology(ctx)
	if err != nil || topo.Citus != "" || topo.String() != "one PostgreSQL server" {
		t.Fatalf("topology %+v (%q), %v: want one PostgreSQL server", topo, topo, err)
	}
	if err := store.CheckNodes(ctx); err != nil {
		t.Fatal(err)
	}
	var pk string
	if err := store.pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'router_requests_pkey'`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	if pk != "PRIMARY KEY (run_id, trace_id)" {
		t.Errorf("router_requests key on one server: %s, want the migrations' PRIMARY KEY (run_id, trace_id)", pk)
	}
}

// TestCitusRefusals: a worker node's URL is refused while the schema needs migrating,
// a node that does not answer is named before a run starts, and a write that failed
// while it was away may be tried again, also once it answers again (a node on its
// way back fails a write that a moment later succeeds).
func TestCitusRefusals(t *testing.T) {
	ctx := context.Background()
	c := ownCluster(t)
	if _, err := Open(ctx, c.WorkerDSNs("results")[0]); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("open a worker's database before the schema: %v, want ErrNotCoordinator", err)
	}
	store, err := Open(ctx, c.DSN("results"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Once the schema is there, a worker's URL is a way in (Citus 11+ writes through any node).
	viaWorker, err := Open(ctx, c.WorkerDSNs("results")[1])
	if err != nil {
		t.Fatalf("open a worker's database once the schema is there: %v", err)
	}
	viaWorker.Close()

	if err := c.StopWorker(1); err != nil {
		t.Fatal(err)
	}
	port := c.Worker(1).Port()
	err = store.CheckNodes(ctx)
	if !errors.Is(err, ErrNodeAway) || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", port)) {
		t.Fatalf("check the nodes with worker 127.0.0.1:%d stopped: %v, want ErrNodeAway naming it", port, err)
	}
	// A write to a reference table (steps) goes to every node.
	away := store.SetInstancesSeen(ctx, "no-such-run", "v", 0, 1)
	if away == nil || errors.Is(away, ErrStepNotFound) || !store.Retryable(ctx, away) {
		t.Fatalf("a reference table written with a worker stopped: %v, want an error Retryable says yes to", away)
	}
	if err := c.StartWorker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckNodes(ctx); err != nil {
		t.Fatalf("check the nodes once the worker is back: %v", err)
	}
	essential := &pgconn.PgError{Code: "XX000", Message: fmt.Sprintf("failure on connection marked as essential: 127.0.0.1:%d", port)}
	if !store.Retryable(ctx, fmt.Errorf("set instances seen: %w", essential)) {
		t.Errorf("Retryable(%q) once the node answers: false, want true (its write, tried again, succeeds)", essential.Message)
	}
	if err := store.SetInstancesSeen(ctx, "no-such-run", "v", 0, 1); !errors.Is(err, ErrStepNotFound) {
		t.Errorf("the same write once the worker is back: %v, want ErrStepNotFound", err)
	}
	internal := &pgconn.PgError{Code: "XX000", Message: "duplicate key value violates unique constraint"}
	if store.Retryable(ctx, internal) {
		t.Errorf("Retryable(%q) with every node answering: true, want false", internal.Message)
	}
}

// TestSettleReleasesALeftoverCommit: a two-phase commit left prepared on a worker (as
// one that the node missed while it was away) holds its rows' locks there, and a write
// to them waits until Settle finishes it, not until Citus's own recovery a minute on.
func TestSettleReleasesALeftoverCommit(t *testing.T) {
	ctx := context.Background()
	c := ownCluster(t)
	store, err := Open(ctx, c.DSN("results"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var shard string
	if err := store.pool.QueryRow(ctx, `SELECT 'schema_migrations_' || shardid FROM pg_dist_shard WHERE logicalrelid = 'schema_migrations'::regclass`).Scan(&shard); err != nil {
		t.Fatal(err)
	}
	worker, err := pgx.Connect(ctx, c.WorkerDSNs("results")[1])
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close(ctx)
	// A transaction of the coordinator's (group 0) by its name, which no backend runs.
	for _, q := range []string{`BEGIN`, `UPDATE ` + shard + ` SET name = name`, `PREPARE TRANSACTION 'citus_0_999999_424242_0'`} {
		if _, err := worker.Exec(ctx, q); err != nil {
			t.Fatalf("%s on worker 1: %v", q, err)
		}
	}
	write := func() error {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := store.pool.Exec(wctx, `UPDATE schema_migrations SET name = name`)
		return err
	}
	if err := write(); err == nil {
		t.Fatal("a write to the rows a prepared transaction holds on a worker went through; want it to wait")
	}
	if err := store.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := write(); err != nil {
		t.Fatalf("the same write after Settle: %v, want it through", err)
	}
}

// ownCluster starts a Citus cluster of the test's own (a coordinator and 2 workers, a
// database "results"), for a test that stops or changes a node; it stops with the test.
func ownCluster(t *testing.T) *pgserver.Cluster {
	t.Helper()
	ctx := context.Background()
	c := pgserver.NewCluster(pgserver.Options{Dir: testpg.Dir(t), Fast: true}, 2)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.CreateDatabase(ctx, "results"); err != nil {
		t.Fatal(err)
	}
	return c
}
