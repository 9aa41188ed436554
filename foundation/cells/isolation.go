package cells

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/internal/cpuaffinity"
)

// Cell is an isolation segment: a cell whose instances run on its own CPUs.
type Cell struct {
	Name string // the isolation segment's name; "" is the shared segment
	CPUs []int  // CPU numbers; empty means every CPU this process may use
}

const (
	defaultName = "cells"
	// cgroupTimeout bounds waiting for killed processes to leave a cgroup and for the
	// kernel to let it be removed.
	cgroupTimeout = 5 * time.Second
	// defaultMemoryMB stands in for an unset memory limit when weighing CPU, as
	// Cloud Controller's default process memory.
	defaultMemoryMB = 1024
)

var (
	rootNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	cellNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// cell is a resolved Cell. Its group is nil without isolation.
type cell struct {
	name  string
	cpus  []int
	addr  string // 127.0.1.N for the Nth cell, the stats' host
	group *cgroup.Group
	mems  string // memory nodes of the cell's cpuset
}

// dir is the cell's cgroup name.
func (c *cell) dir() string {
	if c.name == "" {
		return "shared"
	}
	return c.name
}

// newCells lists the configured cells, or the one shared cell when there are none;
// CPUs are checked and filled in by resolveCPUs at Start.
func newCells(cfg []Cell) []*cell {
	if len(cfg) == 0 {
		cfg = []Cell{{}}
	}
	out := make([]*cell, len(cfg))
	for i, cc := range cfg {
		out[i] = &cell{name: cc.Name, cpus: slices.Clone(cc.CPUs), addr: fmt.Sprintf("127.0.1.%d", i+1)}
	}
	return out
}

// validateCells checks names, so that every cell has a distinct cgroup directory.
func validateCells(cells []*cell) error {
	seen := map[string]bool{}
	for _, c := range cells {
		if c.name != "" && (!cellNameRE.MatchString(c.name) || c.name == "." || c.name == "..") {
			return fmt.Errorf("cell %q: a name is letters, digits, '.', '-' and '_'", c.name)
		}
		if seen[c.dir()] {
			return fmt.Errorf("cell %q is configured twice (the shared cell \"\" counts as %q)", c.name, "shared")
		}
		seen[c.dir()] = true
	}
	if len(cells) > 255 {
		return fmt.Errorf("%d cells: at most 255 have an address", len(cells))
	}
	return nil
}

// resolveCPUs checks every cell's CPUs against those available and gives cells
// without CPUs all of them. Cells that share a CPU are allowed but reported, since
// their instances then compete.
func resolveCPUs(cells []*cell, available []int) (overlaps []string, err error) {
	if len(available) == 0 {
		return nil, errors.New("no CPUs available")
	}
	owner := map[int]string{}
	for _, c := range cells {
		if len(c.cpus) == 0 {
			c.cpus = slices.Clone(available)
		}
		slices.Sort(c.cpus)
		c.cpus = slices.Compact(c.cpus)
		for _, cpu := range c.cpus {
			if !slices.Contains(available, cpu) {
				return nil, fmt.Errorf("cell %q wants CPU %d, but this machine offers only CPUs %s (%d cells need at least %d CPUs)",
					c.name, cpu, cgroup.FormatCPUList(available), len(cells), len(cells))
			}
			if o, ok := owner[cpu]; ok {
				overlaps = append(overlaps, fmt.Sprintf("CPU %d is in cells %q and %q", cpu, o, c.name))
			}
			owner[cpu] = c.name
		}
	}
	return overlaps, nil
}

// cellFor is the cell of an isolation segment: the one of that name, else the first.
func (c *Cells) cellFor(segment string) *cell {
	for _, cl := range c.cells {
		if cl.name == segment {
			return cl
		}
	}
	return c.cells[0]
}

// cpuShares is the cpu.shares Garden gives a container limited to memoryMB: one share
// per MB. That is what Diego's executor asks Garden for with containers.set_cpu_weight
// (it sets the container's CPU weight to its memory in MB: executor
// depot/containerstore/storenode.go, diego-release jobs/rep/spec), and guardian writes
// the weight to cpu.shares as it is (rundmc/bundlerules/limits.go; on cgroup v2 runc
// maps it to cpu.weight, see cgroup.SharesToWeight). Without that flag the executor asks
// for 1024 × cpu_weight / 100 shares with Cloud Controller's cpu_weight = 100 ×
// clamp(memory, 128, 8192) / 8192 (task_cpu_weight_calculator.rb): the same proportion,
// floored at 128 MB, capped at 8 GB and rounded down in steps of 80 MB. One share per
// MB is also what Garden's CPU entitlement assumes (entitledCores). An unset limit
// counts as CC's default of 1024 MB; the kernel bounds shares to [2, 262144].
func cpuShares(memoryMB int) uint64 {
	if memoryMB <= 0 {
		memoryMB = defaultMemoryMB
	}
	return min(max(uint64(memoryMB), cgroup.MinShares), cgroup.MaxShares)
}

// entitledCores is the CPU, in cores, a container with shares is entitled to on a
// cell of cellCPUs CPUs and cellMemoryMB of memory. Garden accrues entitlement at
// shares × cpu-entitlement-per-share percent of a core, and that per-share default is
// 100 × cores / memory MB (guardian guardiancmd/cpuentitlement,
// rundmc/containerizer.go calculateCPUEntitlement). With a share per MB it is the
// container's fraction of the cell's memory times the cell's CPUs: what it gets under
// full contention on a cell whose memory is fully allocated.
func entitledCores(shares uint64, cellCPUs, cellMemoryMB int) float64 {
	if cellMemoryMB <= 0 {
		return 0
	}
	return float64(shares) * float64(cellCPUs) / float64(cellMemoryMB)
}

// Cores reports, per cell (isolation segment) name, how many CPUs an instance of that
// cell may run on: its cell's CPUs with isolation, every CPU this process may use
// without. It is empty before Start.
func (c *Cells) Cores() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	if len(c.available) == 0 {
		return out
	}
	for _, cl := range c.cells {
		n := len(c.available)
		if c.isolated {
			n = len(cl.cpus)
		}
		out[cl.name] = float64(n)
	}
	return out
}

