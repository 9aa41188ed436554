package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTick = 100

// proc is one process's line of /proc/PID/stat.
type proc struct {
	ppid   int
	ticks  int64 // utime + stime: its own, not its reaped children's (see ForeignUntil)
	cticks int64 // cutime + cstime: the children it reaped (see OwnUntil)
	comm   string
}

// CPUSnapshot is every process's CPU time at one moment.
type CPUSnapshot map[int]proc

// Snapshot reads /proc/*/stat; processes that end while it reads are left out.
func Snapshot() CPUSnapshot {
	s := CPUSnapshot{}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		pid, pr, ok := parseStat(string(b))
		if ok {
			s[pid] = pr
		}
	}
	return s
}

// parseStat reads "PID (COMM) STATE PPID ... UTIME STIME ...": fields 14 and 15 (from
// 1), counted after the command, which may hold spaces and parentheses.
func parseStat(line string) (int, proc, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return 0, proc{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	f := strings.Fields(line[end+1:]) // f[0] is field 3 (state)
	if err != nil || len(f) < 15 {
		return 0, proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	var ticks, cticks int64
	for i, s := range f[11:15] {
		n, _ := strconv.ParseInt(s, 10, 64)
		if i < 2 {
			ticks += n
		} else {
			cticks += n
		}
	}
	return pid, proc{ppid: ppid, ticks: ticks, cticks: cticks, comm: line[open+1 : end]}, true
}

// Foreign is the CPU processes outside the harness used between two snapshots.
type Foreign struct {
	CPU time.Duration
	Top string // the three busiest commands, "cc1:3.1s,go:1.0s"
}

// ForeignUntil is what processes other than kernel threads, this process and the
// descendants of ours used from s to later: each process's own CPU, all of it for a
// process that started in between. A process that started and ended in between is
// missed (an underestimate): counting the children's times a parent adds when it
// reaps them would count a long-lived child's whole life again (a shell reaping a
// test binary showed minutes of CPU in a second).
func (s CPUSnapshot) ForeignUntil(later CPUSnapshot, ours []int) Foreign {
	mine := later.mine(ours)
	by := map[string]int64{}
	var sum int64
	for pid, p := range later {
		if pid == 2 || p.ppid == 2 || mine(pid) {
			continue
		}
		if d := p.ticks - s[pid].ticks; d > 0 { // s[pid] is zero for a new process
			sum += d
			by[p.comm] += d
		}
	}
	names := make([]string, 0, len(by))
	for c := range by {
		names = append(names, c)
	}
	sort.Slice(names, func(i, j int) bool {
		return by[names[i]] > by[names[j]] || by[names[i]] == by[names[j]] && names[i] < names[j]
	})
	var top []string
	for _, c := range names[:min(3, len(names))] {
		top = append(top, fmt.Sprintf("%s:%.1fs", c, float64(by[c])/clockTick))
	}
	return Foreign{CPU: time.Duration(sum) * time.Second / clockTick, Top: strings.Join(top, ",")}
}

// mine reports whether pid is the harness, one of ours or a descendant of either.
func (s CPUSnapshot) mine(ours []int) func(pid int) bool {
	own := map[int]bool{os.Getpid(): true}
	for _, p := range ours {
		own[p] = true
	}
	return func(pid int) bool {
		for q, n := pid, 0; q > 1 && n < 64; q, n = s[q].ppid, n+1 {
			if own[q] {
				return true
			}
		}
		return false
	}
}

// OwnUntil is the CPU the harness's own long-lived processes used from s to later,
// not counting the measured command: each one's own CPU and, but for the harness
// itself (whose reaped child is the measured command), the CPU of the children it
// reaped meanwhile (Postgres's backends that ended with the run). ours as in Runner.
func (s CPUSnapshot) OwnUntil(later CPUSnapshot, ours []int) time.Duration {
	mine := later.mine(ours)
	me := os.Getpid()
	var sum int64
	for pid, p := range later {
		if !mine(pid) {
			continue
		}
		d := p.ticks - s[pid].ticks
		if pid != me {
			d += p.cticks - s[pid].cticks
		}
		sum += max(d, 0)
	}
	return time.Duration(sum) * time.Second / clockTick
}

// HostCPU is the machine's CPU time from the first line of /proc/stat: Busy is user,
// nice, system, irq and softirq time over every core (what processes and the kernel
// on their behalf used), Steal what the hypervisor gave other machines.
type HostCPU struct {
	Busy, Steal time.Duration
	OK          bool // false where /proc/stat cannot be read
}

// ReadHostCPU reads /proc/stat.
func ReadHostCPU() HostCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}
	}
	return parseHostCPU(string(b))
}

// parseHostCPU reads "cpu  user nice system idle iowait irq softirq steal ...".
func parseHostCPU(stat string) HostCPU {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return HostCPU{}
	}
	var v [8]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return HostCPU{}
		}
		v[i] = n
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTick }
	return HostCPU{Busy: tick(v[0] + v[1] + v[2] + v[5] + v[6]), Steal: tick(v[7]), OK: true}
}
