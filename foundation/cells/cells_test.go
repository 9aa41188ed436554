//go:build linux

package cells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cells-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fixtureBin = filepath.Join(dir, "fixture")
	if out, err := exec.Command("go", "build", "-o", fixtureBin, "./testdata/fixture").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fixture: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// states returns the state sequence of one instance index.
func (r *recorder) of(guid string, index int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.ProcessGUID == guid && e.Index == index {
			out = append(out, e)
		}
	}
	return out
}

func states(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.State
	}
	return out
}

type env struct {
	c      *Cells
	events *recorder
	cfg    Config
}

// startCells starts Cells on loopback with test-friendly timings; Close runs at cleanup.
func startCells(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	rec := &recorder{}
	cfg := Config{
		Name:                testName(t),
		LogDir:              t.TempDir(),
		TmpDir:              t.TempDir(),
		StopGrace:           2 * time.Second,
		StatsInterval:       100 * time.Millisecond,
		RestartBackoff:      200 * time.Millisecond,
		MaxRestartBackoff:   time.Second,
		HealthCheckInterval: 25 * time.Millisecond,
		OnEvent:             rec.add,
	}
	if mod != nil {
		mod(&cfg)
	}
	c := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		c.Close()
	})
	return &env{c: c, events: rec, cfg: cfg}
}

