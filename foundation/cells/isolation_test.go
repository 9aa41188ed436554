//go:build linux

package cells

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
)

// The tests below that need cgroups skip only where Isolation reports none (not root,
// no writable hierarchy); on the CI machines, root with cgroup v1, they run. Those
// that measure CPU shares do not run in parallel with the other tests, whose busy
// instances would compete for the same CPUs.

// requireIsolation skips the test when e's cells run without cgroups.
func requireIsolation(t *testing.T, c *Cells) {
	t.Helper()
	if ok, reason := c.Isolation(); !ok {
		t.Skipf("no cgroup isolation here (%s)", reason)
	}
}

// availableCPUs are the CPUs this test process may use.
func availableCPUs(t *testing.T) []int {
	t.Helper()
	cpus, err := (&Cells{}).availableCPUs(nil)
	if err != nil || len(cpus) == 0 {
		t.Fatalf("available CPUs: %v %v", cpus, err)
	}
	return cpus
}

// groupOf is the cgroup the process pid is in, found from /proc/<pid>/cgroup.
func groupOf(t *testing.T, c *Cells, pid int) *cgroup.Group {
	t.Helper()
	c.mu.Lock()
	root := c.root
	c.mu.Unlock()
	if root == nil {
		t.Fatal("no cgroup root")
	}
	g, err := root.Hierarchy().GroupOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// cpusAllowed is Cpus_allowed_list of /proc/<pid>/status.
func cpusAllowed(t *testing.T, pid int) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			cpus, err := cgroup.ParseCPUList(v)
			if err != nil {
				t.Fatal(err)
			}
			return cpus
		}
	}
	t.Fatalf("no Cpus_allowed_list for pid %d", pid)
	return nil
}

func cpuUsage(t *testing.T, g *cgroup.Group) time.Duration {
	t.Helper()
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u.CPU
}

// cpuBusy is how long CPU cpu has been busy, from /proc/stat.
func cpuBusy(t *testing.T, cpu int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu"+strconv.Itoa(cpu) {
			continue
		}
		var busy int64
		for i, v := range f[1:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			if i != 3 && i != 4 && i < 8 { // all but idle and iowait; guest time is in user
				busy += n
			}
		}
		return time.Duration(busy) * (time.Second / clockTicks)
	}
	t.Fatalf("no cpu%d in /proc/stat", cpu)
	return 0
}

func busySpec(guid string, memoryMB int, segment string) ProcessSpec {
	spec := fixtureSpec(guid, 1, map[string]string{"BUSY": "1"})
	spec.MemoryMB, spec.IsolationSegment = memoryMB, segment
	return spec
}

// Not parallel: see the top of the file.
func TestBusyInstanceUsesOneCPUOfItsCell(t *testing.T) {
	cpu := availableCPUs(t)[0]
	e := startCells(t, func(c *Config) {
		c.Cells = []Cell{{"apps", []int{cpu}}}
		c.CellMemoryMB = 1024
		c.StatsInterval = 250 * time.Millisecond
		c.First = true // other processes on the CPU take little of it while it measures
	})
	requireIsolation(t, e.c)
	// Two busy loops: unconfined they would take two CPUs, so a reading of about 1.0
	// shows both the cpuset and the accounting of every process in the container.
	spec := fixtureSpec("p-spin", 1, nil)
	spec.Command = "(while :; do :; done) & (while :; do :; done) & exec " + fixtureBin
	spec.IsolationSegment = "apps"
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-spin", 1))
	time.Sleep(600 * time.Millisecond) // two samples, the first of which spans the start

	// Averages over windows of ~2s. Other load on the machine can only lower one,
	// so the best of up to three must reach about 1.0, and none may exceed it.
	var windows []float64
	var busy float64 // of the CPU in the last window, by anything
	for len(windows) < 3 && (len(windows) == 0 || slices.Max(windows) < 0.7) {
		busy0, wall0 := cpuBusy(t, cpu), time.Now()
		var sum float64
		const n = 8
		for range n {
			time.Sleep(250 * time.Millisecond)
			in := e.c.Instances("p-spin")[0]
			sum += in.CPU
			if in.Cell != "apps" || in.CellAddr != "127.0.1.1" || in.Host != "127.0.0.1" || in.MemBytes == 0 {
				t.Fatalf("instance = %+v", in)
			}
			// 128 MB of a 1024 MB cell with one CPU is entitled to 1/8 of it.
			if want := in.CPU * 8; math.Abs(in.CPUEntitlement-want) > 1e-9 {
				t.Errorf("CPUEntitlement = %v, want CPU×8 = %v", in.CPUEntitlement, want)
			}
		}
		windows = append(windows, sum/n)
		busy = (cpuBusy(t, cpu) - busy0).Seconds() / time.Since(wall0).Seconds()
	}
	t.Logf("two busy loops in a 1-CPU cell: CPU averaged %.3f over 2s windows", windows)
	switch best := slices.Max(windows); {
	case best > 1.05:
		t.Errorf("two busy loops in a 1-CPU cell averaged CPU %.2f over 2s windows: more than the cell's one CPU", windows)
	case best < 0.7:
		t.Errorf("two busy loops in a 1-CPU cell averaged CPU %.2f over 2s windows, want about 1.0 "+
			"(CPU %d was %.0f%% busy in the last window: other load on the machine takes what the instance lacks)",
			windows, cpu, 100*busy)
	}
	if got := cpusAllowed(t, e.c.Instances("p-spin")[0].PID); !slices.Equal(got, []int{cpu}) {
		t.Errorf("instance may run on CPUs %v, want [%d]", got, cpu)
	}
}

// Not parallel: see the top of the file.
func TestCPUSharesFollowMemoryUnderContention(t *testing.T) {
	cpu := availableCPUs(t)[0]
	e := startCells(t, func(c *Config) {
		c.Cells = []Cell{{"apps", []int{cpu}}}
		c.CellMemoryMB = 1000 // the two instances fill the cell
		c.StatsInterval = 500 * time.Millisecond
	})
	requireIsolation(t, e.c)
	e.c.Desire(busySpec("p-small", 200, ""))
	e.c.Desire(busySpec("p-big", 800, ""))
	eventually(t, 10*time.Second, "both running", func() bool {
		return allRunning(e.c, "p-small", 1)() && allRunning(e.c, "p-big", 1)()
	})
	small := groupOf(t, e.c, e.c.Instances("p-small")[0].PID)
	big := groupOf(t, e.c, e.c.Instances("p-big")[0].PID)
	if small.Path() == big.Path() || !strings.HasPrefix(small.Path(), "cfbench-"+e.cfg.Name+"/apps/") {
		t.Fatalf("instances in cgroups %s and %s", small.Path(), big.Path())
	}
	// Both spinning before the window opens.
	s0, b0 := cpuUsage(t, small), cpuUsage(t, big)
	eventually(t, 5*time.Second, "both to use CPU", func() bool {
		return cpuUsage(t, small) > s0 && cpuUsage(t, big) > b0
	})

	s0, b0 = cpuUsage(t, small), cpuUsage(t, big)
	time.Sleep(3 * time.Second)
	ds, db := cpuUsage(t, small)-s0, cpuUsage(t, big)-b0
	if ds <= 0 {
		t.Fatalf("the 200 MB instance got no CPU in 3s (800 MB one: %s)", db)
	}
	ratio := float64(db) / float64(ds)
	t.Logf("800 MB vs 200 MB under contention: %s vs %s of CPU in 3s, ratio %.2f", db, ds, ratio)
	if ratio < 2.5 || ratio > 6 {
		t.Errorf("800 MB vs 200 MB instance got %s vs %s of CPU, ratio %.2f, want about 4", db, ds, ratio)
	}

	// Each instance's entitlement is its memory's share of the cell's CPU; what it
	// reports is its CPU over that.
	time.Sleep(time.Second) // a sample wholly inside the contention
	si, bi := e.c.Instances("p-small")[0], e.c.Instances("p-big")[0]
	t.Logf("entitlement used: 200 MB %.3f (CPU %.3f), 800 MB %.3f (CPU %.3f)", si.CPUEntitlement, si.CPU, bi.CPUEntitlement, bi.CPU)
	for _, c := range []struct {
		in       Instance
		entitled float64 // 200 or 800 MB of the 1000 MB cell's one CPU
	}{{si, 0.2}, {bi, 0.8}} {
		if want := c.in.CPU / c.entitled; math.Abs(c.in.CPUEntitlement-want) > 1e-9 {
			t.Errorf("CPUEntitlement %v, want CPU/%.1f = %v", c.in.CPUEntitlement, c.entitled, want)
		}
	}
	// That they use about the same share of their entitlements is the ratio above, over
	// 3 s: one-second samples on a host with other load vary too much to compare.
	if si.CPUEntitlement <= 0 || bi.CPUEntitlement <= 0 {
		t.Fatalf("entitlement used: 200 MB instance %+v, 800 MB instance %+v", si, bi)
	}
}

