//go:build linux

package cells

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

// metricsRecorder collects what OnMetrics receives.
type metricsRecorder struct {
	mu sync.Mutex
	ms []ContainerMetrics
}

func (r *metricsRecorder) add(ms []ContainerMetrics) {
	r.mu.Lock()
	r.ms = append(r.ms, ms...)
	r.mu.Unlock()
}

func (r *metricsRecorder) of(guid string) []ContainerMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ContainerMetrics
	for _, m := range r.ms {
		if m.ProcessGUID == guid {
			out = append(out, m)
		}
	}
	return out
}

// Every sample emits each live instance's counters: CPU time and entitlement only ever
// grow, the entitlement accrues at the instance's entitled cores (128 MB of a 1024 MB
// one-CPU cell: 1/8 core) over its age, and each sample's CPU rate is exactly the CPU
// time between two readings over the wall time between them, so two readings give a
// step's CPU.
func TestContainerMetricsCounters(t *testing.T) {
	t.Parallel()
	e, rec := startMeteredCell(t)
	e.c.Desire(fixtureSpec("p-count", 1, map[string]string{"BUSY": "1"}))
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-count", 1))
	eventually(t, 20*time.Second, "five readings with CPU time", func() bool {
		ms := rec.of("p-count")
		return len(ms) >= 5 && ms[len(ms)-1].CPUTime > 0
	})
	in := e.c.Instances("p-count")[0]
	ms := rec.of("p-count")
	isolated, _ := e.c.Isolation()
	wantCounters := map[bool]string{true: "cgroup", false: "proc"}[isolated]
	var prev *ContainerMetrics
	for i := range ms {
		m := &ms[i]
		if m.InstanceGUID != in.GUID {
			continue // a reading of an earlier start, had it crashed
		}
		if m.AppGUID != "app-p-count" || m.AppName != "fixture" || m.ProcessType != "web" || m.Index != 0 || m.Cell != "apps" ||
			m.MemQuotaBytes != 128<<20 || m.DiskQuotaBytes != 256<<20 || m.Counters != wantCounters || m.MemBytes == 0 {
			t.Fatalf("reading %d = %+v", i, *m)
		}
		if want := m.Age / 8; absDuration(m.Entitlement-want) > time.Duration(i+1)*time.Microsecond {
			t.Errorf("reading %d: entitlement %v, want age/8 = %v", i, m.Entitlement, want)
		}
		if limit := time.Duration(runtime.NumCPU()) * m.Age; m.CPUTime > limit {
			t.Errorf("reading %d: CPU time %v over %d CPUs × age %v", i, m.CPUTime, runtime.NumCPU(), m.Age)
		}
		if prev != nil {
			if m.CPUTime < prev.CPUTime || m.Entitlement < prev.Entitlement || m.Age <= prev.Age || !m.Time.After(prev.Time) {
				t.Errorf("reading %d went backwards: %+v after %+v", i, *m, *prev)
			}
			rate := (m.CPUTime - prev.CPUTime).Seconds() / m.Time.Sub(prev.Time).Seconds()
			if math.Abs(rate-m.CPU) > 1e-6 {
				t.Errorf("reading %d: CPU %v, but Δ CPU time / Δ wall = %v", i, m.CPU, rate)
			}
		}
		prev = m
	}
	if prev == nil {
		t.Fatal("no reading of the running instance")
	}
}

// A container's age counts from before its process starts, so however long the
// starter waits for a CPU meanwhile (here 1 s), the container never shows more CPU
// time than its cores could give over its age.
func TestContainerAgeCoversItsCPUTime(t *testing.T) {
	t.Parallel()
	e, rec := startMeteredCell(t)
	e.c.afterStart = func() { time.Sleep(time.Second) }
	e.c.Desire(fixtureSpec("p-late", 1, map[string]string{"BUSY": "1"}))
	eventually(t, 20*time.Second, "a reading", func() bool { return len(rec.of("p-late")) > 0 })
	cores := runtime.NumCPU() // without isolation the instance may use them all
	if isolated, _ := e.c.Isolation(); isolated {
		cores = 1
	}
	m := rec.of("p-late")[0]
	if limit := time.Duration(cores) * m.Age; m.CPUTime > limit {
		t.Errorf("first reading: CPU time %v over %d CPU(s) × age %v", m.CPUTime, cores, m.Age)
	}
}

