package osproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLockFile: a second lock on the same file, through another open file, is refused
// with ErrLocked while the first is held, and taken once the first file is closed.
//
// Not in parallel: a flock belongs to the open file, and a child forked meanwhile
// (TestSignal starts one) holds a copy of every descriptor until it execs, so the
// first file's lock can outlive its Close by that long (1 run in 10 failed so).
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := open()
	if err := LockFile(first); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	second := open()
	defer second.Close()
	if err := LockFile(second); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock while the first is held: %v, want ErrLocked", err)
	}
	first.Close()
	if err := LockFile(second); err != nil {
		t.Fatalf("second lock after the first file closed: %v", err)
	}
}

// TestSignal: signal 0 finds this process; a child that has exited and been reaped is
// gone, and SIGKILL stops a running one.
func TestSignal(t *testing.T) {
	t.Parallel()
	if err := Signal(os.Getpid(), 0); err != nil {
		t.Fatalf("Signal(self, 0): %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary itself, told to run a test that waits for stdin: it runs until killed.
	cmd := exec.Command(exe, "-test.run=^TestHelperWaitsForStdin$")
	cmd.Env = append(os.Environ(), "OSPROC_HELPER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := Signal(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(child, SIGKILL): %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed child exited cleanly")
	}
	if err := Signal(pid, 0); err == nil {
		t.Errorf("Signal(reaped child %d, 0) found it", pid)
	}
}

func TestHelperWaitsForStdin(t *testing.T) {
	if os.Getenv("OSPROC_HELPER") != "1" {
		t.Skip("a helper process for TestSignal")
	}
	var b [1]byte
	os.Stdin.Read(b[:])
}
