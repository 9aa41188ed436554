package resultsdb

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
)

// benchRows is the number of samples each iteration ingests.
const benchRows = 1 << 20

func benchSample(i int) sample.Sample {
	return sample.Sample{Seq: uint32(i + 1), IntendedUS: int64(i) * 50, StartDelayUS: int32(i % 13), LatencyUS: int32(800 + i%5000),
		Bytes: 100, Status: 200, Step: uint8(i >> 18), Request: uint8(i % 3)}
}

// BenchmarkIngest compares the sample writer's binary COPY with psql's \copy of the
// same rows from a CSV file, on the same server: the goal is at least 80% of psql's
// rate (make bench records the ratio in BENCHMARKS.md).
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	dsn := testpg.DSN(b)
	s, err := Open(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	b.Run("writer", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			_, worker := newWorker(b, s)
			w, err := s.NewSampleWriter(worker, WriterOptions{MaxBuffered: benchRows})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for i := range benchRows {
				w.Add(benchSample(i))
			}
			if err := w.Flush(ctx); err != nil {
				b.Fatal(err)
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
		for range b.N {
			b.StopTimer()
			_, worker := newWorker(b, s)
			writeCSV(b, path, worker)
			b.StartTimer()
			out, err := exec.Command(psql, dsn, "-v", "ON_ERROR_STOP=1", "-c",
				`\copy samples (`+sampleColumns+`) FROM '`+path+`' (FORMAT csv)`).CombinedOutput()
			if err != nil {
				b.Fatalf("psql: %v\n%s", err, out)
			}
		}
		b.ReportMetric(float64(b.N*benchRows)/b.Elapsed().Seconds(), "rows/s")
	})
}

func writeCSV(b *testing.B, path string, worker int32) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range benchRows {
		s := benchSample(i)
		fmt.Fprintf(w, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%t\n", worker, s.Seq, s.Step, s.Request, s.IntendedUS, s.StartDelayUS,
			s.LatencyUS, s.Status, s.Bytes, s.Err, s.Warmup())
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
