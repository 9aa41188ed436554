//go:build linux && race

package loadgen

import "syscall"

// raceAcquireIO tells the race detector that what the loop just read from fd (with a
// raw recvmsg) was written after whatever the writer did before: a read of nothing
// through syscall.Read, which says so as Go's own network I/O does.
func raceAcquireIO(fd int) {
	var none []byte
	syscall.Read(fd, none)
}