// Not parallel: see the top of the file.
func TestCellsComeBeforeThePlatform(t *testing.T) {
	cpu := availableCPUs(t)[0]
	e := startCells(t, func(c *Config) {
		c.Cells = []Cell{{"loadgen", []int{cpu}}}
		c.CellMemoryMB = 1024
		c.First = true
	})
	requireIsolation(t, e.c)
	// A generator of 64 MB, the least weight a container gets, and the platform: a
	// process outside the cells, as the foundation's is, busy on the same CPU.
	e.c.Desire(busySpec("p-gen", 64, "loadgen"))
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-gen", 1))
	gen := groupOf(t, e.c, e.c.Instances("p-gen")[0].PID)
	platform := exec.Command("sh", "-c", "while :; do :; done")
	if err := platform.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { platform.Process.Kill(); platform.Wait() }()
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(platform.Process.Pid, &one); err != nil {
		t.Fatal(err)
	}

	g0, p0 := cpuUsage(t, gen), processCPU(t, platform.Process.Pid)
	time.Sleep(2 * time.Second)
	g, p := cpuUsage(t, gen)-g0, processCPU(t, platform.Process.Pid)-p0
	t.Logf("a busy 64 MB instance and a busy process outside the cells on CPU %d: %v and %v of CPU in 2s", cpu, g, p)
	// Without First the two got about half each (1.04 s and 0.94 s); busy work
	// elsewhere on the machine takes from both, so the share between them is what
	// counts.
	if g <= 0 || float64(g) < 0.8*float64(g+p) {
		t.Errorf("the instance got %v of CPU %d and the process outside the cells %v: want the instance at least 80%% of what they got together", g, cpu, p)
	}
}

// processCPU is the CPU time process pid has used, from /proc/<pid>/stat.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command, which is in parentheses: utime and stime are the
	// 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return time.Duration(utime+stime) * (time.Second / clockTicks)
}

func TestOutOfMemoryCrashes(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	requireIsolation(t, e.c)
	spec := fixtureSpec("p-hog", 1, map[string]string{"ALLOC_MB": "256"})
	spec.MemoryMB = 64
	spec.HealthCheck.Type = "process"
	e.c.Desire(spec)
	crashes := func() []Event {
		var out []Event
		for _, ev := range e.events.of("p-hog", 0) {
			if ev.State == StateCrashed {
				out = append(out, ev)
			}
		}
		return out
	}
	// The first two crashes restart at once, so a second follows the first.
	eventually(t, 20*time.Second, "two out-of-memory crashes", func() bool { return len(crashes()) >= 2 })
	for i, ev := range crashes()[:2] {
		if ev.Details != "APP/PROC/WEB: Exited with status 137 (out of memory)" || ev.Crashes != i+1 {
			t.Errorf("crash %d: details %q, crashes %d", i+1, ev.Details, ev.Crashes)
		}
	}
	if in := e.c.Instances("p-hog")[0]; in.Crashes < 2 {
		t.Errorf("instance after two crashes: %+v", in)
	}
	e.c.Close()
	log, _ := os.ReadFile(filepath.Join(e.cfg.LogDir, "p-hog", "0.log"))
	if !strings.Contains(string(log), "Out of memory: the container exceeded its 64 MB limit") {
		t.Errorf("instance log lacks the out-of-memory line:\n%s", log)
	}
}

