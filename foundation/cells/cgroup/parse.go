package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// mount is one cgroup filesystem from /proc/self/mountinfo.
type mount struct {
	dir         string   // where it is mounted
	root        string   // the cgroup of the hierarchy shown at dir, usually "/"
	v2          bool     // cgroup2 (unified) rather than a v1 hierarchy
	controllers []string // v1: the controllers bound to it, e.g. cpu, cpuacct
}

// parseMountinfo returns the cgroup and cgroup2 mounts listed in a mountinfo file
// (proc(5)): "id parent major:minor root mountpoint options [optional…] - fstype
// source superoptions". Lines it cannot read are skipped.
func parseMountinfo(b []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{root: unescapeMount(f[3]), dir: unescapeMount(f[4])}
		switch g[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if len(g) < 3 {
				continue
			}
			for _, o := range strings.Split(g[2], ",") {
				if knownV1Controller(o) {
					m.controllers = append(m.controllers, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// knownV1Controller filters mount options down to controller names.
func knownV1Controller(o string) bool {
	switch o {
	case "cpu", "cpuacct", "cpuset", "memory", "blkio", "devices", "freezer", "hugetlb",
		"net_cls", "net_prio", "perf_event", "pids", "rdma", "misc":
		return true
	}
	return false
}

// unescapeMount undoes the octal escapes (\040 for a space) mountinfo uses.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup reads /proc/<pid>/cgroup ("id:controllers:path" per line, cgroups(7))
// into controller → path. The v2 line ("0::/path") is keyed "". Named v1 hierarchies
// such as name=systemd are left out.
func parseProcCgroup(b []byte) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return nil, fmt.Errorf("cgroup line %q: want id:controllers:/path", line)
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if !strings.HasPrefix(c, "name=") {
				out[c] = parts[2]
			}
		}
	}
	return out, nil
}

// ParseCPUList parses a kernel CPU list such as "0-3,8,10-11" (cpuset(7)) into sorted,
// distinct CPU numbers. An empty list is valid and yields none.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("cpu list %q: range %q too large", s, part)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList writes CPUs in the kernel's list format, e.g. [0 1 2 5] → "0-2,5".
func FormatCPUList(cpus []int) string {
	c := slices.Clone(cpus)
	slices.Sort(c)
	c = slices.Compact(c)
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(c[i]))
		} else {
			parts = append(parts, strconv.Itoa(c[i])+"-"+strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// errNoKey is returned by flatKey when the key is absent.
var errNoKey = errors.New("key not present")

// flatKey reads one numeric value from a flat keyed file ("key value" lines, as
// memory.stat, cpu.stat, memory.events and memory.oom_control are).
func flatKey(b []byte, key string) (uint64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: %w", key, errNoKey)
}

// parseUint reads a file holding one number, such as cpuacct.usage or memory.current.
func parseUint(b []byte) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
