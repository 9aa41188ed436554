// Package cpuaffinity pins processes to CPUs with sched_setaffinity(2). The kernel
// keeps a CPU mask per thread, and a new thread or child process inherits the mask of
// the thread that made it, so pinning a process means pinning every one of its
// threads.
package cpuaffinity

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
)

// maxPasses bounds Pin's passes over a process's threads: each pass sets the threads
// the ones before did not see, made meanwhile by a thread not yet set.
const maxPasses = 20

// Of returns the CPUs that thread (or process) id may run on, in order.
func Of(id int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(id, &set); err != nil {
		return nil, fmt.Errorf("CPUs of %d: %w", id, err)
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Pin puts every thread of process pid on cpus (the kernel leaves out those that are
// not online). A process that exits meanwhile is not an error; a process that goes on
// making threads faster than they can be set is.
func Pin(pid int, cpus []int) error {
	if len(cpus) == 0 {
		return errors.New("pin to no CPU")
	}
	var want unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(want)*64 {
			return fmt.Errorf("CPU %d is out of range", c)
		}
		want.Set(c)
	}
	set := map[int]bool{}
	for range maxPasses {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("threads of %d: %w", pid, err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || set[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("pin thread %d of %d to CPUs %v: %w", tid, pid, cpus, err)
			}
			set[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
	return fmt.Errorf("pin %d to CPUs %v: it kept making threads", pid, cpus)
}

// PinWithChildren pins process pid and its children (those whose parent it is) to
// cpus: a server that forks a process per client (Postgres) with the children it has;
// those it forks later inherit the mask.
func PinWithChildren(pid int, cpus []int) error {
	pids := []int{pid}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(child); err == nil && st.PPID == pid {
			pids = append(pids, child)
		}
	}
	// The parent first: a child it forks meanwhile then inherits the mask.
	for _, p := range slices.Compact(pids) {
		if err := Pin(p, cpus); err != nil {
			return err
		}
	}
	return nil
}
