package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// BenchmarkReport measures the report of a fixture run (2 variants × 4 steps, a tenth
// of one variant's requests with router lines and app timings) at two sizes, against
// a peer in the same run: a plain COPY of the run's samples out of Postgres, the least
// any tool that reads the requests must do. It reports the HTML's size, which must not
// grow with the number of requests. scripts/bench-go.sh records it in BENCHMARKS.md.
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
		store.Close()
	}
}
