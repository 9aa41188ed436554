package resultsdb

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
)

// metricsRun creates a run and stores the container metrics rows returns for it.
func metricsRun(t *testing.T, s *Store, rows func(runID string) []ContainerMetric) string {
	t.Helper()
	ctx := context.Background()
	run, err := s.CreateRun(ctx, "demo", "demo.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertContainerMetrics(ctx, rows(run.ID)); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// cm is a RUNNING row with usage; cpu < 0 means no usage, ent < 0 no entitlement.
func cm(run string, at time.Time, app string, idx int, host string, cpu, ent float64, mem int64) ContainerMetric {
	m := ContainerMetric{RunID: run, At: at, AppName: app, AppGUID: app + "-guid", ProcessType: "web", InstanceIndex: idx,
		State: "RUNNING", Host: host}
	if cpu >= 0 {
		m.CPU, m.MemBytes = &cpu, &mem
	}
	if ent >= 0 {
		m.CPUEntitlement = &ent
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSumAppMetrics(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	from, to := t0.Add(10*time.Second), t0.Add(30*time.Second)
	f, i := func(v float64) *float64 { return &v }, func(v int64) *int64 { return &v }
	stat := func(inst string, at time.Time, cpu float64, mem int64) metricRow {
		return metricRow{instance: inst, at: at, cpu: f(cpu), mem: i(mem), quota: i(1 << 30)}
	}
	counter := func(inst string, at time.Time, cpuSeconds float64) metricRow {
		return metricRow{instance: inst, at: at, cpuTimeNS: i(int64(cpuSeconds * 1e9))}
	}
	cases := []struct {
		name     string
		rows     []metricRow
		source   string
		inst     int
		mean     float64
		maxCores float64
		total    float64
		points   int
		covered  float64
	}{
		{"nothing", nil, "", 0, 0, 0, 0, 0, 0},
		{"sampled rates inside the window only", []metricRow{
			stat("web/0", from.Add(-time.Second), 0.99, 9000), stat("web/0", from, 0.2, 1000), stat("web/0", to, 0.6, 2000),
			stat("web/0", to.Add(time.Second), 0.99, 9000), stat("web/1", from.Add(10*time.Second), 0.4, 3000),
		}, CPUFromStats, 2, 0.4, 0.4, 0.8, 3, 0.5},
		// Interpolated to the edges: web/0 used a core until from+4 s and nothing after, so 4
		// of its CPU-seconds fall in the window's 20 s (0.2 cores); the readings bracketing
		// the window would say 8 over 28 s.
		{"counters interpolated to the window's edges", []metricRow{
			counter("web/0", from.Add(-4*time.Second), 0), counter("web/0", from.Add(4*time.Second), 8),
			counter("web/0", to.Add(4*time.Second), 8),
			counter("web/1", from, 0), counter("web/1", to, 5), // a quarter of a core
		}, CPUFromCounters, 2, 0.225, 0.25, 0.45, 5, 1},
		{"counters only inside the window cover part of it", []metricRow{
			counter("web/0", from.Add(5*time.Second), 10), counter("web/0", from.Add(15*time.Second), 15),
		}, CPUFromCounters, 1, 0.5, 0.5, 0.5, 2, 0.5},
		{"no reading after the window: the span stops at the last", []metricRow{
			counter("web/0", from.Add(-2*time.Second), 0), counter("web/0", from.Add(2*time.Second), 2),
			counter("web/0", from.Add(10*time.Second), 6),
		}, CPUFromCounters, 1, 0.5, 0.5, 0.5, 3, 0.5},
		{"a restart between the readings falls back to the sampled rate", []metricRow{
			{instance: "web/0", at: from, cpuTimeNS: i(50e9), cpu: f(0.3)}, {instance: "web/0", at: to, cpuTimeNS: i(1e9), cpu: f(0.5)},
		}, CPUFromStats, 1, 0.4, 0.4, 0.4, 2, 1},
		{"one sampled instance makes the whole figure sampled", []metricRow{
			counter("web/0", from, 0), counter("web/0", to, 20), stat("web/1", from, 0.5, 1),
		}, CPUFromStats, 2, 0.75, 1, 1.5, 3, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SumAppMetrics(c.rows, from, to, nil)
			if got.CPUSource != c.source || got.Instances != c.inst || got.CPUPoints != c.points || !near(got.CPUCovered, c.covered) {
				t.Fatalf("source %q, %d instances, %d points, covered %v; want %q, %d, %d, %v",
					got.CPUSource, got.Instances, got.CPUPoints, got.CPUCovered, c.source, c.inst, c.points, c.covered)
			}
			if c.source == "" {
				if got.CPUMeanCores != nil || got.CPUTotalCores != nil {
					t.Fatalf("CPU figures without readings: %+v", got)
				}
				return
			}
			if !near(*got.CPUMeanCores, c.mean) || !near(*got.CPUMaxCores, c.maxCores) || !near(*got.CPUTotalCores, c.total) {
				t.Fatalf("cores mean %v max %v total %v; want %v %v %v", *got.CPUMeanCores, *got.CPUMaxCores, *got.CPUTotalCores, c.mean, c.maxCores, c.total)
			}
		})
	}
	// Memory is time-weighted per instance: web/0 rises from 1000 at from to 2000 at to
	// (mean 1500; the 9000s outside the window do not count), web/1 has one reading
	// (3000); the step's figure is the mean of the instances'.
	t.Run("memory over the window", func(t *testing.T) {
		got := SumAppMetrics(cases[1].rows, from, to, nil)
		if got.MemMeanBytes == nil || !near(*got.MemMeanBytes, 2250) || *got.MemMaxBytes != 3000 || *got.MemQuotaBytes != 1<<30 {
			t.Fatalf("memory mean %v max %v quota %v; want 2250, 3000, 1 GiB", got.MemMeanBytes, got.MemMaxBytes, got.MemQuotaBytes)
		}
	})
	// Dense readings early in the window do not pull the mean towards them: 100 for the
	// first 2 s (five readings), 400 for the last 18 s (two), with a straight line between.
	t.Run("memory weighted by time, not by reading", func(t *testing.T) {
		var rows []metricRow
		for k := range 5 {
			rows = append(rows, metricRow{instance: "web/0", at: from.Add(time.Duration(k) * 500 * time.Millisecond), mem: i(100)})
		}
		rows = append(rows, metricRow{instance: "web/0", at: from.Add(4 * time.Second), mem: i(400)},
			metricRow{instance: "web/0", at: to.Add(time.Second), mem: i(400)})
		got := SumAppMetrics(rows, from, to, nil)
		// 2 s at 100, 2 s rising to 400 (mean 250), 16 s at 400: 8000/20 = 400 − (200+300·2)/20.
		want := (2*100 + 2*250 + 16*400) / 20.0
		if got.MemMeanBytes == nil || !near(*got.MemMeanBytes, want) || *got.MemMaxBytes != 400 {
			t.Fatalf("memory mean %v max %v; want %v, 400", got.MemMeanBytes, got.MemMaxBytes, want)
		}
	})
}

// The CPU available is the cores of the distinct hosts the RUNNING instances were on in
// the window (CC process stats), each host once; where a host's cores, or the hosts,
// are unknown, so is the CPU available, and with no host at all the cells too.
func TestSumAppMetricsCells(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	from, to := t0.Add(10*time.Second), t0.Add(30*time.Second)
	i := func(v int64) *int64 { return &v }
	// inst used cores on host: a stats poll in the middle of the window, Log Cache
	// counters at its edges.
	on := func(inst, host string, cores float64) []metricRow {
		return []metricRow{
			{instance: inst, at: from, source: SourceLogCache, cpuTimeNS: i(0)},
			{instance: inst, at: from.Add(10 * time.Second), source: SourceStats, state: "RUNNING", host: host},
			{instance: inst, at: to, source: SourceLogCache, cpuTimeNS: i(int64(cores * 20e9))},
		}
	}
	join := func(rs ...[]metricRow) []metricRow { return slices.Concat(rs...) }
	cores := map[string]float64{"127.0.1.1": 1, "127.0.1.2": 2}
	cases := []struct {
		name        string
		rows        []metricRow
		cells       int // -1: unknown
		avail, util float64
		perInstance float64 // -1: unknown
	}{
		{"three instances on one 1-core cell", join(on("web/0", "127.0.1.1", 0.3), on("web/1", "127.0.1.1", 0.3), on("web/2", "127.0.1.1", 0.3),
			[]metricRow{{instance: "web/3", at: from.Add(time.Second), source: SourceStats, state: "CRASHED", host: "127.0.1.2"}}),
			1, 1, 0.9, 1.0 / 3},
		{"two instances on two cells", join(on("web/0", "127.0.1.1", 0.9), on("web/1", "127.0.1.2", 1.5)), 2, 3, 0.8, 1.5},
		{"a cell of unknown cores", join(on("web/0", "127.0.1.1", 0.9), on("web/1", "10.0.0.7", 1)), 2, -1, -1, -1},
		{"hosts from polls on either side of the window", join(
			[]metricRow{{instance: "web/0", at: from.Add(-3 * time.Second), source: SourceStats, state: "RUNNING", host: "127.0.1.2"}},
			[]metricRow{{instance: "web/0", at: from, source: SourceLogCache, cpuTimeNS: i(0)}, {instance: "web/0", at: to, source: SourceLogCache, cpuTimeNS: i(20e9)}},
			[]metricRow{{instance: "web/0", at: to.Add(3 * time.Second), source: SourceStats, state: "RUNNING", host: "127.0.1.2"}}), 1, 2, 0.5, 2},
		{"Log Cache rows only: no hosts", []metricRow{
			{instance: "web/0", at: from, source: SourceLogCache, cpuTimeNS: i(0)}, {instance: "web/0", at: to, source: SourceLogCache, cpuTimeNS: i(10e9)},
		}, -1, -1, -1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SumAppMetrics(c.rows, from, to, cores)
			if c.cells < 0 {
				if got.Cells != nil {
					t.Errorf("cells %d; want unknown", *got.Cells)
				}
			} else if got.Cells == nil || *got.Cells != c.cells {
				t.Errorf("cells %v; want %d", got.Cells, c.cells)
			}
			u, per := got.Utilisation(), got.CoresPerInstance()
			if c.avail < 0 {
				if got.CPUAvailableCores != nil || u != nil || per != nil {
					t.Errorf("available %v, utilisation %v, per instance %v; want unknown", got.CPUAvailableCores, u, per)
				}
				return
			}
			if got.CPUAvailableCores == nil || !near(*got.CPUAvailableCores, c.avail) || u == nil || !near(*u, c.util) || per == nil || !near(*per, c.perInstance) {
				t.Errorf("available %v, utilisation %v, per instance %v; want %v, %v, %v", got.CPUAvailableCores, u, per, c.avail, c.util, c.perInstance)
			}
		})
	}
}

// The run-queue wait rests on the same counter readings as the CPU: per instance Δwait
// / Δtime, and its share of the ready time is Δwait / (Δwait + ΔCPU) over all
// instances. An instance without the counter leaves both unknown: a figure of the
// others alone would understate the wait.
func TestSumAppMetricsWait(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	from, to := t0.Add(10*time.Second), t0.Add(30*time.Second)
	i := func(v int64) *int64 { return &v }
	counter := func(inst string, at time.Time, cpuSeconds, waitSeconds float64) metricRow {
		r := metricRow{instance: inst, at: at, cpuTimeNS: i(int64(cpuSeconds * 1e9))}
		if waitSeconds >= 0 {
			r.waitNS = i(int64(waitSeconds * 1e9))
		}
		return r
	}
	got := SumAppMetrics([]metricRow{
		counter("web/0", from, 100, 50), counter("web/0", to, 110, 80), // 0.5 core run, 1.5 waited
		counter("web/1", from, 0, 0), counter("web/1", to, 10, 10), // 0.5 run, 0.5 waited
	}, from, to, nil)
	if got.CPUWaitCores == nil || !near(*got.CPUWaitCores, 1) || !near(*got.CPUWaitShare, 2.0/3) {
		t.Fatalf("wait %v cores, share %v; want 1 per instance, 2/3 of the ready time", got.CPUWaitCores, got.CPUWaitShare)
	}
	got = SumAppMetrics([]metricRow{
		counter("web/0", from, 100, 50), counter("web/0", to, 110, 80), counter("web/1", from, 0, -1), counter("web/1", to, 10, -1),
	}, from, to, nil)
	if got.CPUWaitCores != nil || got.CPUWaitShare != nil || got.CPUMeanCores == nil {
		t.Fatalf("one instance without the wait counter: wait %v, share %v, CPU %v; want no wait figures, the CPU", got.CPUWaitCores, got.CPUWaitShare, got.CPUMeanCores)
	}
}

func TestLatestHostsReadsTheLatestPoll(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	run := metricsRun(t, s, func(r string) []ContainerMetric {
		crashed := cm(r, t0.Add(10*time.Second), "api", 2, "10.0.0.8", -1, -1, 0)
		crashed.State = "CRASHED"
		return []ContainerMetric{
			// An older poll: instance 0 was elsewhere and instance 1 has since gone.
			cm(r, t0, "api", 0, "10.0.0.9", 0.1, 0.1, 1),
			cm(r, t0, "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			// The latest poll of api; instance 1 reported twice, as CC may.
			cm(r, t0.Add(10*time.Second), "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			cm(r, t0.Add(10*time.Second), "api", 0, "10.0.0.1", -1, -1, 0), // running without usage
			cm(r, t0.Add(10*time.Second), "api", 1, "10.0.0.2", 0.1, 0.1, 1),
			crashed,
			// gen's latest poll is older than api's: each app has its own.
			cm(r, t0.Add(5*time.Second), "gen", 0, "10.0.0.1", 0.5, -1, 1),
			cm(r, t0.Add(5*time.Second), "gen", 1, "10.0.0.3", 0.5, -1, 1),
			// All of other's instances are down at its latest poll.
			cm(r, t0, "other", 0, "10.0.0.5", 0.1, 0.1, 1),
			func() ContainerMetric {
				m := cm(r, t0.Add(20*time.Second), "other", 0, "10.0.0.5", -1, -1, 0)
				m.State = "DOWN"
				return m
			}(),
		}
	})

	got, err := s.LatestHosts(ctx, run, []string{"api", "gen", "other", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]InstanceHost{
		"api": {{"api", 0, "10.0.0.1"}, {"api", 1, "10.0.0.2"}},
		"gen": {{"gen", 0, "10.0.0.1"}, {"gen", 1, "10.0.0.3"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LatestHosts =\n%v\nwant\n%v", got, want)
	}

	t.Run("only the apps asked for", func(t *testing.T) {
		got, err := s.LatestHosts(ctx, run, []string{"gen"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || len(got["gen"]) != 2 {
			t.Fatalf("LatestHosts(gen) = %v", got)
		}
	})

	t.Run("no apps means all", func(t *testing.T) {
		got, err := s.LatestHosts(ctx, run, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("LatestHosts(nil) = %v, want %v", got, want)
		}
	})
}
