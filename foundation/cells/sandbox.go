package cells

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cf-benchmark/cf-benchmark/internal/fstree"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
)

// What a Garden container gives an instance, and what this package does instead:
//
//   - its own user: with Config.User and this process root, each instance runs as a
//     user of its own (a uid and gid of the instance uid range, no name, no
//     supplementary groups; Config.User stages), so the foundation's files (mode
//     0600/0700, owned by root) are closed to it, and so are the files, processes and
//     environment (/proc/PID/environ: service credentials, the run's secrets) of every
//     other instance, as between Garden containers. Not root, instances run as this
//     process's user and can read whatever it can (Sandbox says so).
//   - its own root file system: with Config.CopyApp, each instance gets its own
//     writable copy of the droplet (its working dir and HOME) and its own TMPDIR, in a
//     directory of the tmp root that only its user may enter.
//   - its own network namespace: not done. Instances are given 127.0.0.1 (PORT,
//     CF_INSTANCE_ADDR) and the router reaches them there, but an app may bind any
//     address of the host, and reach anything the host reaches.
//   - dying with the cell: the instance's first process gets SIGKILL when the cell's
//     process dies (PR_SET_PDEATHSIG; strictly, when the OS thread that started it
//     ends, which Go's runtime does not do while the process lives); its children do
//     not (the kernel clears the setting on fork), nor does a v1 cgroup kill them. A
//     PID namespace would take them along, but its first process ignores SIGTERM
//     unless it handles it, unlike an app on Diego. With Config.RecordDir the next
//     Start stops what is left (see stopOrphans), and with cgroups it removes the
//     containers a killed run left, with their processes.

// sandboxUser resolves the user instances run as: nil (this process's user) unless
// this process is root and name is set. A missing user is created as a system user
// without a home or a login shell.
func sandboxUser(name string) (*osproc.Credential, error) {
	if name == "" || os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return nil, fmt.Errorf("look up user %s: %w", name, err)
		}
		out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("create user %s for app instances (useradd): %w: %s", name, err, strings.TrimSpace(string(out)))
		}
		if u, err = user.Lookup(name); err != nil {
			return nil, fmt.Errorf("look up user %s: %w", name, err)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("user %s (uid %s, gid %s) cannot run app instances: want an unprivileged user", name, u.Uid, u.Gid)
	}
	// Groups empty, not NoSetGroups: the child must not keep root's groups.
	return &osproc.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// User is whom staging runs the buildpack's commands as, once started: Config.User, or
// nil for this process's user. Instances run each as a user of their own.
func (c *Cells) User() *osproc.Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

// Sandbox says whom instances run as and what they share with this process.
func (c *Cells) Sandbox() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s string
	switch {
	case c.cred != nil:
		s = fmt.Sprintf("instances run each as a user of their own (uids %d-%d), staging as user %s (uid %d)",
			instanceUIDBase, instanceUIDBase+instanceUIDs-1, c.cfg.User, c.cred.Uid)
	case os.Geteuid() == 0:
		s = "instances run as root (no Config.User): they can read every file of the machine"
	default:
		s = fmt.Sprintf("instances run as this process's user (uid %d, not root): they can read its files", os.Geteuid())
	}
	if c.cfg.CopyApp {
		s += ", each in its own copy of the droplet with its own HOME and TMPDIR"
	}
	return s
}

// prepareContainer makes an instance's directory dir: with Config.CopyApp, dir/app (a
// copy of the process's Dir, its working dir and HOME) and dir/tmp (its TMPDIR), else
// dir alone as TMPDIR and the process's Dir shared. Everything is the instance user's
// and closed to others.
func (c *Cells) prepareContainer(dir, appDir string, cred *osproc.Credential) (workDir, tmpDir string, err error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return "", "", err
	}
	if err := mkdirOwned(dir, cred); err != nil {
		return "", "", err
	}
	if !c.cfg.CopyApp {
		return appDir, dir, nil
	}
	workDir, tmpDir = filepath.Join(dir, "app"), filepath.Join(dir, "tmp")
	if err := mkdirOwned(tmpDir, cred); err != nil {
		return "", "", err
	}
	if err := fstree.Copy(appDir, workDir, cred); err != nil {
		return "", "", fmt.Errorf("copy the droplet: %w", err)
	}
	return workDir, tmpDir, nil
}