// Addrs reports, per cell (isolation segment) name, the address its instances report as
// their host in process stats (127.0.1.N for the Nth cell), as Diego reports its cell's
// IP: a run tells by it which instances share a cell.
func (c *Cells) Addrs() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, cl := range c.cells {
		out[cl.name] = cl.addr
	}
	return out
}

// ErrNotIsolated is returned by CellCPU when the cells have no cgroups of their own.
var ErrNotIsolated = errors.New("the cells are not isolated in cgroups")

// CellCPU is the CPU time all instances of a cell (isolation segment) have used since it
// was made, as the kernel charged the cell's cgroup: a measure of the cell's busy time
// apart from the instances' own metrics. Without isolation it returns ErrNotIsolated.
func (c *Cells) CellCPU(segment string) (time.Duration, error) {
	c.mu.Lock()
	var g *cgroup.Group
	for _, cl := range c.cells {
		if cl.name == segment {
			g = cl.group
		}
	}
	c.mu.Unlock()
	if g == nil {
		return 0, ErrNotIsolated
	}
	u, err := g.Usage()
	if err != nil {
		return 0, err
	}
	return u.CPU, nil
}

// Isolation reports whether instances run in cgroups, each cell's on its own CPUs
// with memory limits and CPU shares. Without isolation, reason says why (not root,
// no suitable hierarchy, Config.NoIsolation, not started); with it, reason names the
// cgroup hierarchy used. Instances run either way.
func (c *Cells) Isolation() (ok bool, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isolated, c.isolation
}

// setupIsolation resolves the cells and, where cgroups are usable, makes the root and
// a group per cell. Only configuration errors and failures of a hierarchy found usable
// are returned; an unusable one leaves Cells without isolation. Called by Start under
// c.mu.
func (c *Cells) setupIsolation() error {
	if !rootNameRE.MatchString(c.cfg.Name) {
		return fmt.Errorf("cells name %q: want letters, digits, '-' and '_'", c.cfg.Name)
	}
	if err := validateCells(c.cells); err != nil {
		return err
	}
	var h *cgroup.Hierarchy
	if c.cfg.NoIsolation {
		c.isolation = "disabled by configuration"
	} else {
		var err error
		if h, err = cgroup.Detect(); err != nil {
			c.isolation = err.Error()
		}
	}

	available, err := c.availableCPUs(h)
	if err != nil {
		return fmt.Errorf("find available CPUs: %w", err)
	}
	overlaps, err := resolveCPUs(c.cells, available)
	if err != nil {
		return err
	}
	c.available = available
	for _, o := range overlaps {
		c.log.Warn("cells share a CPU; their instances compete", "overlap", o)
	}
	if h == nil {
		c.log.Warn("no cgroup isolation: instances share the CPUs and memory limits are not enforced", "reason", c.isolation)
		return nil
	}

	root, err := h.OpenRoot("cfbench-"+c.cfg.Name, cgroupTimeout)
	if errors.Is(err, cgroup.ErrUnavailable) {
		c.isolation = err.Error()
		c.log.Warn("no cgroup isolation: instances share the CPUs and memory limits are not enforced", "reason", c.isolation)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup root: %w", err)
	}
	for _, p := range root.Cleaned {
		c.log.Warn("removed a cgroup a crashed run left behind, and its processes", "cgroup", p)
	}
	// Config.First: at the default weight all the cells together weighed what the
	// foundation's process does, that weight split across their CPUs by load, and on
	// the CPU it shared with the generators a woken generator waited 30 to 130 ms
	// behind the foundation's and the plugin's bursts, enough to trip the generators'
	// send-lag check on a clean run. At the highest weight it waits a few ms at most.
	if c.cfg.First {
		err = root.SetCPUShares(cgroup.MaxShares)
	}
	var mems string
	if err == nil {
		mems, err = root.EffectiveMems()
	}
	if err == nil {
		for _, cl := range c.cells {
			g := root.Child(cl.dir())
			if err = g.CreateParent(); err != nil {
				break
			}
			if err = g.SetCPUSet(cl.cpus, mems); err != nil {
				err = fmt.Errorf("cell %q: %w", cl.name, err)
				break
			}
			cl.group, cl.mems = g, mems
		}
	}
	if err != nil {
		for _, cl := range c.cells {
			cl.group = nil
		}
		if cerr := root.Close(cgroupTimeout); cerr != nil {
			c.log.Warn("remove cgroups", "err", cerr)
		}
		return fmt.Errorf("create cells: %w", err)
	}
	c.root, c.isolated, c.isolation = root, true, h.String()+", root "+root.Path()
	c.log.Info("cells isolated with cgroups", "hierarchy", h.String(), "root", root.Path())
	return nil
}