func TestCellsNeverShareCPUs(t *testing.T) {
	t.Parallel()
	cpus := availableCPUs(t)
	if len(cpus) < 2 {
		t.Skipf("needs 2 CPUs, this machine offers %v", cpus)
	}
	e := startCells(t, func(c *Config) {
		c.Cells = []Cell{{"apps", cpus[:1]}, {"loadgen", cpus[1:2]}}
	})
	requireIsolation(t, e.c)
	app := fixtureSpec("p-app", 1, nil)
	app.IsolationSegment = "apps"
	gen := fixtureSpec("p-gen", 1, nil)
	gen.IsolationSegment = "loadgen"
	lost := fixtureSpec("p-lost", 1, nil)
	lost.IsolationSegment = "no-such-segment"
	for _, s := range []ProcessSpec{app, gen, lost} {
		e.c.Desire(s)
	}
	for _, guid := range []string{"p-app", "p-gen", "p-lost"} {
		eventually(t, 10*time.Second, guid+" running", allRunning(e.c, guid, 1))
	}

	for _, tc := range []struct {
		guid, cell, addr string
		cpus             []int
	}{
		{"p-app", "apps", "127.0.1.1", cpus[:1]},
		{"p-gen", "loadgen", "127.0.1.2", cpus[1:2]},
		{"p-lost", "apps", "127.0.1.1", cpus[:1]}, // an unknown segment lands in the first cell
	} {
		in := e.c.Instances(tc.guid)[0]
		if in.Cell != tc.cell || in.CellAddr != tc.addr {
			t.Errorf("%s: cell %q at %s, want %q at %s", tc.guid, in.Cell, in.CellAddr, tc.cell, tc.addr)
		}
		appPID, err := strconv.Atoi(getEnv(t, in)["_PID"])
		if err != nil {
			t.Fatal(err)
		}
		// The shell that started the app and the app itself.
		for _, pid := range []int{in.PID, appPID} {
			if got := cpusAllowed(t, pid); !slices.Equal(got, tc.cpus) {
				t.Errorf("%s: pid %d may run on CPUs %v, want %v", tc.guid, pid, got, tc.cpus)
			}
			g := groupOf(t, e.c, pid)
			if got, err := g.EffectiveCPUs(); err != nil || !slices.Equal(got, tc.cpus) {
				t.Errorf("%s: pid %d's cgroup %s has cpuset %v (%v), want %v", tc.guid, pid, g.Path(), got, err, tc.cpus)
			}
		}
	}
}

func TestStartFailsWhenACellWantsAMissingCPU(t *testing.T) {
	t.Parallel()
	c := New(Config{Name: testName(t), TmpDir: t.TempDir(),
		Cells: []Cell{{"apps", []int{0}}, {"loadgen", []int{1}}}})
	c.cpusAvailable = func() ([]int, error) { return []int{0}, nil } // a 1-CPU machine
	t.Cleanup(func() { c.Close() })
	err := c.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded with a cell on a CPU the machine lacks")
	}
	for _, want := range []string{`cell "loadgen"`, "CPU 1", "offers only CPUs 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if ok, _ := c.Isolation(); ok {
		t.Error("isolated after a failed Start")
	}
	if h, err := cgroup.Detect(); err == nil {
		if _, err := os.Stat(h.Group("cfbench-" + testName(t)).Dir("cpuset")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed Start left its cgroup root: %v", err)
		}
	}
}

