package osproc

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// Credential is the user and groups a child process runs as; Windows starts children
// as this process's user only, so Group ignores it.
type Credential struct {
	Uid, Gid    uint32
	Groups      []uint32
	NoSetGroups bool
}

// Signal kills process pid for SIGKILL, and checks that it exists for 0; Windows has
// no other signals to send to another process.
func Signal(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, syscall.ESRCH)
	}
	defer p.Release()
	switch sig {
	case 0:
		return nil
	case syscall.SIGKILL:
		return p.Kill()
	}
	return fmt.Errorf("send %v to process %d: %w", sig, pid, errors.ErrUnsupported)
}

// SignalGroup is unsupported: Windows has no process groups to signal.
func SignalGroup(pgid int, sig syscall.Signal) error {
	return fmt.Errorf("send %v to process group %d: %w", sig, pgid, errors.ErrUnsupported)
}

// Group starts a child in a process group of its own; Windows has no user switch for
// it and no signal on the parent's death.
func Group(*Credential, syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// DieWithParent is nil: Windows does not signal a child when its parent dies.
func DieWithParent(syscall.Signal) *syscall.SysProcAttr { return nil }

// LockFile takes an exclusive lock on f without waiting (LockFileEx), held until f is
// closed; ErrLocked when another process holds it.
func LockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrLocked
	}
	return err
}

// UnlockFile releases LockFile's lock at once.
func UnlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// NoFollow is 0: Windows' open has no such flag.
const NoFollow = 0
