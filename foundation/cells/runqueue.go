package cells

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Run-queue wait is how long a container's threads were ready to run but waited for a
// CPU (the second field of /proc/<pid>/task/<tid>/schedstat, in nanoseconds): what its
// neighbours on the cell, or the host's other processes, took from it. Cgroup v2's
// cpu.pressure says the same per cgroup, but cgroup v1 has no such file, and the
// per-thread counters work on both and without cgroups.

// threadWaits reads the run-queue wait of every thread of the processes pids, by
// thread id. ok is false when the kernel keeps no such counters (no schedstat files).
func threadWaits(pids []int) (waits map[int]time.Duration, ok bool) {
	waits = map[int]time.Duration{}
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone since listed
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
			if err != nil {
				continue
			}
			if w, err := parseSchedstat(b); err == nil {
				waits[tid], ok = w, true
			}
		}
	}
	return waits, ok
}

// parseSchedstat reads the run-queue wait from a schedstat line: "run wait slices".
func parseSchedstat(b []byte) (time.Duration, error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, strconv.ErrSyntax
	}
	ns, err := strconv.ParseUint(string(f[1]), 10, 63)
	return time.Duration(ns), err
}

// waitCounter sums a container's run-queue wait from readings of its threads. A
// thread's counter lives as long as the thread: what a thread waited between the last
// reading and its exit is lost, so the sum can only understate.
type waitCounter struct {
	last  map[int]time.Duration // by thread id, at the previous reading
	total time.Duration
	known bool
}

// add folds in a reading of the container's threads and returns the total. A thread
// first seen counts all it waited (it was born in the container); one whose counter
// went backwards is a new thread with a recycled id.
func (w *waitCounter) add(waits map[int]time.Duration) time.Duration {
	for tid, cur := range waits {
		prev, seen := w.last[tid]
		if seen && cur >= prev {
			w.total += cur - prev
		} else {
			w.total += cur
		}
	}
	w.last, w.known = waits, true
	return w.total
}