func fixtureSpec(guid string, n int, env map[string]string) ProcessSpec {
	return ProcessSpec{
		ProcessGUID: guid, AppGUID: "app-" + guid, AppName: "fixture", ProcessType: "web",
		Dir: os.TempDir(), Command: fixtureBin, Env: env, Instances: n, MemoryMB: 128, DiskMB: 256,
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allRunning(c *Cells, guid string, n int) func() bool {
	return func() bool {
		insts := c.Instances(guid)
		if len(insts) != n {
			return false
		}
		for _, in := range insts {
			if in.State != StateRunning {
				return false
			}
		}
		return true
	}
}

func getEnv(t *testing.T, in Instance) map[string]string {
	t.Helper()
	resp, err := testhttp.Client.Get(fmt.Sprintf("http://%s:%d/", in.Host, in.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func gone(pgid int) func() bool { return func() bool { return !groupAlive(pgid) } }

func TestInstanceEnvironmentAndPortHealthCheck(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	vcap := `{"application_id":"a1","application_name":"fixture","limits":{"mem":128}}`
	dir := t.TempDir()
	spec := fixtureSpec("p-env", 2, map[string]string{"VCAP_APPLICATION": vcap, "FOO": "bar", "PORT": "1"})
	spec.Dir = dir
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "2 running instances", allRunning(e.c, "p-env", 2))

	insts := e.c.Instances("p-env")
	tmpdirs := map[string]bool{}
	for i, in := range insts {
		if in.Index != i || in.PID <= 0 || in.Host != "127.0.0.1" || in.GUID == "" || in.Started.IsZero() {
			t.Fatalf("instance %d: %+v", i, in)
		}
		got := getEnv(t, in)
		port := strconv.Itoa(in.Port)
		want := map[string]string{
			"PORT": port, "CF_INSTANCE_INDEX": strconv.Itoa(i), "CF_INSTANCE_GUID": in.GUID,
			"CF_INSTANCE_IP": in.CellAddr, "CF_INSTANCE_INTERNAL_IP": "127.0.0.1", "CF_INSTANCE_PORT": port,
			"CF_INSTANCE_ADDR": "127.0.0.1:" + port, "INSTANCE_INDEX": strconv.Itoa(i), "INSTANCE_GUID": in.GUID,
			"MEMORY_LIMIT": "128m", "VCAP_APPLICATION": vcap, "FOO": "bar", "HOME": dir, "_PWD": dir,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("instance %d: %s = %q, want %q", i, k, got[k], v)
			}
		}
		// PID is the group leader (sh); the app runs in its group.
		if stat, err := os.ReadFile("/proc/" + got["_PID"] + "/stat"); err != nil {
			t.Errorf("instance %d: app pid %s: %v", i, got["_PID"], err)
		} else if st, _ := procstat.Parse(stat); st.PGRP != in.PID {
			t.Errorf("instance %d: app runs in process group %d, not %d", i, st.PGRP, in.PID)
		}
		if got["PATH"] == "" {
			t.Errorf("instance %d: empty PATH", i)
		}
		tmp := got["TMPDIR"]
		if fi, err := os.Stat(tmp); err != nil || !fi.IsDir() || !strings.HasPrefix(tmp, e.cfg.TmpDir) {
			t.Errorf("instance %d: TMPDIR %q is not a dir under %s (%v)", i, tmp, e.cfg.TmpDir, err)
		}
		tmpdirs[tmp] = true
	}
	if len(tmpdirs) != 2 {
		t.Errorf("instances share a TMPDIR: %v", tmpdirs)
	}
	log, err := os.ReadFile(filepath.Join(e.cfg.LogDir, "p-env", "1.log"))
	if err != nil || !strings.Contains(string(log), "[CELL/1]") || !strings.Contains(string(log), "Container became healthy") {
		t.Errorf("instance log: %v\n%s", err, log)
	}
	if got := states(e.events.of("p-env", 0)); strings.Join(got, ",") != "STARTING,RUNNING" {
		t.Errorf("events of index 0: %v", got)
	}
}

func TestProcessHealthCheckAndRemove(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(ProcessSpec{ProcessGUID: "p-sleep", Dir: t.TempDir(), Command: "sleep 300", Instances: 1,
		HealthCheck: HealthCheck{Type: "process"}})
	eventually(t, 5*time.Second, "running", allRunning(e.c, "p-sleep", 1))
	pid := e.c.Instances("p-sleep")[0].PID
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("sleep pid %d not alive: %v", pid, err)
	}
	e.c.Remove("p-sleep")
	if got := e.c.Instances("p-sleep"); len(got) != 0 {
		t.Errorf("removed process still has instances: %+v", got)
	}
	eventually(t, 3*time.Second, "sleep to be stopped", gone(pid))
}

func TestCrashIsRestarted(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	marker := filepath.Join(t.TempDir(), "crashed-once")
	e.c.Desire(fixtureSpec("p-crash", 1, map[string]string{"CRASH_AFTER": "300ms", "CRASH_ONCE_FILE": marker}))
	eventually(t, 10*time.Second, "a crash and a restart", func() bool {
		return len(e.events.of("p-crash", 0)) >= 5 && allRunning(e.c, "p-crash", 1)()
	})
	evs := e.events.of("p-crash", 0)
	if got := strings.Join(states(evs), ","); got != "STARTING,RUNNING,CRASHED,STARTING,RUNNING" {
		t.Fatalf("states = %s", got)
	}
	if evs[2].Details != "APP/PROC/WEB: Exited with status 3" || evs[2].Crashes != 1 {
		t.Errorf("crash event = %+v", evs[2])
	}
	in := e.c.Instances("p-crash")[0]
	if in.Crashes != 1 || in.GUID == evs[0].InstanceGUID || in.GUID != evs[4].InstanceGUID || in.Details != "" {
		t.Errorf("after restart: %+v (first guid %s)", in, evs[0].InstanceGUID)
	}
}

func TestCrashBackoff(t *testing.T) {
	t.Parallel()
	e := startCells(t, func(c *Config) { c.RestartBackoff = 800 * time.Millisecond })
	e.c.Desire(fixtureSpec("p-loop", 1, map[string]string{"CRASH_AFTER": "10ms"}))
	var crashedSeen bool
	eventually(t, 15*time.Second, "5 crashes", func() bool {
		if in := e.c.Instances("p-loop"); len(in) == 1 && in[0].State == StateCrashed {
			crashedSeen = true
		}
		n := 0
		for _, ev := range e.events.of("p-loop", 0) {
			if ev.State == StateCrashed {
				n++
			}
		}
		return n >= 5
	})
	if !crashedSeen {
		t.Error("Instances never reported CRASHED during the backoff")
	}
	// Time from each crash to the next start: immediate for the first two, then
	// the backoff (800ms, then 1.6s capped at MaxRestartBackoff 1s).
	evs := e.events.of("p-loop", 0)
	var gaps []time.Duration
	for i := 1; i < len(evs); i++ {
		if evs[i-1].State == StateCrashed && evs[i].State == StateStarting {
			gaps = append(gaps, evs[i].Time.Sub(evs[i-1].Time))
		}
	}
	if len(gaps) < 4 {
		t.Fatalf("gaps = %v", gaps)
	}
	for i, g := range gaps[:2] {
		if g > 300*time.Millisecond {
			t.Errorf("restart %d waited %s, want immediate", i+1, g)
		}
	}
	if gaps[2] < 700*time.Millisecond {
		t.Errorf("restart 3 waited %s, want about 800ms", gaps[2])
	}
}

func TestRestartDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		crashes int
		want    time.Duration
	}{{1, 0}, {2, 0}, {3, 2 * time.Second}, {4, 4 * time.Second}, {6, 16 * time.Second}, {7, 30 * time.Second}, {100, 30 * time.Second}} {
		if got := restartDelay(tc.crashes, 2*time.Second, 30*time.Second); got != tc.want {
			t.Errorf("restartDelay(%d) = %s, want %s", tc.crashes, got, tc.want)
		}
	}
}

