package osproc

import "syscall"

func setParentDeath(attr *syscall.SysProcAttr, sig syscall.Signal) { attr.Pdeathsig = sig }
