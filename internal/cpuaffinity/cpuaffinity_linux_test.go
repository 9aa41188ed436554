package cpuaffinity

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// threadsOff returns the threads of pid not on cpus.
func threadsOff(t *testing.T, pid int, cpus []int) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var off []string
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		got, err := Of(tid)
		if err == nil && !slices.Equal(got, cpus) {
			off = append(off, fmt.Sprintf("thread %s on %v", e.Name(), got))
		}
	}
	return off
}

// TestPinMovesEveryThreadAndBack pins this process, busy making threads, to one CPU and
// back: every thread ends up where it was put, and a child started meanwhile inherits it.
func TestPinMovesEveryThreadAndBack(t *testing.T) {
	all, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	one := all[len(all)-1:]
	// Threads blocked in syscalls make the runtime start more meanwhile.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	if err := Pin(os.Getpid(), one); err != nil {
		t.Fatal(err)
	}
	if off := threadsOff(t, os.Getpid(), one); len(off) > 0 {
		t.Errorf("threads not on CPU %v after Pin: %v", one, off)
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	if got, _ := Of(child.Process.Pid); !slices.Equal(got, one) {
		t.Errorf("a child started while pinned runs on %v, want %v", got, one)
	}
	if err := Pin(os.Getpid(), all); err != nil {
		t.Fatal(err)
	}
	if off := threadsOff(t, os.Getpid(), all); len(off) > 0 {
		t.Errorf("threads not back on CPUs %v: %v", all, off)
	}
}

// TestPinWithChildrenPinsAForkingServer pins a shell and the sleeps it forked.
func TestPinWithChildrenPinsAForkingServer(t *testing.T) {
	all, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	one := all[:1]
	sh := exec.Command("sh", "-c", "sleep 30 & sleep 30 & echo started; wait")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sh.Process.Kill(); sh.Wait() }()
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := PinWithChildren(sh.Process.Pid, one); err != nil {
		t.Fatal(err)
	}
	var children []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if f[1] == strconv.Itoa(sh.Process.Pid) {
				children = append(children, pid)
			}
		}
	}
	defer func() {
		for _, pid := range children {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if len(children) != 2 {
		t.Fatalf("the shell has %d children, want its 2 sleeps", len(children))
	}
	for _, pid := range append(children, sh.Process.Pid) {
		if got, _ := Of(pid); !slices.Equal(got, one) {
			t.Errorf("process %d runs on %v, want %v", pid, got, one)
		}
	}
}

func TestPinRefusesNoCPU(t *testing.T) {
	if err := Pin(os.Getpid(), nil); err == nil {
		t.Error("pinned to no CPU")
	}
	if err := Pin(os.Getpid(), []int{-1}); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("CPU -1: %v", err)
	}
}

// TestPinToCPUsNotOnline pins to a list with CPUs this machine lacks: the kernel keeps
// those that are online, and Pin does not take the difference for threads it missed.
func TestPinToCPUsNotOnline(t *testing.T) {
	all, err := Of(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	if err := Pin(sleeper.Process.Pid, append(slices.Clone(all), 1000)); err != nil {
		t.Fatal(err)
	}
	if got, _ := Of(sleeper.Process.Pid); !slices.Equal(got, all) {
		t.Errorf("runs on %v, want %v", got, all)
	}
}
