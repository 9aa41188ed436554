//go:build unix

package main

import "syscall"

// detached starts a child in a session of its own: no terminal, no Ctrl-C from ours.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
