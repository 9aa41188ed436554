package resultsdb

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen/sample"
)

// oneStepRun is a run that started a minute ago with one variant v (app "app",
// generators "gen") and its step 0: started at the epoch, warm-up until 2 s, planned to
// end at 12 s, and 100 samples intended in each of its seconds (latencies 1..100 ms
// plus the second, so second k's p50 is 50 ms + k µs and its p99 99 ms + k µs).
func oneStepRun(t *testing.T, s *Store) *Run {
	t.Helper()
	ctx := context.Background()
	epoch := time.Now().Add(-time.Minute).Truncate(time.Second)
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddRunVariant(ctx, RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "gen", AppName: "app",
		Workload: []byte(`{"model": "closed", "users": 1}`)}); err != nil {
		t.Fatal(err)
	}
	worker, err := s.RegisterWorker(ctx, Worker{RunID: run.ID, Variant: "v", AppName: "gen"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartStep(ctx, Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 1, Users: 1, Started: epoch,
		WarmupUntil: epoch.Add(2 * time.Second), Ends: epoch.Add(12 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	w, err := s.NewSampleWriter(worker, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seq uint32
	for sec := range 12 {
		for j := range 100 {
			seq++
			smp := sample.Sample{Seq: seq, IntendedUS: int64(sec)*1e6 + int64(j)*10_000, LatencyUS: int32((j+1)*1000 + sec), Status: 200}
			if sec < 2 {
				smp.Flags = sample.FlagWarmup
			}
			w.Add(smp)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return run
}

func perSecond(float64) float64 { return 1 }

// A step's series stored before schema v16 has no p50 (NULL): it is read as a step
// without a stored series, computed from its samples, so it has its p50, and every
// other figure is the one it would have stored, not the stored row's.
func TestSeriesStoredWithoutP50AreComputed(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run := oneStepRun(t, s)
	if err := s.EndStep(ctx, run.ID, "v", 0, run.Epoch.Add(12*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ComputeStepMetrics(ctx, run.ID, "v", 0, nil); err != nil {
		t.Fatal(err)
	}
	read := func() []SeriesPoint {
		t.Helper()
		r, err := s.ReadRun(ctx, run.ID, perSecond)
		if err != nil {
			t.Fatal(err)
		}
		return r.Series["v"]
	}
	stored := read()
	if len(stored) != 12 {
		t.Fatalf("%d points, want one per second of the step (12)", len(stored))
	}
	for _, p := range stored {
		if p.P50US == nil || *p.P50US != 50_000+p.K || p.P99US != 99_000+p.K || p.N != 100 {
			j, _ := json.Marshal(p)
			t.Fatalf("second %d: %s; want n 100, p50 %d, p99 %d", p.K, j, 50_000+p.K, 99_000+p.K)
		}
	}
	// As a row of schema v15 reads after the migration, its p99 spoilt to tell it apart.
	if _, err := s.Pool().Exec(ctx, `UPDATE step_series SET p50_us = NULL, p99_us = array_fill(0::bigint, ARRAY[cardinality(p99_us)])
		WHERE run_id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	if got := read(); !reflect.DeepEqual(got, stored) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(stored)
		t.Errorf("a series stored without p50 reads\n%s\nwant the one computed from the samples\n%s", g, w)
	}
}