func TestStartRemovesWhatACrashedRunLeft(t *testing.T) {
	t.Parallel()
	h, err := cgroup.Detect()
	if err != nil {
		t.Skipf("no cgroup isolation here (%v)", err)
	}
	name := testName(t)
	cpus := availableCPUs(t)

	// What a crashed run leaves: root, cell and instance groups, the instance's
	// process still running. No lock is held on it any more.
	root := h.Group("cfbench-" + name)
	leftover := root.Child("apps").Child("p_0_guid")
	t.Cleanup(func() {
		if err := root.Remove(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	for _, g := range []*cgroup.Group{root, root.Child("apps")} {
		if err := g.CreateParent(); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				t.Skipf("no cgroup isolation here (%v)", err)
			}
			t.Fatal(err)
		}
	}
	if err := leftover.Create(); err != nil {
		t.Fatal(err)
	}
	mems, err := h.Group("").EffectiveMems()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*cgroup.Group{root, root.Child("apps"), leftover} {
		if err := g.SetCPUSet(cpus, mems); err != nil {
			t.Fatal(err)
		}
	}
	orphan := exec.Command("sleep", "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	t.Cleanup(func() {
		_ = orphan.Process.Kill()
		<-exited
	})
	if err := leftover.AddProcess(orphan.Process.Pid); err != nil {
		t.Fatal(err)
	}

	e := startCells(t, func(c *Config) { c.Name = name })
	requireIsolation(t, e.c)
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the leftover process ended with %v, want SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the leftover process survived Start")
	}
	if _, err := os.Stat(leftover.Dir("cpuset")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("leftover cgroup still there: %v", err)
	}
	if got := e.c.root.Cleaned; !slices.Contains(got, root.Child("apps").Path()) {
		t.Errorf("Cleaned = %v", got)
	}
	if e.c.root.Path() != root.Path() {
		t.Errorf("root %s, want the crashed run's %s", e.c.root.Path(), root.Path())
	}
}

func TestSameNameTwiceAndCloseRemovesCgroups(t *testing.T) {
	t.Parallel()
	name := testName(t)
	first := startCells(t, func(c *Config) { c.Name = name })
	requireIsolation(t, first.c)
	second := startCells(t, func(c *Config) { c.Name = name })
	requireIsolation(t, second.c)
	if p1, p2 := first.c.root.Path(), second.c.root.Path(); p1 != "cfbench-"+name || p2 != "cfbench-"+name+".1" {
		t.Fatalf("roots %s and %s", p1, p2)
	}
	var roots []*cgroup.Group
	for _, e := range []*env{first, second} {
		roots = append(roots, e.c.root.Group)
		e.c.Desire(fixtureSpec("p", 1, nil))
	}
	for i, e := range []*env{first, second} {
		eventually(t, 10*time.Second, "running", allRunning(e.c, "p", 1))
		if g := groupOf(t, e.c, e.c.Instances("p")[0].PID); !strings.HasPrefix(g.Path(), roots[i].Path()+"/shared/p_0_") {
			t.Errorf("instance of Cells %d in cgroup %s", i, g.Path())
		}
	}
	for i, e := range []*env{first, second} {
		if err := e.c.Close(); err != nil {
			t.Errorf("Close %d: %v", i, err)
		}
		for _, ctrl := range []string{"cpu", "cpuacct", "cpuset", "memory"} {
			if _, err := os.Stat(roots[i].Dir(ctrl)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Close, %s is still there (%v)", roots[i].Dir(ctrl), err)
			}
		}
	}
}

