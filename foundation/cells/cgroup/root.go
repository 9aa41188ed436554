package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// maxRoots bounds the name.N alternatives OpenRoot tries while others hold name.
const maxRoots = 64

// Root is a group one process holds exclusively; the cells are made below it.
type Root struct {
	*Group
	// Cleaned are the groups a crashed earlier holder left behind that OpenRoot
	// removed, their processes killed.
	Cleaned []string

	lock *os.File
}

// OpenRoot creates or takes over the group name below the hierarchy's base and locks
// it (flock on its cpuset directory, released when this process dies). While another
// live holder has name, it takes name.1, name.2, … instead. Groups a crashed earlier
// holder left inside it are removed, their processes killed, and so are name.N groups
// nobody holds any more. timeout bounds the wait for killed processes to go.
//
// An error wrapping ErrUnavailable means the hierarchy is not writable here.
func (h *Hierarchy) OpenRoot(name string, timeout time.Duration) (*Root, error) {
	if name == "" || strings.ContainsAny(name, "/.") || strings.TrimSpace(name) != name {
		return nil, fmt.Errorf("cgroup root name %q: want a non-empty name without '/' or '.'", name)
	}
	deadline := time.Now().Add(timeout)
	base := h.Group("")
	if err := base.delegate(); err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return nil, fmt.Errorf("%w: %s holds processes, so it cannot hand controllers to new groups: %w",
				ErrUnavailable, base.Dir("cpu"), err)
		}
		return nil, unavailable(err)
	}
	for i := 0; i <= maxRoots; i++ {
		n := name
		if i > 0 {
			n = name + "." + strconv.Itoa(i)
		}
		g := base.Child(n)
		lock, err := g.tryLock()
		if err != nil {
			return nil, unavailable(err)
		}
		if lock == nil {
			continue // a live holder
		}
		r := &Root{Group: g, lock: lock}
		if err := r.open(name, deadline); err != nil {
			r.Close(time.Until(deadline))
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("cgroup roots %s to %s.%d are all held by running processes", name, name, maxRoots)
}

// open empties a freshly locked root, makes it a parent and sweeps abandoned
// siblings.
func (r *Root) open(name string, deadline time.Time) error {
	for _, c := range r.children() {
		child := r.Child(c)
		if err := child.remove(deadline); err != nil {
			return fmt.Errorf("remove stale cgroup: %w", err)
		}
		r.Cleaned = append(r.Cleaned, child.Path())
	}
	if err := r.Kill(time.Until(deadline)); err != nil {
		return err
	}
	if err := r.CreateParent(); err != nil {
		return err
	}
	// A new v1 cpuset is empty, and no process may join a group below an empty one.
	base := r.h.Group("")
	cpus, err := base.EffectiveCPUs()
	if err != nil {
		return err
	}
	mems, err := base.EffectiveMems()
	if err != nil {
		return err
	}
	if err := r.SetCPUSet(cpus, mems); err != nil {
		return err
	}
	entries, _ := os.ReadDir(base.Dir("cpuset"))
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), name+".")
		if _, err := strconv.Atoi(suffix); !ok || err != nil || !e.IsDir() || e.Name() == r.Path() {
			continue
		}
		g := base.Child(e.Name())
		lock, err := g.tryLock()
		if err != nil || lock == nil {
			continue
		}
		if err := g.remove(deadline); err == nil {
			r.Cleaned = append(r.Cleaned, g.Path())
		}
		lock.Close()
	}
	return nil
}

// tryLock creates the group's cpuset directory if need be and locks it. It returns
// nil without an error when a live process holds the lock.
func (g *Group) tryLock() (*os.File, error) {
	dir := g.Dir("cpuset")
	for range 5 {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		f, err := os.Open(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by its holder meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("open cgroup: %w", err)
		}
		if err := osproc.LockFile(f); err != nil {
			f.Close()
			if errors.Is(err, osproc.ErrLocked) {
				return nil, nil
			}
			return nil, fmt.Errorf("lock cgroup %s: %w", dir, err)
		}
		// The holder may have removed the directory between our open and its unlock;
		// then the lock is on a directory that is gone.
		fi, err1 := f.Stat()
		cur, err2 := os.Stat(dir)
		if err1 == nil && err2 == nil && os.SameFile(fi, cur) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lock cgroup %s: it keeps being removed", dir)
}

// Close kills anything left in the root, removes it with every group below it and
// releases the lock. It may be called more than once.
func (r *Root) Close(timeout time.Duration) error {
	if r.lock == nil {
		return nil
	}
	err := r.remove(time.Now().Add(timeout))
	r.lock.Close()
	r.lock = nil
	return err
}

// unavailable marks permission problems as ErrUnavailable.
func unavailable(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w (run as root, or in a cgroup delegated to this user): %w", ErrUnavailable, err)
	}
	return err
}