func mkdirOwned(dir string, cred *osproc.Credential) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return fstree.Chown(dir, cred)
}

// The instance uid range: a uid and gid each, without a name. It lies above the
// ranges Debian and Red Hat give users (to 60000), systemd's dynamic users (61184-65519)
// and the subordinate ranges useradd hands out for rootless containers (from 100000,
// 65536 per user, so up to 6.5 million for 100 users).
const (
	instanceUIDBase = 1_900_000_000
	instanceUIDs    = 1 << 16
)

// uidPool hands out instance uids round robin, never one in use, so that a uid is
// reused as late as possible.
type uidPool struct {
	next  uint32
	inUse map[uint32]bool
}

// instanceUser is the user a new instance runs as: one of its own when instances are
// sandboxed (Config.User as root), else nil, this process's user. Give it back with
// releaseUser.
func (c *Cells) instanceUser() *osproc.Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cred == nil {
		return nil
	}
	if c.uids.inUse == nil {
		c.uids.inUse = map[uint32]bool{}
	}
	for range instanceUIDs {
		uid := instanceUIDBase + c.uids.next
		c.uids.next = (c.uids.next + 1) % instanceUIDs
		if !c.uids.inUse[uid] {
			c.uids.inUse[uid] = true
			return &osproc.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
		}
	}
	// 65,536 instances on one machine: share the staging user rather than fail.
	c.log.Warn("every instance uid is in use: this instance runs as the staging user", "user", c.cfg.User)
	return c.cred
}

func (c *Cells) releaseUser(cred *osproc.Credential) {
	if cred == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.uids.inUse, cred.Uid)
}

// An instance's record in Config.RecordDir is a file named after its process group
// holding "PGID STARTTIME": the group leader's start time (procstat), which tells it
// from a later process that got the same pid.

func (c *Cells) writeRecord(pgid int) {
	if c.cfg.RecordDir == "" {
		return
	}
	start, err := procstat.StartTime(pgid)
	if err == nil {
		err = os.WriteFile(filepath.Join(c.cfg.RecordDir, strconv.Itoa(pgid)), []byte(fmt.Sprintf("%d %d\n", pgid, start)), 0o600)
	}
	if err != nil {
		c.log.Warn("record an instance, so that a later start can stop it should this process be killed", "pid", pgid, "err", err)
	}
}

func (c *Cells) removeRecord(pgid int) {
	if c.cfg.RecordDir != "" {
		os.Remove(filepath.Join(c.cfg.RecordDir, strconv.Itoa(pgid)))
	}
}

// stopOrphans kills (SIGKILL) the process groups of the instances a run that was
// killed left behind, as recorded in Config.RecordDir, and removes the records. It
// returns how many instances still had processes. A group is killed only while it is
// provably the recorded one: its leader alive with the recorded start time, or, the
// leader gone, members that started after it (the kernel keeps a pid that names a
// live process group from being reused, so those members are the leader's children).
func (c *Cells) stopOrphans() (int, error) {
	dir := c.cfg.RecordDir
	if dir == "" {
		return 0, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("instance records: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("instance records: %w", err)
	}
	stopped := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var pgid int
		var start uint64
		if _, err := fmt.Sscanf(string(b), "%d %d", &pgid, &start); err == nil && pgid > 0 {
			if pids := orphanGroup(pgid, start); len(pids) > 0 {
				for _, pid := range pids {
					_ = osproc.Signal(pid, syscall.SIGKILL)
				}
				stopped++
				c.log.Warn("stopped an app instance a killed foundation left running", "pgid", pgid, "processes", len(pids))
			}
		}
		os.Remove(path)
	}
	return stopped, nil
}

// orphanGroup lists the live processes of the recorded group pgid whose leader
// started at start, or none when the group is gone or is not that one.
func orphanGroup(pgid int, start uint64) []int {
	if st, err := procstat.Read(pgid); err == nil && st.State != 'Z' && st.StartTime != start {
		return nil // the pid is another process's now
	}
	var pids []int
	for _, pid := range scanGroups(map[int]bool{pgid: true})[pgid].pids {
		if st, err := procstat.Read(pid); err == nil && st.State != 'Z' && st.StartTime >= start {
			pids = append(pids, pid)
		}
	}
	return pids
}
