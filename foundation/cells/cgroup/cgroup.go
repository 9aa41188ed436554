// Package cgroup manages the Linux control groups that make the local foundation's
// cells and app instances behave like Diego's: a cpuset per cell and, per instance,
// a memory limit, CPU shares and the usage counters Garden reports. It speaks cgroup
// v1 (a hierarchy per controller) and cgroup v2 (the unified hierarchy).
//
// Every group it makes lives below a Root that one process holds exclusively (an
// flock(2) on the root's directory) and removes on Close; a later OpenRoot of the
// same name removes what a crashed holder left behind.
//
// Kernel files used:
//
//	v1: cgroup.procs, cpuset.cpus, cpuset.mems, cpuset.effective_cpus,
//	    cpuset.effective_mems, cpu.shares, cpuacct.usage, memory.limit_in_bytes,
//	    memory.memsw.limit_in_bytes (when swap accounting is on), memory.stat,
//	    memory.oom_control (its oom_kill field, Linux ≥ 4.13), memory.failcnt
//	v2: cgroup.procs, cgroup.controllers, cgroup.subtree_control, cpuset.cpus,
//	    cpuset.cpus.effective, cpuset.mems.effective, cpu.weight, cpu.stat,
//	    memory.max, memory.swap.max, memory.current, memory.stat, memory.events
package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// Version is a cgroup hierarchy version.
type Version int

// The two cgroup versions.
const (
	V1 Version = 1
	V2 Version = 2
)

func (v Version) String() string { return "cgroup v" + strconv.Itoa(int(v)) }

// ErrUnavailable is wrapped by errors that say no cgroup isolation is possible here
// (no suitable hierarchy is mounted, or it is not writable), as opposed to a failure
// while using one that is.
var ErrUnavailable = errors.New("cgroup isolation unavailable")

// The controllers the cells use. In v1 each may be its own hierarchy or share one
// (cpu,cpuacct); cpuset comes last so that its directory, which holds the root's
// lock, is created first by nobody and removed last.
var (
	v1Controllers = []string{"memory", "cpu", "cpuacct", "cpuset"}
	v2Controllers = []string{"cpu", "cpuset", "memory"}
)

// Hierarchy is where this process may create groups: for v1 the directory of this
// process's own cgroup in each of the cpu, cpuacct, cpuset and memory hierarchies
// (so that instances stay inside whatever limits this process was given); for v2 the
// root of the unified hierarchy, since a v2 cgroup that holds processes (as this
// process's own does) cannot hand controllers to children, and the root is exempt.
type Hierarchy struct {
	version Version
	base    map[string]string // controller → base directory; v2: all the same
	mounts  map[string]mount  // controller → its hierarchy's mount
}

// Version reports which cgroup version the hierarchy is.
func (h *Hierarchy) Version() Version { return h.version }

func (h *Hierarchy) String() string {
	if h.version == V2 {
		return fmt.Sprintf("%s at %s", h.version, h.base["cpu"])
	}
	dirs := make([]string, 0, len(v1Controllers))
	for _, c := range v1Controllers {
		dirs = append(dirs, h.base[c])
	}
	return fmt.Sprintf("%s at %s", h.version, strings.Join(slices.Compact(dirs), ", "))
}

// Detect finds a hierarchy with the cpu, cpuset and memory controllers (and cpuacct
// on v1), preferring v2. An error wrapping ErrUnavailable says why there is none.
// Whether it is writable shows only when OpenRoot creates the root.
func Detect() (*Hierarchy, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: read mounts: %w", ErrUnavailable, err)
	}
	pc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: read own cgroup: %w", ErrUnavailable, err)
	}
	own, err := parseProcCgroup(pc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return detect(parseMountinfo(mi), own, os.ReadFile)
}

