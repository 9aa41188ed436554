//go:build unix && !linux

package testnode

import "syscall"

// dieWithParent does nothing: only Linux stops a child when its parent dies.
func dieWithParent(*syscall.SysProcAttr) {}
