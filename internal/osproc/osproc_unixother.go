//go:build unix && !linux

package osproc

import "syscall"

// setParentDeath does nothing: only Linux signals a child when its parent dies.
func setParentDeath(*syscall.SysProcAttr, syscall.Signal) {}