func detect(mounts []mount, own map[string]string, readFile func(string) ([]byte, error)) (*Hierarchy, error) {
	var why []string
	for _, m := range mounts {
		if !m.v2 {
			continue
		}
		b, err := readFile(filepath.Join(m.dir, "cgroup.controllers"))
		if err != nil {
			why = append(why, fmt.Sprintf("cgroup v2 at %s: %v", m.dir, err))
			continue
		}
		have := strings.Fields(string(b))
		var missing []string
		for _, c := range v2Controllers {
			if !slices.Contains(have, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			why = append(why, fmt.Sprintf("cgroup v2 at %s lacks the %s controllers", m.dir, strings.Join(missing, ", ")))
			continue
		}
		h := &Hierarchy{version: V2, base: map[string]string{}, mounts: map[string]mount{}}
		for _, c := range v2Controllers {
			h.base[c], h.mounts[c] = m.dir, m
		}
		return h, nil
	}

	h := &Hierarchy{version: V1, base: map[string]string{}, mounts: map[string]mount{}}
	var missing []string
	for _, c := range v1Controllers {
		i := slices.IndexFunc(mounts, func(m mount) bool { return !m.v2 && slices.Contains(m.controllers, c) })
		if i < 0 {
			missing = append(missing, c)
			continue
		}
		m := mounts[i]
		dir := m.dir
		if p, ok := own[c]; ok {
			if rel, ok := strings.CutPrefix(p, m.root); ok && (m.root == "/" || rel == "" || strings.HasPrefix(rel, "/")) {
				dir = filepath.Join(m.dir, rel)
			}
		}
		h.base[c], h.mounts[c] = dir, m
	}
	if len(missing) == 0 {
		return h, nil
	}
	why = append(why, fmt.Sprintf("no cgroup v1 hierarchy for %s", strings.Join(missing, ", ")))
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(why, "; "))
}

// GroupOf finds the group the process pid is in, which must be below the base and
// the same in every hierarchy used.
func (h *Hierarchy) GroupOf(pid int) (*Group, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	paths, err := parseProcCgroup(b)
	if err != nil {
		return nil, err
	}
	var g *Group
	ctrls := v1Controllers
	if h.version == V2 {
		ctrls = v2Controllers
	}
	for _, c := range ctrls {
		key := c
		if h.version == V2 {
			key = ""
		}
		p, ok := paths[key]
		if !ok {
			return nil, fmt.Errorf("process %d has no %s cgroup", pid, c)
		}
		m := h.mounts[c]
		abs := filepath.Join(m.dir, strings.TrimPrefix(p, m.root))
		rel, err := filepath.Rel(h.base[c], abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("process %d is in %s, outside %s", pid, abs, h.base[c])
		}
		if rel == "." {
			rel = ""
		}
		if g != nil && g.rel != filepath.ToSlash(rel) {
			return nil, fmt.Errorf("process %d is in %s for %s but %s for another controller", pid, rel, c, g.rel)
		}
		g = h.Group(filepath.ToSlash(rel))
	}
	return g, nil
}

// Hierarchy is the hierarchy the group is in.
func (g *Group) Hierarchy() *Hierarchy { return g.h }

// Group is one cgroup, present in every hierarchy directory the Hierarchy uses. Its
// methods may be called concurrently; they do not coordinate with each other.
type Group struct {
	h   *Hierarchy
	rel string // slash-separated path below the base directories
}

// Group returns the group at the slash-separated path rel below the base, which need
// not exist yet.
func (h *Hierarchy) Group(rel string) *Group { return &Group{h: h, rel: strings.Trim(rel, "/")} }

// Child returns the group name below g.
func (g *Group) Child(name string) *Group {
	if g.rel == "" {
		return &Group{h: g.h, rel: name}
	}
	return &Group{h: g.h, rel: g.rel + "/" + name}
}

// Path is the group's path below the hierarchy's base directories.
func (g *Group) Path() string { return g.rel }

// Dir is the group's directory in the hierarchy of controller (cpu, cpuacct, cpuset
// or memory).
func (g *Group) Dir(controller string) string {
	return filepath.Join(g.h.base[controller], filepath.FromSlash(g.rel))
}

