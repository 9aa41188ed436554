//go:build unix

package osproc

import (
	"errors"
	"os"
	"syscall"
)

// Credential is the user and groups a child process runs as.
type Credential = syscall.Credential

// Signal sends sig to process pid (0: only checks that it exists); an error wrapping
// syscall.ESRCH when there is none.
func Signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// SignalGroup sends sig to every process of the process group pgid.
func SignalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// Group returns the attributes that start a child in a process group of its own, as
// cred's user (nil: this process's), and, where the OS can (Linux), have it sent
// onParentDeath when this process dies (0: nothing).
func Group(cred *Credential, onParentDeath syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	setParentDeath(attr, onParentDeath)
	return attr
}

// DieWithParent returns the attributes that have a child sent sig when this process
// dies, where the OS can (Linux); elsewhere nil.
func DieWithParent(sig syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	setParentDeath(attr, sig)
	return attr
}

// LockFile takes an exclusive lock on f without waiting (flock(2)), held until f is
// closed; ErrLocked when another process holds it.
func LockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// UnlockFile releases LockFile's lock at once. Closing f alone may not: a child
// forked by another goroutine holds a copy of f until it execs, and with it the lock.
func UnlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// NoFollow is the open flag that refuses to open a symbolic link (O_NOFOLLOW).
const NoFollow = syscall.O_NOFOLLOW
