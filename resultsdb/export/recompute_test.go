package export

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/exportcheck"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestStepFiguresRecomputeFromTheExport stores a run of three steps of 1, 2 and 3 app
// instances (the third on a second cell), with Log Cache counters read every 1.7 s out of
// step with the 6 s windows and CC polls every second, computes its step figures, exports
// it and recomputes every figure from the exported rows (internal/exportcheck): count,
// rate, percentiles, CPU, memory and cells agree within 1%.
func TestStepFiguresRecomputeFromTheExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	epoch := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	run, err := store.CreateRun(ctx, "instances", "instances.yml", "version: 1", epoch)
	if err != nil {
		t.Fatal(err)
	}
	id, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: "java", AppName: "gen", InstanceIndex: 0, Host: "127.0.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.NewSampleWriter(id, resultsdb.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Step k runs from 10k s: 2 s of warm-up, a 6 s window, ended 0.3 s late.
	start := func(k int) time.Time { return epoch.Add(time.Duration(10*k) * time.Second) }
	seq := uint32(0)
	for k := range 3 {
		if err := store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: "java", Index: k, Instances: 1, Users: 4, Started: start(k),
			WarmupUntil: start(k).Add(2 * time.Second), Ends: start(k).Add(8 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		for j := range 800 {
			seq++
			s := sample.Sample{Seq: seq, IntendedUS: int64(10*k)*1e6 + int64(j)*10_000, LatencyUS: int32(500 + (j*7919)%20000 + 3000*k),
				Status: 200, Bytes: 100, Step: uint8(k)}
			if j < 200 {
				s.Flags = sample.FlagWarmup
			}
			w.Add(s)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Instance i runs from step i on, at 0.2 cores in the first half of each window and
	// 0.5 in the second (idle between windows), its memory rising 1 MB a second;
	// instance 2 on a second cell.
	cores := func(at time.Time) float64 {
		s := at.Sub(epoch).Seconds()
		in := math.Mod(s, 10)
		switch {
		case in >= 2 && in < 5:
			return 0.2
		case in >= 5 && in < 8:
			return 0.5
		}
		return 0
	}
	cpuTime := func(at time.Time) int64 { // the integral of cores, in 1 ms slices
		var ns int64
		for t := epoch; t.Before(at); t = t.Add(time.Millisecond) {
			ns += int64(cores(t) * 1e6)
		}
		return ns
	}
	host := func(i int) string { return map[bool]string{true: "127.0.1.2", false: "127.0.1.1"}[i == 2] }
	var rows []resultsdb.ContainerMetric
	for i := range 3 {
		first := start(i)
		for at := first.Add(370 * time.Millisecond); at.Before(start(3).Add(5 * time.Second)); at = at.Add(1700 * time.Millisecond) {
			ns, mem := cpuTime(at)-cpuTime(first), int64(100e6+at.Sub(first).Seconds()*1e6)
			rows = append(rows, resultsdb.ContainerMetric{RunID: run.ID, At: at, AppName: "java-app", AppGUID: "guid", ProcessType: "web",
				InstanceIndex: i, CPUTimeNS: &ns, MemBytes: &mem, Source: resultsdb.SourceLogCache})
		}
		for at := first.Add(time.Second); at.Before(start(3).Add(5 * time.Second)); at = at.Add(time.Second) {
			cpu, mem, quota := cores(at), int64(100e6+at.Sub(first).Seconds()*1e6), int64(1<<30)
			rows = append(rows, resultsdb.ContainerMetric{RunID: run.ID, At: at, AppName: "java-app", AppGUID: "guid", ProcessType: "web",
				InstanceIndex: i, State: "RUNNING", Host: host(i), CPU: &cpu, MemBytes: &mem, MemQuotaBytes: &quota})
		}
	}
	if err := store.InsertContainerMetrics(ctx, rows); err != nil {
		t.Fatal(err)
	}
	hostCores := map[string]float64{"127.0.1.1": 1, "127.0.1.2": 1}
	var computed []resultsdb.AppStepMetrics
	for k := range 3 {
		if err := store.EndStep(ctx, run.ID, "java", k, start(k).Add(8300*time.Millisecond), ""); err != nil {
			t.Fatal(err)
		}
		m, err := store.ComputeStepMetrics(ctx, run.ID, "java", k, []resultsdb.AppRole{{Name: "java-app", Role: resultsdb.RoleApp, HostCores: hostCores}})
		if err != nil {
			t.Fatal(err)
		}
		computed = append(computed, m.Apps[0])
	}
	// 1 and 2 instances share one 1-core cell; the third runs on a second.
	for k, want := range []struct {
		instances, cells int
		avail            float64
	}{{1, 1, 1}, {2, 1, 1}, {3, 2, 2}} {
		a := computed[k]
		if a.Instances != want.instances || a.Cells == nil || *a.Cells != want.cells || a.CPUAvailableCores == nil || *a.CPUAvailableCores != want.avail ||
			a.CPUSource != resultsdb.CPUFromCounters || a.CPUCovered != 1 {
			t.Errorf("step %d: %d instances on %v cells of %v cores (%s, covered %v); want %d on %d of %v, counters covering the window",
				k+1, a.Instances, a.Cells, a.CPUAvailableCores, a.CPUSource, a.CPUCovered, want.instances, want.cells, want.avail)
		}
		// 0.35 cores per instance on average over the window, give or take what the
		// straight lines between readings 1.7 s apart make of the change at its middle.
		if u := a.Utilisation(); u == nil || math.Abs(*a.CPUTotalCores/float64(want.instances)-0.35) > 0.05 {
			t.Errorf("step %d: %v cores in all, utilisation %v; want about 0.35 per instance", k+1, a.CPUTotalCores, u)
		}
	}
	dir := t.TempDir()
	if _, err := Export(ctx, store, run.ID, dir, nil); err != nil {
		t.Fatal(err)
	}
	diffs, n, err := exportcheck.Compare(dir, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	if n != (exportcheck.Checked{Steps: 3, CPU: 3, Memory: 3, Cells: 3}) {
		t.Errorf("compared %+v, want 3 steps with CPU, memory and cells each", n)
	}
	// The check has teeth: a CPU figure 2% off is found.
	if err := store.Pool().QueryRow(ctx, `UPDATE step_app_metrics SET cpu_total_cores = cpu_total_cores * 1.02 WHERE run_id = $1 AND step = 1
		RETURNING 1`, run.ID).Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	off := t.TempDir()
	if _, err := Export(ctx, store, run.ID, off, nil); err != nil {
		t.Fatal(err)
	}
	if diffs, _, err := exportcheck.Compare(off, 0.01); err != nil || len(diffs) != 1 {
		t.Errorf("a CPU figure 2%% off: %v (%v); want it found", diffs, err)
	}
}