// dirs are the group's distinct directories, the cpuset one last.
func (g *Group) dirs() []string {
	ctrls := v1Controllers
	if g.h.version == V2 {
		ctrls = v2Controllers[:1]
	}
	var out []string
	for _, c := range ctrls {
		if d := g.Dir(c); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Create makes the group's directories (existing ones are fine). For a group that
// will hold groups rather than processes, use CreateParent.
func (g *Group) Create() error {
	for _, d := range g.dirs() {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	return nil
}

// CreateParent makes the group and, on v2, hands the cpu, cpuset and memory
// controllers down to its children (cgroup.subtree_control). Such a group cannot
// hold processes itself on v2.
func (g *Group) CreateParent() error {
	if err := g.Create(); err != nil {
		return err
	}
	return g.delegate()
}

// delegate enables the controllers for the group's children (v2 only).
func (g *Group) delegate() error {
	if g.h.version != V2 {
		return nil
	}
	return g.write("cpu", "cgroup.subtree_control", "+cpu +cpuset +memory")
}

// write writes one value to a control file in the hierarchy of controller.
func (g *Group) write(controller, file, value string) error {
	p := filepath.Join(g.Dir(controller), file)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, err = f.Write([]byte(value))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return nil
}

func (g *Group) read(controller, file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(g.Dir(controller), file))
}

func (g *Group) exists(controller, file string) bool {
	_, err := os.Stat(filepath.Join(g.Dir(controller), file))
	return err == nil
}

// EffectiveCPUs are the CPUs the group's processes may run on.
func (g *Group) EffectiveCPUs() ([]int, error) {
	b, err := g.readEffective("cpuset.effective_cpus", "cpuset.cpus.effective", "cpuset.cpus")
	if err != nil {
		return nil, err
	}
	return ParseCPUList(string(b))
}

// EffectiveMems are the memory nodes the group's processes may allocate on, in the
// kernel's list format.
func (g *Group) EffectiveMems() (string, error) {
	b, err := g.readEffective("cpuset.effective_mems", "cpuset.mems.effective", "cpuset.mems")
	return strings.TrimSpace(string(b)), err
}

func (g *Group) readEffective(v1, v2, fallback string) ([]byte, error) {
	name := v1
	if g.h.version == V2 {
		name = v2
	}
	b, err := g.read("cpuset", name)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = g.read("cpuset", fallback)
	}
	if err != nil {
		return nil, fmt.Errorf("read cpuset of %s: %w", g.rel, err)
	}
	return b, nil
}

// SetCPUSet confines the group to cpus and the memory nodes mems (kernel list
// format). v1 needs both before a process may join; on v2 an empty mems inherits
// the parent's.
func (g *Group) SetCPUSet(cpus []int, mems string) error {
	if err := g.write("cpuset", "cpuset.cpus", FormatCPUList(cpus)); err != nil {
		return err
	}
	if mems == "" && g.h.version == V2 {
		return nil
	}
	return g.write("cpuset", "cpuset.mems", mems)
}

// SetMemoryLimit caps the group's memory, swap included, at bytes: beyond it the
// kernel's OOM killer kills a process of the group, as in a Garden container.
func (g *Group) SetMemoryLimit(bytes uint64) error {
	v := strconv.FormatUint(bytes, 10)
	if g.h.version == V2 {
		if err := g.write("memory", "memory.max", v); err != nil {
			return err
		}
		if g.exists("memory", "memory.swap.max") {
			return g.write("memory", "memory.swap.max", "0")
		}
		return nil
	}
	if err := g.write("memory", "memory.limit_in_bytes", v); err != nil {
		return err
	}
	// memory+swap ≥ memory is enforced by the kernel, so this comes second; the file
	// exists only with swap accounting. Garden sets it equal too (no swap).
	if g.exists("memory", "memory.memsw.limit_in_bytes") {
		return g.write("memory", "memory.memsw.limit_in_bytes", v)
	}
	return nil
}

// SetCPUShares sets the group's weight against its siblings when they compete for
// CPU: cpu.shares on v1, on v2 cpu.weight converted by SharesToWeight.
func (g *Group) SetCPUShares(shares uint64) error {
	if g.h.version == V2 {
		return g.write("cpu", "cpu.weight", strconv.FormatUint(SharesToWeight(shares), 10))
	}
	return g.write("cpu", "cpu.shares", strconv.FormatUint(shares, 10))
}

// Shares bounds of cgroup v1's cpu.shares.
const (
	MinShares = 2
	MaxShares = 262144
)

// SharesToWeight maps v1 cpu.shares [2, 262144] onto v2 cpu.weight [1, 10000] the way
// runc (and so Garden on cgroup v2) does: 1 + ((shares-2)*9999)/262142.
func SharesToWeight(shares uint64) uint64 {
	shares = min(max(shares, MinShares), MaxShares)
	return 1 + ((shares-2)*9999)/262142
}

// AddProcess moves the process pid (all its threads) into the group in every
// hierarchy. Children it forks afterwards are born in the group.
func (g *Group) AddProcess(pid int) error {
	for _, d := range g.dirs() {
		p := filepath.Join(d, "cgroup.procs")
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("add process %d to %s: %w", pid, p, err)
		}
	}
	return nil
}

// Processes lists the processes in the group in any of its hierarchies.
func (g *Group) Processes() ([]int, error) {
	var out []int
	for _, d := range g.dirs() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list processes of %s: %w", d, err)
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
	}
	return out, nil
}

