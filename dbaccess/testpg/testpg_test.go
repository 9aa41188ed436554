package testpg

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestCitusDSN: each caller gets a database of its own on the shared cluster, in which
// a distributed table's shards land on both workers.
func TestCitusDSN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := CitusDSN(t), CitusDSN(t)
	if a == b {
		t.Fatalf("two callers got one database: %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE t (id int); SELECT create_distributed_table('t', 'id')`); err != nil {
		t.Fatal(err)
	}
	var nodes int
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 't'::regclass`).Scan(&nodes); err != nil {
		t.Fatal(err)
	}
	if nodes != citusWorkers || len(Citus(t).WorkerDSNs("postgres")) != citusWorkers {
		t.Fatalf("shards on %d nodes, want all %d workers", nodes, citusWorkers)
	}
	other, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var tables int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_dist_partition`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the second database has %d distributed tables (%v), want none", tables, err)
	}
}