func TestNoIsolation(t *testing.T) {
	t.Parallel()
	if ok, reason := New(Config{}).Isolation(); ok || reason != "not started" {
		t.Errorf("before Start: %v %q", ok, reason)
	}
	e := startCells(t, func(c *Config) {
		c.NoIsolation = true
		c.Cells = []Cell{{"apps", nil}}
	})
	if ok, reason := e.c.Isolation(); ok || reason != "disabled by configuration" {
		t.Errorf("Isolation() = %v, %q", ok, reason)
	}
	e.c.Desire(fixtureSpec("p-plain", 1, map[string]string{"BUSY": "1"}))
	eventually(t, 10*time.Second, "running with stats", func() bool {
		in := e.c.Instances("p-plain")
		return len(in) == 1 && in[0].State == StateRunning && in[0].CPU > 0.3 && in[0].MemBytes > 0
	})
	in := e.c.Instances("p-plain")[0]
	if in.Details != "" || in.Cell != "apps" || in.CellAddr != "127.0.1.1" || in.CPUEntitlement <= 0 {
		t.Errorf("instance = %+v", in)
	}
}

func TestCPUSharesAndEntitlement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		memoryMB int
		shares   uint64
	}{{0, 1024}, {-1, 1024}, {1, 2}, {64, 64}, {200, 200}, {800, 800}, {1 << 20, 262144}} {
		if got := cpuShares(tc.memoryMB); got != tc.shares {
			t.Errorf("cpuShares(%d) = %d, want %d", tc.memoryMB, got, tc.shares)
		}
	}
	for _, tc := range []struct {
		shares       uint64
		cpus, memory int
		want         float64
	}{
		{200, 1, 1000, 0.2},
		{800, 1, 1000, 0.8},
		{1024, 4, 16384, 0.25}, // 1 GB of a 16 GB, 4-core cell: a quarter core
		{1024, 4, 0, 0},        // unknown capacity
	} {
		if got := entitledCores(tc.shares, tc.cpus, tc.memory); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("entitledCores(%d, %d, %d) = %v, want %v", tc.shares, tc.cpus, tc.memory, got, tc.want)
		}
	}
}

func TestResolveCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cells     []Cell
		available []int
		want      [][]int // CPUs per cell
		overlaps  int
		err       string
	}{
		{"default: one shared cell with every CPU", nil, []int{0, 1, 2}, [][]int{{0, 1, 2}}, 0, ""},
		{"split", []Cell{{"apps", []int{0}}, {"loadgen", []int{1}}}, []int{0, 1}, [][]int{{0}, {1}}, 0, ""},
		{"sorted and deduplicated", []Cell{{"apps", []int{3, 1, 3}}}, []int{0, 1, 2, 3}, [][]int{{1, 3}}, 0, ""},
		{"empty CPUs mean all", []Cell{{"apps", []int{0}}, {"", nil}}, []int{0, 1}, [][]int{{0}, {0, 1}}, 1, ""},
		{"two cells on one CPU", []Cell{{"apps", []int{0}}, {"loadgen", []int{1}}}, []int{0}, nil, 0, `cell "loadgen" wants CPU 1`},
		{"duplicate name", []Cell{{"apps", []int{0}}, {"apps", []int{1}}}, []int{0, 1}, nil, 0, `cell "apps" is configured twice`},
		{"shared clashes", []Cell{{"", nil}, {"shared", nil}}, []int{0}, nil, 0, "configured twice"},
		{"bad name", []Cell{{"a/b", nil}}, []int{0}, nil, 0, `cell "a/b"`},
		{"dot dot", []Cell{{"..", nil}}, []int{0}, nil, 0, `cell ".."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cells := newCells(tc.cells)
			err := validateCells(cells)
			var overlaps []string
			if err == nil {
				overlaps, err = resolveCPUs(cells, tc.available)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cells {
				if !slices.Equal(c.cpus, tc.want[i]) || c.addr != "127.0.1."+strconv.Itoa(i+1) {
					t.Errorf("cell %d: cpus %v at %s, want %v", i, c.cpus, c.addr, tc.want[i])
				}
			}
			if len(overlaps) != tc.overlaps {
				t.Errorf("overlaps = %v", overlaps)
			}
		})
	}
}

func TestBadNameFailsStart(t *testing.T) {
	t.Parallel()
	c := New(Config{Name: "../escape", TmpDir: t.TempDir()})
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "cells name") {
		t.Errorf("Start = %v", err)
	}
}

func TestAppStartsInsideItsContainer(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	requireIsolation(t, e.c)
	// The app's first act forks a process that records its cgroups: the cell must
	// have placed the instance before the app ran at all.
	spec := fixtureSpec("p-first", 1, nil)
	spec.Command = `cat /proc/self/cgroup > "$TMPDIR/cgroup-at-start"; exec ` + fixtureBin
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-first", 1))
	in := e.c.Instances("p-first")[0]
	g := groupOf(t, e.c, in.PID)
	b, err := os.ReadFile(filepath.Join(getEnv(t, in)["TMPDIR"], "cgroup-at-start"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, "cfbench-") {
			n++
			if !strings.HasSuffix(line, "/"+g.Path()) {
				t.Errorf("the app's first child was in %q, not in the instance's %s", line, g.Path())
			}
		}
	}
	if n == 0 {
		t.Errorf("the app's first child ran outside the cells' cgroups:\n%s", b)
	}
}

// TestInstancesLeaveThePinnedFoundationsCPUs starts processes from a thread pinned to
// one CPU, as a foundation that keeps its platform off the apps' cells is: a plain
// child inherits that CPU, an instance started placed runs on the CPUs it is given.
//
// Not parallel, and the thread's mask is restored before it is unlocked: the pinned
// thread may be the process's main thread, whose mask /proc/self/status shows (the
// CPUs availableCPUs reads), and which Go never ends (a goroutine that exits locked to
// it wedges it, mask and all). Left pinned, or pinned while TestCores read the CPUs,
// it made other tests see one CPU (CI: TestCores, "all:2, want all 1").
func TestInstancesLeaveThePinnedFoundationsCPUs(t *testing.T) {
	cpus := availableCPUs(t)
	if len(cpus) < 2 {
		t.Skipf("needs 2 CPUs, this machine offers %v", cpus)
	}
	type started struct {
		plain, placed *exec.Cmd
		err           error
	}
	done := make(chan started, 1)
	go func() {
		var s started
		// Sent once the thread has its mask back.
		defer func() { done <- s }()
		runtime.LockOSThread()
		var was, one unix.CPUSet
		if s.err = unix.SchedGetaffinity(0, &was); s.err != nil {
			runtime.UnlockOSThread()
			return
		}
		defer func() {
			if err := unix.SchedSetaffinity(0, &was); err == nil {
				runtime.UnlockOSThread() // else it ends with this goroutine, or is wedged
			}
		}()
		one.Set(cpus[1])
		if s.err = unix.SchedSetaffinity(0, &one); s.err != nil { // this thread only
			return
		}
		s.plain = exec.Command("sleep", "30")
		if s.err = s.plain.Start(); s.err != nil {
			return
		}
		s.placed = exec.Command("/bin/sh")
		s.err = startPlaced(s.placed, "exec sleep 30", nil, cpus[:1])
	}()
	s := <-done
	for _, c := range []*exec.Cmd{s.plain, s.placed} {
		if c != nil && c.Process != nil {
			defer func() { c.Process.Kill(); c.Wait() }()
		}
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if got := cpusAllowed(t, s.plain.Process.Pid); !slices.Equal(got, cpus[1:2]) {
		t.Fatalf("a plain child runs on %v, want the pinned thread's %v (the test pins nothing)", got, cpus[1:2])
	}
	if got := cpusAllowed(t, s.placed.Process.Pid); !slices.Equal(got, cpus[:1]) {
		t.Errorf("the placed instance runs on %v, want %v", got, cpus[:1])
	}
}