// startMeteredCell starts cells with one cell, "apps", of one CPU and 1024 MB, whose
// container metrics go to the returned recorder.
func startMeteredCell(t *testing.T) (*env, *metricsRecorder) {
	t.Helper()
	rec := &metricsRecorder{}
	cpu := availableCPUs(t)[0]
	e := startCells(t, func(c *Config) {
		c.Cells = []Cell{{"apps", []int{cpu}}}
		c.CellMemoryMB = 1024
		c.OnMetrics = rec.add
	})
	return e, rec
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Cores is what an instance of each cell may use: every CPU without isolation (the
// cells' own CPUs do not confine anything then), its cell's CPUs with it.
func TestCores(t *testing.T) {
	t.Parallel()
	c := New(Config{Name: testName(t), NoIsolation: true, TmpDir: t.TempDir(),
		Cells: []Cell{{"apps", []int{0}}, {"loadgen", []int{1, 2}}}})
	c.cpusAvailable = func() ([]int, error) { return []int{0, 1, 2, 3}, nil }
	if got := c.Cores(); len(got) != 0 {
		t.Errorf("before Start: %v", got)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Cores(); len(got) != 2 || got["apps"] != 4 || got["loadgen"] != 4 {
		t.Errorf("without isolation: %v, want every one of 4 CPUs for both", got)
	}
	// Each cell has its own address, the host its instances report.
	if got := c.Addrs(); len(got) != 2 || got["apps"] != "127.0.1.1" || got["loadgen"] != "127.0.1.2" {
		t.Errorf("addresses %v, want apps 127.0.1.1 and loadgen 127.0.1.2", got)
	}

	cpus := availableCPUs(t)
	e := startCells(t, func(c *Config) { c.Cells = []Cell{{"apps", cpus[:1]}, {"all", nil}} })
	requireIsolation(t, e.c)
	if got := e.c.Cores(); len(got) != 2 || got["apps"] != 1 || got["all"] != float64(len(cpus)) {
		t.Errorf("with isolation: %v, want apps 1 and all %d", got, len(cpus))
	}
	// The cell's own cgroup counts its CPU time; a cell without a group has none.
	if _, err := e.c.CellCPU("apps"); err != nil {
		t.Errorf("CellCPU of an isolated cell: %v", err)
	}
	if _, err := c.CellCPU("apps"); !errors.Is(err, ErrNotIsolated) {
		t.Errorf("CellCPU without isolation: %v, want ErrNotIsolated", err)
	}
}

// Two instances that each spin a core, on a cell of one CPU: each waits on the run
// queue while the other runs, so their waits together are at least about the wall time
// (both are always ready, and one CPU runs at most one of them at a time), whatever
// else the machine runs. The counters never go backwards.
func TestContainerMetricsRunQueueWait(t *testing.T) {
	t.Parallel()
	e, rec := startMeteredCell(t)
	requireIsolation(t, e.c)
	e.c.Desire(fixtureSpec("p-wait", 2, map[string]string{"BUSY": "1"}))
	eventually(t, 20*time.Second, "running", allRunning(e.c, "p-wait", 2))
	guids := map[int]string{}
	for _, in := range e.c.Instances("p-wait") {
		guids[in.Index] = in.GUID
	}
	// Readings of the running instances, by index, from the first after both ran.
	readings := func() map[int][]ContainerMetrics {
		out := map[int][]ContainerMetrics{}
		for _, m := range rec.of("p-wait") {
			if m.InstanceGUID == guids[m.Index] {
				out[m.Index] = append(out[m.Index], m)
			}
		}
		return out
	}
	eventually(t, 30*time.Second, "readings a second apart", func() bool {
		rs := readings()
		for i := range 2 {
			if len(rs[i]) < 2 || rs[i][len(rs[i])-1].Time.Sub(rs[i][0].Time) < time.Second {
				return false
			}
		}
		return true
	})
	var waited time.Duration
	wall := time.Hour
	for i, rs := range readings() {
		for j, m := range rs {
			if m.CPUWait == nil {
				t.Fatalf("instance %d reading %d: no run-queue wait, though schedstat is read on this kernel", i, j)
			}
			if j > 0 && *m.CPUWait < *rs[j-1].CPUWait {
				t.Errorf("instance %d reading %d: wait went back from %v to %v", i, j, *rs[j-1].CPUWait, *m.CPUWait)
			}
		}
		first, last := rs[0], rs[len(rs)-1]
		waited += *last.CPUWait - *first.CPUWait
		wall = min(wall, last.Time.Sub(first.Time))
	}
	if waited < wall/2 {
		t.Errorf("two spinning instances on one CPU waited %v together over %v, want about the wall time", waited, wall)
	}
}

func TestWaitCounter(t *testing.T) {
	var w waitCounter
	if got := w.add(map[int]time.Duration{1: 10, 2: 5}); got != 15 {
		t.Errorf("first reading: %v, want all of it (15)", got)
	}
	// Thread 1 waited 4 more, thread 2 exited, thread 3 is new, thread 4's id was
	// recycled since: it counts from 0.
	if got := w.add(map[int]time.Duration{1: 14, 3: 7}); got != 26 {
		t.Errorf("second reading: %v, want 15+4+7 = 26", got)
	}
	if got := w.add(map[int]time.Duration{1: 2, 3: 7}); got != 28 {
		t.Errorf("a recycled thread id: %v, want 26+2 = 28", got)
	}
	if _, err := parseSchedstat([]byte("200786919 48977715 689\n")); err != nil {
		t.Error(err)
	}
	if w, _ := parseSchedstat([]byte("1 48977715 689\n")); w != 48977715 {
		t.Errorf("parseSchedstat: %v, want the second field", w)
	}
	if _, err := parseSchedstat([]byte("1\n")); err == nil {
		t.Error("parseSchedstat of one field: no error")
	}
}
