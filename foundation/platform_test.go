package foundation

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/internal/cpuaffinity"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestPlatformRunsOffTheAppsCPUs starts a foundation whose platform is kept off the
// apps' cell: this process and the services' Postgres run on the platform CPUs, an app
// instance on its cell's, and once the foundation stops this process has its CPUs
// back. Not parallel: it pins the whole test process, which no other test then shares.
func TestPlatformRunsOffTheAppsCPUs(t *testing.T) {
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	own, err := cpuaffinity.Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(own) < 2 {
		t.Skipf("needs 2 CPUs, this process may use %v", own)
	}
	apps, platform := own[:1], own[1:]
	f := New(Config{StateDir: testpg.Dir(t), StatsInterval: time.Second, StopGrace: time.Second, Throwaway: true,
		Cells: []cells.Cell{{Name: "apps", CPUs: apps}, {Name: "loadgen", CPUs: platform}}, PlatformCPUs: platform})
	if err := f.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, _ := f.cells.Isolation(); !ok {
		t.Skip("no cgroup isolation here: the cells' CPUs are not enforced")
	}
	f.cells.Desire(cells.ProcessSpec{ProcessGUID: "platform-test", AppGUID: "platform-test", AppName: "sleeper", ProcessType: "web",
		Dir: t.TempDir(), Command: "exec sleep 60", Instances: 1, MemoryMB: 32, DiskMB: 64,
		HealthCheck: cells.HealthCheck{Type: "process"}, IsolationSegment: "apps"})
	var instance int
	for deadline := time.Now().Add(30 * time.Second); instance == 0; time.Sleep(50 * time.Millisecond) {
		if in := f.cells.Instances("platform-test"); len(in) == 1 && in[0].State == cells.StateRunning {
			instance = in[0].PID
		}
		if time.Now().After(deadline) {
			t.Fatal("the instance did not start within 30 s")
		}
	}
	for _, p := range []struct {
		what string
		pid  int
		want []int
	}{{"this process", os.Getpid(), platform}, {"the services' postgres", f.pg.server().PID(), platform}, {"the app instance", instance, apps}} {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p.pid) + "/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if got, err := cpuaffinity.Of(tid); err == nil && !slices.Equal(got, p.want) {
				t.Errorf("%s (thread %d) runs on CPUs %v, want %v", p.what, tid, got, p.want)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := cpuaffinity.Of(os.Getpid()); !slices.Equal(got, own) {
		t.Errorf("after Close this process runs on %v, want its own CPUs %v back", got, own)
	}
}

func TestAppsFreeCPUs(t *testing.T) {
	for _, tc := range []struct {
		cells []cells.Cell
		cpus  int
		want  []int
	}{
		{nil, 2, []int{1}},    // DefaultCells: apps on 0, loadgen on 1
		{nil, 4, []int{2, 3}}, // apps on 0-1
		{nil, 1, nil},         // one CPU: the apps' too
		{[]cells.Cell{{Name: "apps", CPUs: []int{0, 2}}, {Name: "loadgen", CPUs: []int{1}}}, 4, []int{1, 3}},
		{[]cells.Cell{{Name: "a", CPUs: []int{0}}, {Name: "b", CPUs: []int{1}}}, 2, []int{0, 1}}, // no apps cell
	} {
		if got := AppsFreeCPUs(tc.cells, tc.cpus); !slices.Equal(got, tc.want) {
			t.Errorf("AppsFreeCPUs(%v, %d) = %v, want %v", tc.cells, tc.cpus, got, tc.want)
		}
	}
}