func TestStartupHealthCheckTimeout(t *testing.T) {
	t.Parallel()
	e := startCells(t, func(c *Config) { c.RestartBackoff = 10 * time.Second })
	spec := fixtureSpec("p-deaf", 1, map[string]string{"NO_LISTEN": "1"})
	spec.HealthCheck = HealthCheck{Timeout: 300 * time.Millisecond}
	e.c.Desire(spec)
	eventually(t, 5*time.Second, "a crash", func() bool {
		in := e.c.Instances("p-deaf")
		return len(in) == 1 && in[0].State == StateCrashed
	})
	in := e.c.Instances("p-deaf")[0]
	if !strings.Contains(in.Details, "never healthy after 300ms") || !strings.Contains(in.Details, "TCP") || in.Crashes < 1 {
		t.Errorf("crashed instance = %+v", in)
	}
	if evs := e.events.of("p-deaf", 0); evs[0].State != StateStarting {
		t.Errorf("events = %v", states(evs))
	}
}

func TestHTTPHealthCheck(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	spec := fixtureSpec("p-http", 1, map[string]string{"READY_AFTER": "700ms"})
	spec.HealthCheck = HealthCheck{Type: "http", Endpoint: "/health"}
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-http", 1))
	evs := e.events.of("p-http", 0)
	if len(evs) != 2 || evs[0].State != StateStarting || evs[1].State != StateRunning {
		t.Fatalf("events = %v", states(evs))
	}
	if d := evs[1].Time.Sub(evs[0].Time); d < 600*time.Millisecond {
		t.Errorf("RUNNING %s after start, before /health answered 200", d)
	}
}

func TestScaleUpAndDown(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	spec := fixtureSpec("p-scale", 3, nil)
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "3 running", allRunning(e.c, "p-scale", 3))
	before := e.c.Instances("p-scale")

	spec.Instances = 1
	e.c.Desire(spec)
	after := e.c.Instances("p-scale")
	if len(after) != 1 || after[0].GUID != before[0].GUID {
		t.Fatalf("after scaling down: %+v", after)
	}
	for _, in := range before[1:] {
		eventually(t, 5*time.Second, fmt.Sprintf("index %d to stop", in.Index), gone(in.PID))
	}
	if !allRunning(e.c, "p-scale", 1)() {
		t.Fatal("index 0 disturbed by scaling down")
	}

	spec.Instances = 2
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "2 running", allRunning(e.c, "p-scale", 2))
	if in := e.c.Instances("p-scale"); in[0].GUID != before[0].GUID || in[1].GUID == before[1].GUID {
		t.Errorf("after scaling up: %+v", in)
	}
}

func TestChangedSpecRestarts(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	spec := fixtureSpec("p-change", 1, map[string]string{"V": "1"})
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-change", 1))
	first := e.c.Instances("p-change")[0]

	spec.AppName = "renamed" // not a restart
	e.c.Desire(spec)
	if in := e.c.Instances("p-change")[0]; in.GUID != first.GUID || in.State != StateRunning {
		t.Fatalf("rename restarted the instance: %+v", in)
	}

	spec.Env = map[string]string{"V": "2"}
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "restarted instance", func() bool {
		in := e.c.Instances("p-change")
		return len(in) == 1 && in[0].State == StateRunning && in[0].GUID != first.GUID
	})
	if groupAlive(first.PID) {
		t.Errorf("old instance pid %d still alive", first.PID)
	}
	if got := getEnv(t, e.c.Instances("p-change")[0])["V"]; got != "2" {
		t.Errorf("V = %q after restart", got)
	}
}

