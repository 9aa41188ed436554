package cells

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100
// on every Linux architecture Go supports (reading sysconf would need cgo).
const clockTicks = 100

// groupUsage is the summed usage of one process group.
type groupUsage struct {
	ticks   uint64
	rss     uint64 // bytes
	members int    // processes that are not zombies
	pids    []int
}

// scanGroups reads every process once and sums usage per process group, limited to
// the groups asked for.
func scanGroups(want map[int]bool) map[int]groupUsage {
	out := map[int]groupUsage{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	page := uint64(os.Getpagesize())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since ReadDir
		}
		st, err := procstat.Parse(b)
		if err != nil || !want[st.PGRP] {
			continue
		}
		u := out[st.PGRP]
		u.ticks += st.Ticks
		u.rss += st.RSS * page
		if st.State != 'Z' {
			u.members++
		}
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			u.pids = append(u.pids, pid)
		}
		out[st.PGRP] = u
	}
	return out
}

// groupAlive reports whether any live (non-zombie) process is left in the group.
func groupAlive(pgid int) bool {
	return scanGroups(map[int]bool{pgid: true})[pgid].members > 0
}

// sampleLoop samples every running instance each StatsInterval until Close.
func (c *Cells) sampleLoop() {
	t := time.NewTicker(c.cfg.StatsInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			c.sample()
		}
	}
}

// sample updates CPU, memory and disk of every instance with a running process: from
// its cgroup when isolated, else from /proc. Without isolation and with EnforceMemory
// it kills those over their memory limit.
func (c *Cells) sample() {
	type target struct {
		in     *instance
		pgid   int
		cg     *cgroup.Group
		tmpDir string
	}
	var targets []target
	want := map[int]bool{}
	c.mu.Lock()
	for _, p := range c.procs {
		for _, in := range p.insts {
			if in.pgid != 0 {
				targets = append(targets, target{in, in.pgid, in.cg, in.tmpDir})
				if in.cg == nil {
					want[in.pgid] = true
				}
			}
		}
	}
	c.mu.Unlock()
	if len(targets) == 0 {
		return
	}

	var usage map[int]groupUsage
	if len(want) > 0 {
		usage = scanGroups(want)
	}
	type reading struct {
		cpu    time.Duration
		mem    uint64
		ok     bool
		waits  map[int]time.Duration // run-queue wait by thread
		waitOK bool
	}
	readings := make([]reading, len(targets))
	disk := make([]uint64, len(targets))
	for i, t := range targets {
		if t.cg != nil {
			u, err := t.cg.Usage()
			if err != nil {
				// Gone with its process since the targets were listed, most likely.
				c.log.Debug("read instance cgroup", "cgroup", t.cg.Path(), "err", err)
			}
			readings[i] = reading{cpu: u.CPU, mem: u.Memory, ok: err == nil}
			if pids, err := t.cg.Processes(); err == nil {
				readings[i].waits, readings[i].waitOK = threadWaits(pids)
			}
		} else {
			u := usage[t.pgid]
			// ok only with a live process found: an empty group is no reading.
			readings[i] = reading{cpu: time.Duration(u.ticks) * (time.Second / clockTicks), mem: u.rss, ok: u.members > 0}
			readings[i].waits, readings[i].waitOK = threadWaits(u.pids)
		}
		disk[i] = dirSize(t.tmpDir)
	}
	now := time.Now() // CPU is measured against real time, whatever Config.Clock says

	var metrics []ContainerMetrics
	c.mu.Lock()
	for i, t := range targets {
		in, r := t.in, readings[i]
		if in.pgid != t.pgid || in.cg != t.cg || !r.ok {
			continue // restarted or stopped meanwhile
		}
		if wall := now.Sub(in.lastSample); wall > 0 {
			// Without a cgroup, CPU of children reaped outside the group vanishes;
			// never report negative, so that the cumulative CPU time never drops.
			used := max(r.cpu-in.lastCPU, 0)
			in.info.CPU = used.Seconds() / wall.Seconds()
			in.info.CPUEntitlement = 0
			if in.entitled > 0 {
				in.info.CPUEntitlement = in.info.CPU / in.entitled
			}
			in.cpuTotal += used
			in.entTotal += time.Duration(in.entitled * float64(wall))
		}
		in.lastCPU, in.lastSample = r.cpu, now
		in.info.MemBytes, in.info.DiskBytes = r.mem, disk[i]
		if r.waitOK {
			in.wait.add(r.waits)
		}
		// No memory charged yet: the container has not begun to run its program (a
		// process that has not exec'd charges nothing to its new group). Such a
		// reading would stand for "unknown" as a zero and pull a step's memory down;
		// the CPU time it would carry is in the next reading's cumulative counters.
		if c.cfg.OnMetrics != nil && r.mem > 0 {
			counters := "proc"
			if t.cg != nil {
				counters = "cgroup"
			}
			metrics = append(metrics, ContainerMetrics{ProcessGUID: in.spec.ProcessGUID, AppGUID: in.spec.AppGUID,
				AppName: in.spec.AppName, ProcessType: in.spec.ProcessType, Index: in.index, InstanceGUID: in.info.GUID,
				Time: now, CPU: in.info.CPU, CPUEntitlement: in.info.CPUEntitlement, CPUTime: in.cpuTotal, Entitlement: in.entTotal, Age: now.Sub(in.started),
				MemBytes: r.mem, DiskBytes: disk[i], MemQuotaBytes: uint64(max(in.spec.MemoryMB, 0)) << 20,
				DiskQuotaBytes: uint64(max(in.spec.DiskMB, 0)) << 20, Cell: in.cell.name, Counters: counters})
			if in.wait.known {
				w := in.wait.total
				metrics[len(metrics)-1].CPUWait = &w
			}
		}

		limit := uint64(in.spec.MemoryMB) << 20
		if c.cfg.EnforceMemory && t.cg == nil && limit > 0 && r.mem > limit && in.killReason == "" {
			in.killReason = oomReason
			c.log.Warn("instance over its memory limit, killing it", "process_guid", in.spec.ProcessGUID,
				"index", in.index, "rss_bytes", r.mem, "limit_bytes", limit)
			killGroup(t.pgid, syscall.SIGKILL)
		}
	}
	c.mu.Unlock()
	if len(metrics) > 0 {
		c.cfg.OnMetrics(metrics)
	}
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(dir string) uint64 {
	if dir == "" {
		return 0
	}
	var n uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	return n
}