// Usage is what the group has used.
type Usage struct {
	// CPU is the CPU time of every process that ran in the group since it was made.
	CPU time.Duration
	// Memory is what the group is charged for, less the page cache the kernel can
	// drop at once: Garden's TotalUsageTowardLimit on v1 (total_rss + total_cache −
	// total_inactive_file of memory.stat), memory.current − inactive_file on v2. It
	// counts what an app is killed for, as CF's stats do, not reclaimable cache.
	Memory uint64
}

// Usage reads the group's counters.
func (g *Group) Usage() (Usage, error) {
	var u Usage
	stat, err := g.read("memory", "memory.stat")
	if err != nil {
		return u, fmt.Errorf("read memory of %s: %w", g.rel, err)
	}
	if g.h.version == V2 {
		cs, err := g.read("cpu", "cpu.stat")
		if err != nil {
			return u, fmt.Errorf("read cpu of %s: %w", g.rel, err)
		}
		usec, err := flatKey(cs, "usage_usec")
		if err != nil {
			return u, fmt.Errorf("cpu.stat of %s: %w", g.rel, err)
		}
		u.CPU = time.Duration(usec) * time.Microsecond
		cur, err := g.read("memory", "memory.current")
		if err != nil {
			return u, fmt.Errorf("read memory of %s: %w", g.rel, err)
		}
		current, err := parseUint(cur)
		if err != nil {
			return u, fmt.Errorf("memory.current of %s: %w", g.rel, err)
		}
		inactive, _ := flatKey(stat, "inactive_file")
		u.Memory = current - min(inactive, current)
		return u, nil
	}
	b, err := g.read("cpuacct", "cpuacct.usage")
	if err != nil {
		return u, fmt.Errorf("read cpu of %s: %w", g.rel, err)
	}
	ns, err := parseUint(b)
	if err != nil {
		return u, fmt.Errorf("cpuacct.usage of %s: %w", g.rel, err)
	}
	u.CPU = time.Duration(ns)
	rss, err := flatKey(stat, "total_rss")
	if err != nil {
		return u, fmt.Errorf("memory.stat of %s: %w", g.rel, err)
	}
	cache, _ := flatKey(stat, "total_cache")
	inactive, _ := flatKey(stat, "total_inactive_file")
	u.Memory = rss + cache - min(inactive, cache)
	return u, nil
}

// OOMKills reports how many processes of the group the kernel's OOM killer killed.
// exact is false on v1 kernels older than 4.13, whose memory.oom_control lacks the
// oom_kill counter: n is then memory.failcnt, how often the limit was hit, which an
// OOM kill implies but which reclaim can also cause.
func (g *Group) OOMKills() (n uint64, exact bool, err error) {
	if g.h.version == V2 {
		b, err := g.read("memory", "memory.events")
		if err != nil {
			return 0, false, fmt.Errorf("read memory events of %s: %w", g.rel, err)
		}
		n, err := flatKey(b, "oom_kill")
		return n, err == nil, err
	}
	b, err := g.read("memory", "memory.oom_control")
	if err != nil {
		return 0, false, fmt.Errorf("read oom control of %s: %w", g.rel, err)
	}
	if n, err := flatKey(b, "oom_kill"); err == nil {
		return n, true, nil
	}
	b, err = g.read("memory", "memory.failcnt")
	if err != nil {
		return 0, false, fmt.Errorf("read memory failcnt of %s: %w", g.rel, err)
	}
	n, err = parseUint(b)
	return n, false, err
}

// Kill sends SIGKILL to every process in the group until none is left or timeout
// passes. Processes killed leave the group once they exit, not when they are reaped.
func (g *Group) Kill(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := g.Processes()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = osproc.Signal(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of cgroup %s survived SIGKILL for %s", pids, g.rel, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Remove kills what is left in the group and below it and removes their directories,
// children first. A group that does not exist is removed already.
func (g *Group) Remove(timeout time.Duration) error {
	return g.remove(time.Now().Add(timeout))
}

func (g *Group) remove(deadline time.Time) error {
	var errs []error
	for _, name := range g.children() {
		if err := g.Child(name).remove(deadline); err != nil {
			errs = append(errs, err)
		}
	}
	if err := g.Kill(max(time.Until(deadline), 0)); err != nil {
		errs = append(errs, err)
	}
	for _, d := range g.dirs() {
		if err := rmdir(d, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// children are the names of the group's child groups in any hierarchy.
func (g *Group) children() []string {
	var out []string
	for _, d := range g.dirs() {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(out, e.Name()) {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// rmdir removes a cgroup directory, retrying while the kernel still counts exiting
// processes in it (EBUSY) until deadline.
func rmdir(d string, deadline time.Time) error {
	for {
		err := syscall.Rmdir(d)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