func TestStopGraceThenSIGKILL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		env       map[string]string
		min, max  time.Duration
		wantLines string
	}{
		{"obeys SIGTERM", nil, 0, 400 * time.Millisecond, "Stopping instance"},
		{"ignores SIGTERM", map[string]string{"IGNORE_TERM": "1"}, 450 * time.Millisecond, 3 * time.Second, "Killed after 500ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startCells(t, func(c *Config) { c.StopGrace = 500 * time.Millisecond })
			e.c.Desire(fixtureSpec("p-stop", 1, tc.env))
			eventually(t, 10*time.Second, "running", allRunning(e.c, "p-stop", 1))
			pid := e.c.Instances("p-stop")[0].PID
			start := time.Now()
			e.c.Remove("p-stop")
			eventually(t, 5*time.Second, "the process to end", gone(pid))
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Errorf("stopped after %s, want between %s and %s", d, tc.min, tc.max)
			}
			e.c.Close() // waits for the instance goroutine to log
			log, _ := os.ReadFile(filepath.Join(e.cfg.LogDir, "p-stop", "0.log"))
			if !strings.Contains(string(log), tc.wantLines) {
				t.Errorf("log lacks %q:\n%s", tc.wantLines, log)
			}
		})
	}
}

func TestStopReachesTheWholeProcessGroup(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	e.c.Desire(ProcessSpec{ProcessGUID: "p-tree", Dir: t.TempDir(), Instances: 1,
		Command: "sleep 300 & sleep 301 & wait", HealthCheck: HealthCheck{Type: "process"}})
	eventually(t, 5*time.Second, "running", allRunning(e.c, "p-tree", 1))
	pgid := e.c.Instances("p-tree")[0].PID
	eventually(t, 5*time.Second, "the children", func() bool {
		return scanGroups(map[int]bool{pgid: true})[pgid].members == 3
	})
	start := time.Now()
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	if groupAlive(pgid) {
		t.Fatal("children survived Close")
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("Close took %s: SIGTERM did not reach the children", d)
	}
}

