//go:build linux

package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
)

// TestCitusGivesTheSameReport stores the same fixture runs in one Postgres server and
// in a Citus cluster of a coordinator and two workers, and gets byte-identical reports
// (JSON and text, every case of reportCases) and CSV exports.
// On the cluster, aggregation on the coordinator is switched off: a query that would
// pull every row there (percentile_disc and the like) fails instead of passing slowly.
func TestCitusGivesTheSameReport(t *testing.T) {
	ctx := context.Background()
	const perStep = 500
	plain := fixtureStoreAt(t, testpg.DSN(t), perStep)
	cluster := fixtureStoreAt(t, testpg.CitusDSN(t)+"&citus.coordinator_aggregation_strategy=disabled", perStep)
	for _, store := range []*resultsdb.Store{plain, cluster} {
		fixture{id: legacyRun, epoch: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), tag: 0x5eed0005, speed: 0.9, perStep: perStep, legacy: true}.seed(t, store)
		fixture{id: bareRun, epoch: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), tag: 0x5eed0006, speed: 1.1, perStep: perStep, bare: true}.seed(t, store)
	}
	topo, err := cluster.Topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topo.Citus == "" || len(topo.Nodes) != 2 {
		t.Fatalf("the cluster store is %s; want a Citus cluster with 2 nodes holding shards", topo)
	}
	assertRowsOnEveryNode(t, cluster)
	// The guard holds: an ordered-set aggregate over the samples is refused.
	var p50 int64
	if err := cluster.Pool().QueryRow(ctx, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us) FROM samples`).Scan(&p50); err == nil {
		t.Fatalf("percentile_disc over the samples ran on the coordinator (p50 %d): the test would not see a query that pulls every row there", p50)
	}

	for _, c := range reportCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var want, got [2]bytes.Buffer
			for i, store := range []*resultsdb.Store{plain, cluster} {
				rep, err := Build(ctx, store, c.ids, c.opts)
				if err != nil {
					t.Fatal(err)
				}
				out := &want
				if i == 1 {
					out = &got
				}
				if err := rep.WriteJSON(&out[0]); err != nil {
					t.Fatal(err)
				}
				if err := rep.WriteText(&out[1]); err != nil {
					t.Fatal(err)
				}
			}
			for i, form := range []string{"json", "text"} {
				if !bytes.Equal(want[i].Bytes(), got[i].Bytes()) {
					t.Errorf("%s on Citus differs from one Postgres:\n%s", form, lineDiff(want[i].String(), got[i].String()))
				}
				if want[i].Len() < 1000 {
					t.Errorf("%s: a report of %d bytes; the fixture must give more to compare", form, want[i].Len())
				}
			}
		})
	}

	// The figures the store computes live from the rows, not only those stored.
	for _, id := range []string{fixtureRun, legacyRun, bareRun} {
		var want, got []byte
		for i, store := range []*resultsdb.Store{plain, cluster} {
			sums, err := store.StepSummaries(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			cov, err := store.RouterCoverage(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal([]any{sums, cov})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				want = b
			} else {
				got = b
			}
		}
		if !bytes.Equal(want, got) {
			t.Errorf("run %s: the live step figures on Citus differ from one Postgres:\n%s\n%s", id, want, got)
		}
	}

	// The exports: every CSV file byte for byte, once the columns that record when a row
	// was written (the clock of the seeding, not the fixture's) agree.
	for _, store := range []*resultsdb.Store{plain, cluster} {
		for _, set := range []string{
			`UPDATE workers SET started_at = '2026-11-20 00:00:00+00', heartbeat_at = '2026-11-20 00:00:00+00'`,
			`UPDATE router_log_pulls SET started_at = '2026-11-20 00:00:00+00', updated_at = '2026-11-20 00:00:00+00'`,
			`UPDATE step_metrics SET computed_at = '2026-11-20 00:00:00+00'`,
			`UPDATE step_series SET computed_at = '2026-11-20 00:00:00+00'`,
			`UPDATE step_router_metrics SET computed_at = '2026-11-20 00:00:00+00'`,
		} {
			execSQL(t, store.Pool(), set)
		}
	}
	root := t.TempDir()
	for _, id := range []string{fixtureRun, legacyRun, bareRun} {
		dirs := [2]string{filepath.Join(root, "plain", id), filepath.Join(root, "citus", id)}
		for i, store := range []*resultsdb.Store{plain, cluster} {
			if _, err := export.Export(ctx, store, id, dirs[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		files, err := filepath.Glob(filepath.Join(dirs[0], "*.csv"))
		if err != nil || len(files) < 10 {
			t.Fatalf("run %s: %d CSV files exported (%v); want every table's", id, len(files), err)
		}
		for _, f := range files {
			a, errA := os.ReadFile(f)
			b, errB := os.ReadFile(filepath.Join(dirs[1], filepath.Base(f)))
			if errA != nil || errB != nil {
				t.Fatalf("run %s: %v %v", id, errA, errB)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("run %s: %s exported from Citus differs from one Postgres:\n%s", id, filepath.Base(f), lineDiff(string(a), string(b)))
			}
		}
	}
}

// assertRowsOnEveryNode checks that the per-request tables of store, a Citus cluster,
// have rows on each of its nodes: the fixture's requests spread over the workers.
func assertRowsOnEveryNode(t *testing.T, store *resultsdb.Store) {
	t.Helper()
	for _, table := range []string{"samples", "router_requests", "app_timings"} {
		rows, err := store.Pool().Query(context.Background(),
			`SELECT nodename || ':' || nodeport, sum(shard_size) FROM citus_shards WHERE table_name = $1::regclass GROUP BY 1 ORDER BY 1`, table)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var node string
			var size int64
			if err := rows.Scan(&node, &size); err != nil {
				t.Fatal(err)
			}
			var count int64
			if err := store.Pool().QueryRow(context.Background(),
				`SELECT sum(result::bigint) FROM run_command_on_placements($1, 'SELECT count(*) FROM %s') WHERE nodename || ':' || nodeport = $2`,
				table, node).Scan(&count); err != nil {
				t.Fatal(err)
			}
			if count == 0 {
				t.Errorf("%s: no rows on node %s", table, node)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("%s: shards on %d nodes, want 2", table, n)
		}
	}
}
