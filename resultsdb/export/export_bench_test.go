package export

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// benchRows is the number of samples each iteration exports.
const benchRows = 1 << 20

// BenchmarkExport compares the export of a run's samples through a chisel tunnel on
// loopback (tunnel server, client and exporter all in this process) with psql's \copy of
// the same query straight from the database, on the same data in the same run: the goal
// is at least 80% of psql's rate (make bench records the ratio in tools/bench/go-latest.md).
func BenchmarkExport(b *testing.B) {
	ctx := context.Background()
	dsn := testpg.DSN(b)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	run := seedRun(b, store, benchRows/len(variants))
	if _, err := store.Pool().Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}

	b.Run("tunnel", func(b *testing.B) {
		// As `cf-benchmark export --tunnel` does: chisel's client allocates a buffer
		// per WebSocket message, and the default GC pace costs a quarter of the CPU.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		tt := startTunnel(b, dsn, nil)
		tstore, err := resultsdb.Open(ctx, tt.dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer tstore.Close()
		dir := b.TempDir()
		for range b.N {
			m, err := ExportWith(ctx, tstore, run.ID, dir, Options{Tables: []string{"samples"}})
			if err != nil {
				b.Fatal(err)
			}
			if m.Files[1].Rows != benchRows || m.Files[1].Resumed != 0 {
				b.Fatalf("exported %+v", m.Files[1])
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})

	b.Run("psql", func(b *testing.B) {
		psql, err := exec.LookPath("psql")
		if err != nil {
			b.Skip("psql is not installed (Debian package postgresql-client)")
		}
		path := filepath.Join(b.TempDir(), "samples.csv")
		query := tableDefs["samples"].selectSQL(run.ID, nil)
		for range b.N {
			out, err := exec.Command(psql, dsn, "-v", "ON_ERROR_STOP=1", "-c",
				`\copy (`+query+`) TO '`+path+`' (FORMAT csv, HEADER)`).CombinedOutput()
			if err != nil {
				b.Fatalf("psql: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})
}
