//go:build unix

package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// credential is the user the server runs as when the caller is root.
type credential = syscall.Credential

// supported says whether a private server can run here: on Unix it can.
func supported() error { return nil }

// alive reports whether process pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// signal sends sig to process pid; os.ErrProcessDone when there is none.
func signal(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}

// procAttr runs a program (initdb) as cred's user; nil cred: as this process's.
func procAttr(cred *credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// serverAttr runs the postmaster as cred's user in a process group of its own: a
// Ctrl-C at the terminal reaches us, not the server, so the run can still record that
// it was interrupted before we stop the server. A detached server gets a session of its
// own; an attached one is made to stop when this process dies where the OS can do that.
func serverAttr(cred *credential, detach bool) *syscall.SysProcAttr {
	if detach {
		return &syscall.SysProcAttr{Credential: cred, Setsid: true}
	}
	attr := &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	stopWithParent(attr)
	return attr
}

// runAs returns the credentials to run the server with: nil when the caller is not
// root, else those of the unprivileged user.
func runAs(name string) (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	names := []string{name}
	if name == "" {
		names = []string{"postgres", "nobody"}
	}
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, fmt.Errorf("postgres refuses to run as root and there is no user %s to run it as: create one (useradd --system %s)", strings.Join(names, " or "), names[0])
}

// traversable reports whether cred's user may pass through dir and its ancestors.
func traversable(dir string, cred *credential) bool {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st := fi.Sys().(*syscall.Stat_t)
		mode := uint32(fi.Mode().Perm())
		switch {
		case st.Uid == cred.Uid:
			mode >>= 6
		case st.Gid == cred.Gid:
			mode >>= 3
		}
		if mode&1 == 0 {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

// fileUID is the owner of fi.
func fileUID(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
