package resultsdb

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
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

// A running step shows its app's and generators' CPU and memory over its window so far,
// computed by the code that computes them when it ends. Here its planned end has passed
// (its last samples are being stored), so the window so far is the one the step stores
// and the live figures are the stored ones to the bit.
func TestLiveStepHasItsAppsSoFar(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	run := oneStepRun(t, s)
	// Cumulative CPU time every 2 s from before the step to after its end: the app's two
	// instances at 0.5 and 0.25 cores on one cell, the generator at 0.1.
	var rows []ContainerMetric
	for at := -4; at <= 16; at += 2 {
		for _, c := range []struct {
			app   string
			index int
			cores float64
		}{{"app", 0, 0.5}, {"app", 1, 0.25}, {"gen", 0, 0.1}} {
			ns, mem := int64(c.cores*float64(at+4)*1e9), int64(100<<20+c.index<<20)
			rows = append(rows, ContainerMetric{RunID: run.ID, At: run.Epoch.Add(time.Duration(at) * time.Second), AppName: c.app,
				AppGUID: c.app + "-guid", ProcessType: "web", InstanceIndex: c.index, State: "RUNNING", Host: "cell-" + c.app,
				CPUTimeNS: &ns, MemBytes: &mem})
		}
	}
	if err := s.InsertContainerMetrics(ctx, rows); err != nil {
		t.Fatal(err)
	}
	live, err := s.ReadLiveRun(ctx, run.ID, perSecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Steps) != 1 || !live.Steps[0].Live {
		t.Fatalf("steps %+v: want step 1 running", live.Steps)
	}
	if len(live.Apps) != 2 {
		t.Fatalf("the running step has %d apps' figures, want the app's and the generators'", len(live.Apps))
	}
	for _, c := range []struct {
		a     ReportApp
		role  string
		cores float64
	}{{live.Apps[0], RoleApp, 0.75}, {live.Apps[1], RoleGenerator, 0.1}} {
		a := c.a
		if a.Idx != 0 || a.Role != c.role || a.CPUSource != CPUFromCounters || a.CPUTotalCores == nil || !near(*a.CPUTotalCores, c.cores) ||
			a.CPUCovered != 1 || a.Cells == nil || *a.Cells != 1 || a.CPUAvailableCores != nil || a.MemMeanBytes == nil {
			j, _ := json.Marshal(a)
			t.Errorf("running step's %s: %s; want %v cores from counters over the whole window, on 1 cell of unknown cores, with memory", c.role, j, c.cores)
		}
	}

	if err := s.EndStep(ctx, run.ID, "v", 0, run.Epoch.Add(13*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ComputeStepMetrics(ctx, run.ID, "v", 0, []AppRole{{Name: "app", Role: RoleApp}, {Name: "gen", Role: RoleGenerator}}); err != nil {
		t.Fatal(err)
	}
	stored, err := s.ReadRun(ctx, run.ID, perSecond)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live.Apps, stored.Apps) {
		l, _ := json.Marshal(live.Apps)
		st, _ := json.Marshal(stored.Apps)
		t.Errorf("the running step's apps\n%s\nthe step's stored\n%s", l, st)
	}
}