func TestCloseStopsInParallel(t *testing.T) {
	t.Parallel()
	e := startCells(t, func(c *Config) { c.StopGrace = 500 * time.Millisecond })
	e.c.Desire(fixtureSpec("p-many", 3, map[string]string{"IGNORE_TERM": "1"}))
	eventually(t, 10*time.Second, "3 running", allRunning(e.c, "p-many", 3))
	insts := e.c.Instances("p-many")
	start := time.Now()
	e.c.Close()
	if d := time.Since(start); d < 450*time.Millisecond || d > 1400*time.Millisecond {
		t.Errorf("Close took %s; 3 instances with a 500ms grace stopped in parallel take about 500ms", d)
	}
	for _, in := range insts {
		if groupAlive(in.PID) {
			t.Errorf("instance %d survived Close", in.Index)
		}
	}
	if err := e.c.Wait(); err != nil {
		t.Error(err)
	}
	e.c.Desire(fixtureSpec("p-late", 1, nil))
	if got := e.c.Instances("p-late"); len(got) != 0 {
		t.Errorf("Desire after Close created %+v", got)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := startCells(t, nil)
	spec := fixtureSpec("p-busy", 1, map[string]string{"BUSY": "1"})
	spec.Command = `head -c 200000 /dev/zero > "$TMPDIR/scratch" && exec ` + fixtureBin
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-busy", 1))
	var last Instance
	// A busy loop gets a quarter of a core even with three other runnable processes on
	// it (a loaded test machine); the idle instance below stays far under that.
	eventually(t, 15*time.Second, "CPU > 0.25 with memory and disk", func() bool {
		last = e.c.Instances("p-busy")[0]
		return last.CPU > 0.25 && last.MemBytes > 0 && last.DiskBytes >= 200000
	})
	if last.CPU > 1.5 || last.MemBytes > 1<<30 || last.DiskBytes > 300000 {
		t.Errorf("implausible stats: %+v", last)
	}

	idle := fixtureSpec("p-idle", 1, nil)
	e.c.Desire(idle)
	eventually(t, 10*time.Second, "running", allRunning(e.c, "p-idle", 1))
	time.Sleep(500 * time.Millisecond)
	if in := e.c.Instances("p-idle")[0]; in.CPU > 0.1 || in.MemBytes == 0 {
		t.Errorf("idle instance stats: %+v", in)
	}
}

func TestEnforceMemory(t *testing.T) {
	t.Parallel()
	// Without a cgroup: with one the kernel enforces the limit (TestOutOfMemoryCrashes).
	e := startCells(t, func(c *Config) {
		c.EnforceMemory = true
		c.NoIsolation = true
		c.RestartBackoff = 10 * time.Second
	})
	spec := fixtureSpec("p-fat", 1, map[string]string{"ALLOC_MB": "96"})
	spec.MemoryMB = 32
	spec.HealthCheck.Type = "process"
	e.c.Desire(spec)
	eventually(t, 10*time.Second, "an out-of-memory crash", func() bool {
		for _, ev := range e.events.of("p-fat", 0) {
			if ev.State == StateCrashed {
				return true
			}
		}
		return false
	})
	for _, ev := range e.events.of("p-fat", 0) {
		if ev.State == StateCrashed && ev.Details != "APP/PROC/WEB: Exited with status 137 (out of memory)" {
			t.Errorf("crash details = %q", ev.Details)
		}
	}
}

func TestInstancesBeforeStartAndUnknown(t *testing.T) {
	t.Parallel()
	c := New(Config{})
	if got := c.Instances("nope"); got == nil || len(got) != 0 {
		t.Errorf("unknown process: %#v", got)
	}
	c.Desire(ProcessSpec{ProcessGUID: "p", Command: "true", Instances: 2})
	c.Desire(ProcessSpec{ProcessGUID: "../escape", Command: "true", Instances: 1})
	got := c.Instances("p")
	if len(got) != 2 || got[0].State != StateDown || got[1].Index != 1 {
		t.Errorf("before start: %+v", got)
	}
	if len(c.Instances("../escape")) != 0 {
		t.Error("accepted a process guid that escapes LogDir")
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if err := c.Wait(); err != nil {
		t.Error(err)
	}
	if err := c.Start(context.Background()); !errors.Is(err, lifecycle.ErrClosed) {
		t.Errorf("Start after Close: %v, want lifecycle.ErrClosed", err)
	}
}

func TestContextEndStopsEverything(t *testing.T) {
	t.Parallel()
	c := New(Config{TmpDir: t.TempDir(), HealthCheckInterval: 25 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c.Desire(ProcessSpec{ProcessGUID: "p", Dir: t.TempDir(), Command: "sleep 300", Instances: 1, HealthCheck: HealthCheck{Type: "process"}})
	eventually(t, 5*time.Second, "running", allRunning(c, "p", 1))
	pid := c.Instances("p")[0].PID
	cancel()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the context ended")
	}
	if groupAlive(pid) {
		t.Error("instance survived the end of the context")
	}
}

// testName is a cgroup root name for the test: its name, made safe.
func testName(t *testing.T) string {
	b := []byte("t-" + t.Name())
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 100)])
}

// An instance asking for more memory than a cell has is never placed, as Diego's
// auction places none: it stays DOWN with the placement error until its memory fits.
func TestInstanceOverTheCellsMemoryIsNotPlaced(t *testing.T) {
	t.Parallel()
	e := startCells(t, func(c *Config) { c.CellMemoryMB = 1024 })
	big := fixtureSpec("p-big", 1, nil)
	big.MemoryMB = 1000 * 1024
	e.c.Desire(big)
	eventually(t, 20*time.Second, "the unplaced instance", func() bool {
		insts := e.c.Instances("p-big")
		return len(insts) == 1 && insts[0].Details == errInsufficientMemory
	})
	if in := e.c.Instances("p-big")[0]; in.State != StateDown || in.PID != 0 || in.Since.IsZero() {
		t.Errorf("unplaced instance: %+v, want DOWN without a process, with its time", in)
	}
	big.MemoryMB = 512
	e.c.Desire(big)
	eventually(t, 20*time.Second, "the instance to run once its memory fits", allRunning(e.c, "p-big", 1))
}
