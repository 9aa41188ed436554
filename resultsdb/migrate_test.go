package resultsdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
)

// A run stored before schema v15 keeps a meaning: its cores_available came only from the
// local foundation, whose one cell per isolation segment ran all of an app's instances,
// so the step had that one cell's cores in all; where it was unknown, the cells stay
// unknown.
func TestMigrationGivesOldStepsOneCell(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version >= 15 {
			break
		}
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO runs (id, name, spec_file, spec, trace_tag, epoch) VALUES ('r1', 'old', 'old.yml', '', 1, now());
		INSERT INTO step_app_metrics (run_id, variant, step, app_name, role, instances, cpu_source, cpu_points, cpu_covered, cores_available)
		VALUES ('r1', 'v', 0, 'app', 'app', 3, 'counters', 6, 1, 2), ('r1', 'v', 0, 'gen', 'generator', 2, 'counters', 4, 1, NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT app_name, cells, cpu_available_cores FROM step_app_metrics ORDER BY app_name`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		app   string
		cells *int
		avail *float64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.app, &x.cells, &x.avail)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].cells == nil || *got[0].cells != 1 || got[0].avail == nil || *got[0].avail != 2 || got[1].cells != nil || got[1].avail != nil {
		t.Fatalf("after the migration: %+v; want app on 1 cell of 2 cores, gen unknown", got)
	}
}
