//go:build unix

package testnode

import "syscall"

// credential is the user a node runs as when the tests run as root.
type credential = syscall.Credential

// nodeAttr runs a node as cred's user (nil: this process's) in a process group of its
// own, stopped with this process where the OS can (dieWithParent).
func nodeAttr(cred *credential) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	dieWithParent(attr)
	return attr
}

// terminate asks process pid to stop (SIGTERM).
func terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

// killGroup kills the process group that process pid leads (SIGKILL).
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
