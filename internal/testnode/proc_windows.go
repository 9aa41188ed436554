package testnode

import (
	"os"
	"syscall"
)

// credential is unused on Windows, where tests do not run as root.
type credential struct {
	Uid, Gid    uint32
	NoSetGroups bool
}

func nodeAttr(*credential) *syscall.SysProcAttr { return nil }

// terminate kills process pid: Windows has no SIGTERM to send.
func terminate(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// killGroup kills process pid (its children are not in a group to kill).
func killGroup(pid int) error { return terminate(pid) }
