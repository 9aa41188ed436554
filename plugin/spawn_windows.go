package main

import "syscall"

// detached starts a child without a console and in a process group of its own, so a
// Ctrl-C in ours does not reach it.
func detached() *syscall.SysProcAttr {
	const detachedProcess = 0x00000008 // DETACHED_PROCESS
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | detachedProcess}
}
