//go:build unix

package foundation

import (
	"syscall"
	"testing"
)

// A start gives the state dir back at once, even while a child that another goroutine
// forked still holds a copy of the lock's file (it does until it execs): a retry right
// after a failed start may start. Closing the file alone kept the lock for that child,
// which made a retry on a busy machine fail with "a foundation is already starting".
func TestStateDirLockGoesBackAtOnce(t *testing.T) {
	dir := t.TempDir()
	lock, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	child, err := syscall.Dup(int(lock.Fd())) // the copy a forked child holds
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(child)
	if err := unlockStateDir(lock); err != nil {
		t.Fatal(err)
	}
	again, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("the lock stayed with the copy of its file: %v", err)
	}
	again.Close()
}
