package testnode

import "syscall"

// dieWithParent has the kernel send the node SIGTERM when this process dies.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
