package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// BenchmarkReport measures the report of a fixture run (2 variants × 4 steps, a tenth
// of one variant's requests with router lines and app timings) at two sizes, against
// a peer in the same run: a plain COPY of the run's samples out of Postgres, the least
// any tool that reads the requests must do. It reports the HTML's size, which must not
// grow with the number of requests. The report reads what the run stored as the data
// arrived; store-at-arrival is what storing it costs the run, report-live the report of
// a run recorded before (schema < 8), computed from the samples. scripts/bench-go.sh
// records it in BENCHMARKS.md.
func BenchmarkReport(b *testing.B) {
	ctx := context.Background()
	for _, samples := range []int{250_000, 1_000_000} {
		store, err := resultsdb.Open(ctx, testpg.DSN(b))
		if err != nil {
			b.Fatal(err)
		}
		fixture{id: fixtureRun, epoch: time.Date(2026, 11, 22, 13, 5, 0, 0, time.UTC), tag: 0x5eed0001, speed: 1, perStep: samples / 8}.seed(b, store)
		if _, err := store.Pool().Exec(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("report/samples=%d", samples), func(b *testing.B) {
			var size int
			for b.Loop() {
				rep, err := Build(ctx, store, []string{fixtureRun}, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var html bytes.Buffer
				if err := rep.WriteHTML(&html); err != nil {
					b.Fatal(err)
				}
				size = html.Len()
			}
			b.ReportMetric(float64(size), "html-bytes")
		})
		b.Run(fmt.Sprintf("copy-samples/samples=%d", samples), func(b *testing.B) {
			conn, err := store.Pool().Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Release()
			for b.Loop() {
				tag, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, `COPY (SELECT s.* FROM samples s JOIN workers w ON w.id = s.worker_id
					WHERE w.run_id = '`+fixtureRun+`') TO STDOUT`)
				if err != nil {
					b.Fatal(err)
				}
				if tag.RowsAffected() != int64(samples) {
					b.Fatalf("copied %d rows, want %d", tag.RowsAffected(), samples)
				}
			}
		})
		// What the run computes as the data arrives, so that the report need not: each
		// step's per-second series (at its end) and the router figures (after the pull).
		b.Run(fmt.Sprintf("store-at-arrival/samples=%d", samples), func(b *testing.B) {
			for b.Loop() {
				for _, v := range []string{"java", "node"} {
					for si := range fixtureSteps[v] {
						if err := store.ComputeStepSeries(ctx, fixtureRun, v, si); err != nil {
							b.Fatal(err)
						}
					}
				}
				if _, err := store.ComputeRouterMetrics(ctx, fixtureRun); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The report of a run recorded before those figures were stored: from the samples.
		if _, err := store.Pool().Exec(ctx, `DELETE FROM step_series; DELETE FROM step_router_metrics`); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("report-live/samples=%d", samples), func(b *testing.B) {
			for b.Loop() {
				if _, err := Build(ctx, store, []string{fixtureRun}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		store.Close()
	}
}
