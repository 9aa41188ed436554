package dashboard

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// BenchmarkLiveRead is what one read of the live page costs (report.BuildLive against a
// real Postgres on loopback): a run with 3 finished steps of 30 s at RATE req/s (their
// figures and series stored) and a running step with SECONDS s of samples so far, whose
// figures and series are computed from them at every read; with the CPU the read cost
// the database server and this process. The dashboard reads once a second while a page
// listens, less often when a read is slow (MaxDBShare). BENCHMARKS.md has the figures.
func BenchmarkLiveRead(b *testing.B) {
	for _, c := range []struct{ rate, seconds int }{{100, 30}, {1000, 30}, {5000, 60}} {
		b.Run(fmt.Sprintf("rate=%d/running=%ds", c.rate, c.seconds), func(b *testing.B) {
			store, id := seedBench(b, c.rate, c.seconds)
			ctx := context.Background()
			pg := testpg.Server(b).PID()
			dbBefore, errDB := procstat.TreeTicks(pg)
			self, errSelf := procstat.Read(os.Getpid())
			b.ResetTimer()
			for b.Loop() {
				if _, err := report.BuildLive(ctx, store, id); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(c.rate*(90+c.seconds)), "samples")
			// CPU in clock ticks (USER_HZ, 100 per second on Linux): the database
			// server's, and this process's (where a run's own generators are).
			dbAfter, errDB2 := procstat.TreeTicks(pg)
			selfAfter, errSelf2 := procstat.Read(os.Getpid())
			if errDB == nil && errDB2 == nil && errSelf == nil && errSelf2 == nil {
				b.ReportMetric(float64(dbAfter-dbBefore)*10/float64(b.N), "db-cpu-ms/op")
				b.ReportMetric(float64(selfAfter.Ticks-self.Ticks)*10/float64(b.N), "own-cpu-ms/op")
			}
		})
	}
}

func seedBench(b *testing.B, rate, running int) (*resultsdb.Store, string) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	epoch := time.Now().Add(-time.Duration(90+running+5) * time.Second).Truncate(time.Second)
	run, err := store.CreateRun(ctx, "live", "live.yml", liveSpec, epoch)
	if err != nil {
		b.Fatal(err)
	}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "live-gen-v", TargetURL: "http://127.0.0.1:18080",
		Workload: []byte(`{"model": "closed", "users": 2}`)}); err != nil {
		b.Fatal(err)
	}
	worker, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "live-gen-v", Host: "10.0.1.1"})
	if err != nil {
		b.Fatal(err)
	}
	w, err := store.NewSampleWriter(worker, resultsdb.WriterOptions{BatchSize: 1 << 16, MaxBuffered: 1 << 22})
	if err != nil {
		b.Fatal(err)
	}
	seq := uint32(0)
	add := func(idx, from, to int) {
		for sec := from; sec < to; sec++ {
			for j := range rate {
				seq++
				s := sample.Sample{Seq: seq, IntendedUS: int64(sec)*1e6 + int64(j)*1e6/int64(rate), LatencyUS: int32(1000 + (j*7919)%5000),
					Bytes: 100, Status: 200, Step: uint8(idx)}
				if sec-30*idx < 2 {
					s.Flags = sample.FlagWarmup
				}
				w.Add(s)
			}
		}
		if err := w.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for idx := range 4 {
		start := epoch.Add(time.Duration(30*idx) * time.Second)
		end := start.Add(30 * time.Second)
		if idx == 3 {
			end = start.Add(time.Hour)
		}
		if err := store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: "v", Index: idx, Instances: idx + 1, Users: 2,
			Started: start, WarmupUntil: start.Add(2 * time.Second), Ends: end}); err != nil {
			b.Fatal(err)
		}
		if idx < 3 {
			add(idx, 30*idx, 30*idx+30)
			if err := store.EndStep(ctx, run.ID, "v", idx, end, ""); err != nil {
				b.Fatal(err)
			}
			if _, err := store.ComputeStepMetrics(ctx, run.ID, "v", idx, nil); err != nil {
				b.Fatal(err)
			}
			continue
		}
		add(idx, 90, 90+running)
	}
	if _, err := store.Pool().Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	return store, run.ID
}