// availableCPUs are the CPUs cells may use: the test hook's, the cgroup base's, or
// else this process's affinity.
func (c *Cells) availableCPUs(h *cgroup.Hierarchy) ([]int, error) {
	if c.cpusAvailable != nil {
		return c.cpusAvailable()
	}
	if h != nil {
		if cpus, err := h.Group("").EffectiveCPUs(); err == nil && len(cpus) > 0 {
			return cpus, nil
		}
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return cgroup.ParseCPUList(v)
		}
	}
	return nil, errors.New("no Cpus_allowed_list in /proc/self/status")
}

// teardownIsolation removes the cells' cgroups once every instance is gone.
func (c *Cells) teardownIsolation() error {
	c.mu.Lock()
	root := c.root
	c.root = nil
	c.mu.Unlock()
	if root == nil {
		return nil
	}
	if err := root.Close(cgroupTimeout); err != nil {
		c.log.Warn("remove cgroups", "root", root.Path(), "err", err)
		return fmt.Errorf("remove cgroups: %w", err)
	}
	return nil
}

// machineMemoryMB is MemTotal of /proc/meminfo in MB (0 if unknown): the memory
// capacity Garden divides CPU among by default.
func machineMemoryMB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// gateScript holds the instance's shell until the cell has put it into its cgroup
// (the parent closes fd 3 then), so that nothing of the app runs outside: no window
// in which a child could be forked uncontained, on v1 as on v2. The command then runs
// exactly as `/bin/sh -c command` would.
const gateScript = `read -r _ <&3; exec 3<&-; exec /bin/sh -c "$1"`

// containerName is an instance's cgroup name, unique per run.
func containerName(processGUID string, index int, instanceGUID string) string {
	return fmt.Sprintf("%s_%d_%s", processGUID, index, instanceGUID)
}

// createContainer makes an instance's cgroup below its cell with the cell's CPUs and
// memory nodes (v1 needs them filled in before a process may join), the spec's memory
// limit and CPU shares.
func createContainer(g *cgroup.Group, cl *cell, memoryMB int) error {
	if err := g.Create(); err != nil {
		return err
	}
	if err := g.SetCPUSet(cl.cpus, cl.mems); err != nil {
		return err
	}
	if memoryMB > 0 {
		if err := g.SetMemoryLimit(uint64(memoryMB) << 20); err != nil {
			return err
		}
	}
	return g.SetCPUShares(cpuShares(memoryMB))
}

// startPlaced starts cmd gated by gateScript, moves it into its container g (nil
// without isolation) and onto cpus, and only then lets it run the app: what it starts
// inherits both. The CPUs are set even in a container, whose cpuset the kernel
// narrows by the mask inherited from this process, which may be pinned elsewhere (the
// foundation's platform CPUs). On failure the process is killed and reaped.
func startPlaced(cmd *exec.Cmd, command string, g *cgroup.Group, cpus []int) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	cmd.Args = []string{"/bin/sh", "-c", gateScript, "sh", command}
	cmd.ExtraFiles = []*os.File{r}
	err = cmd.Start()
	r.Close()
	if err != nil {
		return err
	}
	place := func(pid int) error { return cpuaffinity.Pin(pid, cpus) }
	if g != nil {
		place = func(pid int) error {
			if err := g.AddProcess(pid); err != nil {
				return fmt.Errorf("put it into its container: %w", err)
			}
			return cpuaffinity.Pin(pid, cpus)
		}
	}
	if err := place(cmd.Process.Pid); err != nil {
		killGroup(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	return nil // the deferred Close releases the gate
}

// oomKilled reports whether the kernel's OOM killer killed a process of the
// container. On v1 kernels without an oom_kill counter, a limit that was hit plus a
// SIGKILLed leader count as one.
func oomKilled(g *cgroup.Group, exitErr error) bool {
	n, exact, err := g.OOMKills()
	if err != nil || n == 0 {
		return false
	}
	if exact {
		return true
	}
	var ee *exec.ExitError
	if errors.As(exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	return false
}

// abandonIsolationLocked undoes setupIsolation when Start fails after it.
func (c *Cells) abandonIsolationLocked() {
	if c.root == nil {
		return
	}
	if err := c.root.Close(cgroupTimeout); err != nil {
		c.log.Warn("remove cgroups", "root", c.root.Path(), "err", err)
	}
	for _, cl := range c.cells {
		cl.group = nil
	}
	c.root, c.isolated, c.isolation = nil, false, "start failed"
}
