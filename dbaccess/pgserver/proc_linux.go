package pgserver

import "syscall"

// stopWithParent has the kernel send the server SIGINT (fast shutdown) when this
// process dies, so a crashed test run leaves no server behind.
func stopWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGINT }
