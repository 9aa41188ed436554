//go:build unix && !linux

package pgserver

import "syscall"

// stopWithParent does nothing: only Linux stops a child when its parent dies. A server
// left behind by a crashed owner is found by the next Start on its state directory and
// reused.
func stopWithParent(*syscall.SysProcAttr) {}
