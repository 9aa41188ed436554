// Package procstat reads what Linux's /proc/PID/stat says about a process: its state,
// process group, CPU ticks, resident pages and start time. The start time (clock ticks
// after boot) tells a process from a later one that got the same pid, so a pid written
// down earlier can be checked before it is signalled.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Stat is one process's line of /proc/PID/stat.
type Stat struct {
	State byte // R, S, D, Z (zombie), X (dead), ...
	PPID  int
	PGRP  int
	// Ticks is utime + stime + cutime + cstime, in clock ticks (USER_HZ).
	Ticks uint64
	// RSS is in pages.
	RSS uint64
	// StartTime is when the process started, in clock ticks after boot.
	StartTime uint64
}

// Parse parses a /proc/PID/stat line. The command name is in parentheses and may
// itself hold spaces and parentheses, so fields are counted from the last ')'.
func Parse(b []byte) (Stat, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return Stat{}, errors.New("stat: no command name")
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state) of proc(5); field n is f[n-3].
	if len(f) < 22 || len(f[0]) != 1 {
		return Stat{}, errors.New("stat: too few fields")
	}
	num := func(n int) (uint64, error) { return strconv.ParseUint(string(f[n-3]), 10, 64) }
	ppid, err := strconv.Atoi(string(f[4-3]))
	if err != nil {
		return Stat{}, err
	}
	pgrp, err := strconv.Atoi(string(f[5-3]))
	if err != nil {
		return Stat{}, err
	}
	var ticks uint64
	for n := 14; n <= 17; n++ { // utime, stime, cutime, cstime
		v, err := num(n)
		if err != nil {
			// cutime and cstime are signed in the kernel; negative never happens in
			// practice, but a parse failure must not poison the sample.
			if n >= 16 {
				continue
			}
			return Stat{}, err
		}
		ticks += v
	}
	start, err := num(22)
	if err != nil {
		return Stat{}, err
	}
	rss, err := strconv.ParseInt(string(f[24-3]), 10, 64)
	if err != nil {
		return Stat{}, err
	}
	return Stat{State: f[0][0], PPID: ppid, PGRP: pgrp, Ticks: ticks, RSS: uint64(max(rss, 0)), StartTime: start}, nil
}

// Read reads the stat of process pid; an error wrapping os.ErrNotExist means there is
// no such process.
func Read(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("pid %d: %w", pid, os.ErrNotExist)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Alive reports whether process pid exists and has not exited (a zombie, exited but
// not reaped by its parent, counts as gone, though signal 0 still finds it).
func Alive(pid int) bool {
	st, err := Read(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}

// StartTime is the start time of process pid (see Stat.StartTime).
func StartTime(pid int) (uint64, error) {
	st, err := Read(pid)
	return st.StartTime, err
}

// Same reports whether process pid is alive and is the process that had start time
// start: false once it exited, even when a new process got its pid.
func Same(pid int, start uint64) bool {
	st, err := Read(pid)
	return err == nil && st.State != 'Z' && st.State != 'X' && st.StartTime == start
}

// TreeTicks is the CPU ticks of process pid and its live children (see Stat.Ticks):
// with the ticks of children that exited, which the kernel adds to pid's, it is all
// the CPU a server that forks a process per client (Postgres) has used.
func TreeTicks(pid int) (uint64, error) {
	root, err := Read(pid)
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	ticks := root.Ticks
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := Read(child); err == nil && st.PPID == pid {
			ticks += st.Ticks
		}
	}
	return ticks, nil
}
