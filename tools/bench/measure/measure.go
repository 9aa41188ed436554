// Package measure runs one generator pinned to a core and measures what it cost: wall
// time, user + system CPU and peak RSS of its whole process tree (the rusage wait4
// returns, which includes every descendant it reaped, as GNU time reports), and the CPU
// that everything outside the measurement used meanwhile on a shared machine (foreign
// CPU: the machine's busy time from /proc/stat less the measured command's and the
// harness's own processes', so that short-lived processes count too).
package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Usage is what one run cost.
type Usage struct {
	Elapsed time.Duration
	CPU     time.Duration // user + system of the process tree
	MaxRSS  int64         // bytes, the largest resident set of any process in the tree
	Foreign Foreign       // CPU used by processes outside the harness meanwhile
	Steal   time.Duration // CPU time the hypervisor gave to other machines meanwhile
}

// Run is one command run by Runner.
type Run struct {
	Args []string
	Env  []string // added to the harness's environment
	// Core pins the command (and everything it starts) to one CPU; -1 leaves it free.
	Core  int
	Limit time.Duration // it is stopped (SIGTERM, SIGKILL 5 s later) after this long
}

// Runner runs measured commands. Ours lists the process ids whose descendants are
// the harness's own (the harness itself is always counted as its own).
type Runner struct {
	Ours []int
}

// Run runs r and returns its output and usage. A non-zero exit is an error that
// carries the end of its standard error; the usage is still returned.
func (m *Runner) Run(ctx context.Context, r Run) (stdout, stderr []byte, u Usage, err error) {
	args := r.Args
	if r.Core >= 0 {
		args = append([]string{"taskset", "-c", strconv.Itoa(r.Core)}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	before, hostBefore := Snapshot(), ReadHostCPU()
	start := time.Now()
	err = cmd.Run()
	u.Elapsed = time.Since(start)
	after, hostAfter := Snapshot(), ReadHostCPU()
	if ps := cmd.ProcessState; ps != nil {
		u.CPU = ps.UserTime() + ps.SystemTime()
		u.MaxRSS = maxRSS(ps)
	}
	u.Foreign = before.ForeignUntil(after, m.Ours)
	if hostBefore.OK && hostAfter.OK {
		// The whole machine's busy time less ours: processes that started and ended
		// during the run count too, which the per-process snapshots miss.
		busy := hostAfter.Busy - hostBefore.Busy
		u.Foreign.CPU = max(busy-u.CPU-before.OwnUntil(after, m.Ours), 0)
		u.Steal = hostAfter.Steal - hostBefore.Steal
	}
	if err != nil {
		tail := errb.Bytes()
		if len(tail) > 300 {
			tail = tail[len(tail)-300:]
		}
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("stopped after %s: %w", r.Limit, err)
		}
		err = fmt.Errorf("%s exited: %w: %s", r.Args[0], err, bytes.TrimSpace(tail))
	}
	return out.Bytes(), errb.Bytes(), u, err
}
