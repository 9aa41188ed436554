package cgroup

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A hybrid host like the CI machines: v1 controllers, an empty cgroup2.
const hybridMountinfo = `22 1 0:21 / /proc rw,nosuid - proc proc rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridCgroup = `9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
3:cpuset:/
1:cpu,cpuacct:/
0::/
`

func TestParseMountinfo(t *testing.T) {
	t.Parallel()
	got := parseMountinfo([]byte(hybridMountinfo + "50 31 0:40 /sub /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n" + "garbage\n"))
	want := []mount{
		{dir: "/sys/fs/cgroup/cpu,cpuacct", root: "/", controllers: []string{"cpu", "cpuacct"}},
		{dir: "/sys/fs/cgroup/cpuset", root: "/", controllers: []string{"cpuset"}},
		{dir: "/sys/fs/cgroup/memory", root: "/", controllers: []string{"memory"}},
		{dir: "/sys/fs/cgroup/pids", root: "/", controllers: []string{"pids"}},
		{dir: "/sys/fs/cgroup/systemd", root: "/"},
		{dir: "/sys/fs/cgroup/unified", root: "/", v2: true},
		{dir: "/mnt/my cg", root: "/sub", v2: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d mounts: %+v", len(got), got)
	}
	for i := range want {
		if got[i].dir != want[i].dir || got[i].root != want[i].root || got[i].v2 != want[i].v2 ||
			!slices.Equal(got[i].controllers, want[i].controllers) {
			t.Errorf("mount %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	t.Parallel()
	got, err := parseProcCgroup([]byte(hybridCgroup))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pids": "/", "memory": "/process_api/abc", "cpuset": "/", "cpu": "/", "cpuacct": "/", "": "/"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v", got)
	}
	if _, err := parseProcCgroup([]byte("1:cpu\n")); err == nil {
		t.Error("accepted a line without a path")
	}
}

func TestCPUList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		cpus []int
		out  string
	}{
		{"", nil, ""},
		{"0", []int{0}, "0"},
		{"0-3\n", []int{0, 1, 2, 3}, "0-3"},
		{"0-2,5,7-8", []int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
		{"5,1,1,2", []int{1, 2, 5}, "1-2,5"},
	} {
		got, err := ParseCPUList(tc.in)
		if err != nil || !slices.Equal(got, tc.cpus) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tc.in, got, err)
		}
		if s := FormatCPUList(tc.cpus); s != tc.out {
			t.Errorf("FormatCPUList(%v) = %q, want %q", tc.cpus, s, tc.out)
		}
	}
	for _, bad := range []string{"a", "1-", "3-1", "-1", "0-99999999", "1,,2"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) succeeded", bad)
		}
	}
}

func TestSharesToWeight(t *testing.T) {
	t.Parallel()
	// runc's conversion: 2 → 1, 1024 → 39, 262144 → 10000.
	for shares, want := range map[uint64]uint64{0: 1, 2: 1, 200: 8, 800: 31, 1024: 39, 262144: 10000, 1 << 30: 10000} {
		if got := SharesToWeight(shares); got != want {
			t.Errorf("SharesToWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	own, _ := parseProcCgroup([]byte(hybridCgroup))

	// Hybrid: the cgroup2 has no controllers, so v1 at this process's own groups.
	files["/sys/fs/cgroup/unified/cgroup.controllers"] = "\n"
	h, err := detect(parseMountinfo([]byte(hybridMountinfo)), own, read)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
		"cpuset": "/sys/fs/cgroup/cpuset", "memory": "/sys/fs/cgroup/memory/process_api/abc"}
	if h.Version() != V1 || !maps.Equal(h.base, want) {
		t.Errorf("hybrid: %v %v", h.Version(), h.base)
	}
	if g := h.Group("r").Child("c"); len(g.dirs()) != 3 || g.dirs()[2] != "/sys/fs/cgroup/cpuset/r/c" {
		t.Errorf("dirs = %v (cpu and cpuacct share one; cpuset last)", g.dirs())
	}

	// Unified.
	unified := "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory pids\n"
	h, err = detect(parseMountinfo([]byte(unified)), map[string]string{"": "/user.slice/session-1.scope"}, read)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version() != V2 || h.base["memory"] != "/sys/fs/cgroup" {
		t.Errorf("unified: %v %v", h.Version(), h.base)
	}

	// Unified without memory, no v1: unavailable, and says why.
	files["/sys/fs/cgroup/cgroup.controllers"] = "cpu pids\n"
	_, err = detect(parseMountinfo([]byte(unified)), nil, read)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "lacks the cpuset, memory controllers") ||
		!strings.Contains(err.Error(), "no cgroup v1 hierarchy for memory, cpu, cpuacct, cpuset") {
		t.Errorf("err = %v", err)
	}
}

// fakeTree is a Hierarchy over plain directories, for checking what is written and
// read; the kernel's behaviour is exercised by the cells tests.
func fakeTree(t *testing.T, v Version, files map[string]string) *Group {
	t.Helper()
	dir := t.TempDir()
	h := &Hierarchy{version: v, base: map[string]string{}}
	for _, c := range v1Controllers {
		h.base[c] = dir
		if v == V1 {
			h.base[c] = filepath.Join(dir, c)
		}
	}
	g := h.Group("root/cell/inst")
	for _, d := range g.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		ctrl, file, _ := strings.Cut(name, ":")
		if err := os.WriteFile(filepath.Join(g.Dir(ctrl), file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func readFake(t *testing.T, g *Group, ctrl, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(g.Dir(ctrl), file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestV1Files(t *testing.T) {
	t.Parallel()
	g := fakeTree(t, V1, map[string]string{
		"memory:memory.memsw.limit_in_bytes": "",
		"cpuacct:cpuacct.usage":              "2500000000\n",
		"memory:memory.stat":                 "cache 1\nrss 2\ntotal_cache 4096\ntotal_rss 10000\ntotal_inactive_file 1000\n",
		"memory:memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		"cpuset:cpuset.effective_cpus":       "0-1\n",
		"cpuset:cpuset.effective_mems":       "0\n",
	})
	if err := g.SetMemoryLimit(64 << 20); err != nil {
		t.Fatal(err)
	}
	if err := g.SetCPUShares(200); err != nil {
		t.Fatal(err)
	}
	if err := g.SetCPUSet([]int{1, 0}, "0"); err != nil {
		t.Fatal(err)
	}
	if err := g.AddProcess(42); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][3]string{
		{"memory", "memory.limit_in_bytes", "67108864"},
		{"memory", "memory.memsw.limit_in_bytes", "67108864"},
		{"cpu", "cpu.shares", "200"},
		{"cpuset", "cpuset.cpus", "0-1"},
		{"cpuset", "cpuset.mems", "0"},
		{"cpu", "cgroup.procs", "42"},
		{"cpuacct", "cgroup.procs", "42"},
		{"cpuset", "cgroup.procs", "42"},
		{"memory", "cgroup.procs", "42"},
	} {
		if got := readFake(t, g, tc[0], tc[1]); got != tc[2] {
			t.Errorf("%s = %q, want %q", tc[1], got, tc[2])
		}
	}
	if procs, err := g.Processes(); err != nil || !slices.Equal(procs, []int{42}) {
		t.Errorf("Processes = %v, %v", procs, err)
	}
	u, err := g.Usage()
	if err != nil || u.CPU != 2500*time.Millisecond || u.Memory != 10000+4096-1000 {
		t.Errorf("Usage = %+v, %v", u, err)
	}
	if n, exact, err := g.OOMKills(); n != 2 || !exact || err != nil {
		t.Errorf("OOMKills = %d %v %v", n, exact, err)
	}
	if cpus, err := g.EffectiveCPUs(); err != nil || !slices.Equal(cpus, []int{0, 1}) {
		t.Errorf("EffectiveCPUs = %v, %v", cpus, err)
	}

	// Before Linux 4.13: no oom_kill, so the failure count stands in.
	old := fakeTree(t, V1, map[string]string{
		"memory:memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n",
		"memory:memory.failcnt":     "17\n",
	})
	if n, exact, err := old.OOMKills(); n != 17 || exact || err != nil {
		t.Errorf("old kernel OOMKills = %d %v %v", n, exact, err)
	}
	// No swap accounting: no memsw file to write.
	if err := old.SetMemoryLimit(1 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(old.Dir("memory"), "memory.memsw.limit_in_bytes")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("wrote memsw without swap accounting: %v", err)
	}
}

func TestV2Files(t *testing.T) {
	t.Parallel()
	g := fakeTree(t, V2, map[string]string{
		"memory:memory.swap.max": "max\n",
		"cpu:cpu.stat":           "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
		"memory:memory.current":  "5000\n",
		"memory:memory.stat":     "anon 3000\nfile 2000\ninactive_file 1500\n",
		"memory:memory.events":   "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n",
	})
	if len(g.dirs()) != 1 {
		t.Fatalf("v2 dirs = %v", g.dirs())
	}
	for _, step := range []func() error{
		func() error { return g.SetMemoryLimit(64 << 20) },
		func() error { return g.SetCPUShares(800) },
		func() error { return g.SetCPUSet([]int{2, 3}, "") },
		g.delegate,
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range [][2]string{
		{"memory.max", "67108864"},
		{"memory.swap.max", "0"},
		{"cpu.weight", "31"},
		{"cpuset.cpus", "2-3"},
		{"cgroup.subtree_control", "+cpu +cpuset +memory"},
	} {
		if got := readFake(t, g, "cpu", tc[0]); got != tc[1] {
			t.Errorf("%s = %q, want %q", tc[0], got, tc[1])
		}
	}
	if _, err := os.Stat(filepath.Join(g.Dir("cpuset"), "cpuset.mems")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("wrote cpuset.mems though v2 inherits it")
	}
	u, err := g.Usage()
	if err != nil || u.CPU != 1500*time.Millisecond || u.Memory != 3500 {
		t.Errorf("Usage = %+v, %v", u, err)
	}
	if n, exact, err := g.OOMKills(); n != 1 || !exact || err != nil {
		t.Errorf("OOMKills = %d %v %v", n, exact, err)
	}
}

func TestOpenRootRejectsBadNames(t *testing.T) {
	t.Parallel()
	h := &Hierarchy{version: V1, base: map[string]string{"cpuset": t.TempDir()}}
	for _, name := range []string{"", "a/b", "a.1", " x"} {
		if _, err := h.OpenRoot(name, time.Second); err == nil {
			t.Errorf("OpenRoot(%q) succeeded", name)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0-3,5", "1,1", "3-1", "0-65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		again, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("%q → %v → %q → %v, %v", s, cpus, FormatCPUList(cpus), again, err)
		}
	})
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add(hybridMountinfo)
	f.Add(`1 2 0:1 / /a\040b rw - cgroup cgroup rw,cpu` + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		_ = parseMountinfo([]byte(s)) // must not panic
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add(hybridCgroup)
	f.Add("0::/\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseProcCgroup([]byte(s)) // must not panic
	})
}
