package cells

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// instance is one index of a process. Its goroutine (run) owns the OS process; the
// fields under "guarded by Cells.mu" are shared with the stats sampler and Instances.
type instance struct {
	c     *Cells
	spec  ProcessSpec // as desired when this instance was created; never changes
	index int
	prev  <-chan struct{} // closed when the previous instance in this slot is gone
	cell  *cell
	// entitled is the CPU, in cores, the instance is entitled to (entitledCores).
	entitled float64

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	// guarded by Cells.mu
	info       Instance
	pgid       int           // process group of the running process; 0 when none
	cg         *cgroup.Group // the running process's container; nil without isolation
	tmpDir     string        // the running process's container dir (TMPDIR, and its app copy with CopyApp)
	killReason string        // why the cell killed the running process, if it did
	lastCPU    time.Duration // CPU time at the previous sample
	lastSample time.Time     // wall clock (not Config.Clock) of the previous sample
	started    time.Time     // wall clock when the running process started
	cpuTotal   time.Duration // CPU time since started, summed from non-negative steps
	entTotal   time.Duration // entitled CPU time since started
	wait       waitCounter   // run-queue wait of its threads since started
}

// newInstance is called under Cells.mu once Start has resolved the cells.
func newInstance(c *Cells, spec ProcessSpec, index int, prev <-chan struct{}) *instance {
	cl := c.cellFor(spec.IsolationSegment)
	return &instance{
		c:        c,
		spec:     spec,
		index:    index,
		prev:     prev,
		cell:     cl,
		entitled: entitledCores(cpuShares(spec.MemoryMB), len(cl.cpus), c.memoryMB),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		info: Instance{Index: index, State: StateDown, Host: c.cfg.Host, Since: c.now(),
			Cell: cl.name, CellAddr: cl.addr},
	}
}

func (in *instance) requestStop() { in.stopOnce.Do(func() { close(in.stop) }) }

func (in *instance) stopping() bool {
	select {
	case <-in.stop:
		return true
	default:
		return false
	}
}

// run starts the instance and keeps it running until asked to stop, restarting it
// after crashes with backoff.
// errInsufficientMemory is Diego's placement error for an instance whose memory no cell
// has.
const errInsufficientMemory = "insufficient resources: memory"

func (in *instance) run() {
	c := in.c
	defer c.runners.Done()
	defer func() {
		// Stopped while crashed (in backoff) or before it ever started.
		now := c.now()
		in.setState(func(i *Instance) {
			if i.State != StateDown {
				i.State, i.Since, i.PID = StateDown, now, 0
			}
		})
		c.mu.Lock()
		key := instanceKey{in.spec.ProcessGUID, in.index}
		if c.lastDone[key] == in.done {
			delete(c.lastDone, key)
		}
		c.mu.Unlock()
		close(in.done)
	}()
	if in.prev != nil {
		select {
		case <-in.prev:
		case <-in.stop:
			return
		}
	}
	if in.spec.MemoryMB > c.memoryMB {
		// No cell has room for it, as Diego's auction finds: the instance stays
		// unplaced (DOWN, with the placement error) until it is stopped.
		now := c.now()
		in.setState(func(i *Instance) {
			*i = Instance{Index: in.index, State: StateDown, Since: now, Crashes: i.Crashes, Details: errInsufficientMemory}
		})
		c.log.Info("instance not placed", "process_guid", in.spec.ProcessGUID, "index", in.index,
			"memory_mb", in.spec.MemoryMB, "cell_memory_mb", c.memoryMB)
		<-in.stop
		return
	}
	consecutive := 0
	for !in.stopping() {
		crashed, details, ranFrom := in.runOnce()
		if !crashed {
			return
		}
		if !ranFrom.IsZero() && c.now().Sub(ranFrom) >= crashResetAfter {
			consecutive = 0
		}
		consecutive++
		delay := restartDelay(consecutive, c.cfg.RestartBackoff, c.cfg.MaxRestartBackoff)
		c.log.Info("instance crashed", "process_guid", in.spec.ProcessGUID, "index", in.index,
			"details", details, "crashes_in_a_row", consecutive, "restart_in", delay)
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-in.stop:
				t.Stop()
			}
		}
	}
}

// runOnce runs the process once. It reports whether the process crashed (as opposed
// to being stopped), why, and since when it had been RUNNING (zero if never).
func (in *instance) runOnce() (crashed bool, details string, runningSince time.Time) {
	c := in.c
	port, err := c.ports.Take(c.cfg.Host)
	if err != nil {
		return in.crash(err.Error()), err.Error(), time.Time{}
	}
	defer c.ports.Release(port)
	guid := newGUID()

	c.mu.Lock()
	tmpRoot := c.tmpRoot
	c.mu.Unlock()
	containerDir := filepath.Join(tmpRoot, in.spec.ProcessGUID, fmt.Sprintf("%d-%s", in.index, guid))
	defer os.RemoveAll(containerDir)
	// The instance's own user, as each Garden container has one; released last, once
	// its processes and files are gone.
	cred := c.instanceUser()
	defer c.releaseUser(cred)
	logw, closeLog := in.openLog(".log", cred)
	defer closeLog()
	errw, closeErr := in.openLog(".err", cred)
	defer closeErr()
	workDir, tmpDir, err := c.prepareContainer(containerDir, in.spec.Dir, cred)
	if err != nil {
		d := "failed to create container: " + err.Error()
		in.cellLog(logw, "%s", d)
		return in.crash(d), d, time.Time{}
	}

	started := c.now()
	in.setState(func(i *Instance) {
		*i = Instance{Index: in.index, GUID: guid, State: StateStarting, Host: c.cfg.Host, Port: port,
			Since: started, Started: started, Crashes: i.Crashes, Cell: in.cell.name, CellAddr: in.cell.addr}
	})
	in.cellLog(logw, "Starting instance %s", guid)

	// The container, as Garden makes one per instance: removed once the process and
	// everything it left behind in it are gone.
	var cg *cgroup.Group
	if in.cell.group != nil {
		cg = in.cell.group.Child(containerName(in.spec.ProcessGUID, in.index, guid))
		defer func() {
			if err := cg.Remove(cgroupTimeout); err != nil {
				c.log.Warn("remove instance container", "process_guid", in.spec.ProcessGUID, "index", in.index, "err", err)
			}
		}()
		if err := createContainer(cg, in.cell, in.spec.MemoryMB); err != nil {
			d := "failed to create container: " + err.Error()
			in.cellLog(logw, "%s", d)
			return in.crash(d), d, time.Time{}
		}
	}

	cmd := exec.Command("/bin/sh", "-c", in.spec.Command)
	spec := in.spec
	spec.Dir = workDir
	cmd.Dir = workDir
	cmd.Env = instanceEnv(spec, c.path, c.cfg.Host, in.cell.addr, in.index, guid, port, tmpDir)
	// Two files, as Diego streams stdout and stderr apart (OUT and ERR in cf logs).
	if f, ok := logw.(*os.File); ok {
		cmd.Stdout = f
	}
	if f, ok := errw.(*os.File); ok {
		cmd.Stderr = f
	}
	// Own process group: stop signals reach every child (npm → sh → node). The first
	// process dies with this one (see sandbox.go for the rest).
	cmd.SysProcAttr = osproc.Group(cred, syscall.SIGKILL)
	cpus := c.available // without isolation, instances share every CPU
	if cg != nil {
		cpus = in.cell.cpus
	}
	// The container's age, and its first CPU reading's interval, count from before its
	// process starts: all the CPU its counters gather comes after. Read after the
	// start, the clock missed whatever the process ran while this goroutine waited for
	// a CPU (the cells come first): 84 ms of CPU time in 32 ms of age on one core.
	began := time.Now()
	err = startPlaced(cmd, in.spec.Command, cg, cpus)
	if err != nil {
		d := "failed to start: " + err.Error()
		in.cellLog(logw, "%s", d)
		return in.crash(d), d, time.Time{}
	}
	if c.afterStart != nil {
		c.afterStart()
	}
	pid := cmd.Process.Pid
	c.writeRecord(pid)
	defer c.removeRecord(pid)
	c.mu.Lock()
	in.info.PID = pid
	in.pgid, in.cg, in.tmpDir, in.killReason = pid, cg, containerDir, ""
	in.lastCPU, in.lastSample = 0, began
	in.started, in.cpuTotal, in.entTotal, in.wait = began, 0, 0, waitCounter{}
	c.mu.Unlock()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var exitErr error
	switch res := in.awaitHealthy(port, exited); res.outcome {
	case healthStopped:
		in.terminate(pid, exited, logw)
		return false, "", time.Time{}
	case healthExited:
		exitErr = res.err
	case healthTimedOut:
		killGroup(pid, syscall.SIGKILL)
		<-exited
		d := fmt.Sprintf("instance never healthy after %s: %v", in.startTimeout(), res.err)
		in.cellLog(logw, "%s", d)
		return in.crash(d), d, time.Time{}
	case healthOK:
		runningSince = c.now()
		in.setState(func(i *Instance) { i.State, i.Since = StateRunning, runningSince })
		in.cellLog(logw, "Container became healthy")
		select {
		case exitErr = <-exited:
		case <-in.stop:
			in.terminate(pid, exited, logw)
			return false, "", runningSince
		}
	}

	// The process left while desired: a crash. Anything it left behind in its group
	// goes too, as Diego destroys the container.
	killGroup(pid, syscall.SIGKILL)
	c.mu.Lock()
	details = in.killReason
	c.mu.Unlock()
	status := exitStatus(exitErr)
	switch {
	case details == oomReason:
		details = exitDescription(in.spec.ProcessType, status, true)
	case details != "":
	case cg != nil && oomKilled(cg, exitErr):
		// As Diego reports a container the kernel killed for its memory limit.
		details = exitDescription(in.spec.ProcessType, status, true)
		in.cellLog(logw, "Out of memory: the container exceeded its %d MB limit (%s)", in.spec.MemoryMB, exitDetails(exitErr))
	default:
		details = exitDescription(in.spec.ProcessType, status, false)
	}
	in.cellLog(logw, "Exited: %s", details)
	return in.crash(details), details, runningSince
}

// crash records a crash and reports true.
// As on Diego, a crashed instance has no instance guid, host or port any more (the
// event still names the instance that crashed).
func (in *instance) crash(details string) bool {
	now := in.c.now()
	in.setState(func(i *Instance) {
		i.State, i.Since, i.Details = StateCrashed, now, details
		i.PID, i.CPU, i.CPUEntitlement, i.MemBytes, i.DiskBytes = 0, 0, 0, 0, 0
		i.GUID, i.Host, i.CellAddr, i.Port = "", "", "", 0
		i.Crashes++
	})
	return true
}

// terminate stops the process group gracefully: SIGTERM, then SIGKILL once StopGrace
// has passed with the leader or any other member still alive.
func (in *instance) terminate(pgid int, exited <-chan error, logw io.Writer) {
	c := in.c
	in.cellLog(logw, "Stopping instance")
	c.log.Info("stopping instance", "process_guid", in.spec.ProcessGUID, "index", in.index, "pid", pgid)
	killGroup(pgid, syscall.SIGTERM)
	grace := time.NewTimer(c.cfg.StopGrace)
	defer grace.Stop()
	killed := false
	select {
	case <-exited:
	case <-grace.C:
		killGroup(pgid, syscall.SIGKILL)
		killed = true
		<-exited
	}
	for !killed && groupAlive(pgid) {
		select {
		case <-grace.C:
			killGroup(pgid, syscall.SIGKILL)
			killed = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Members killed after the leader are reaped by init; give that a moment.
	for deadline := time.Now().Add(time.Second); groupAlive(pgid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if killed {
		in.cellLog(logw, "Killed after %s stop grace", c.cfg.StopGrace)
	}
	now := c.now()
	in.setState(func(i *Instance) {
		i.State, i.Since, i.PID, i.CPU, i.CPUEntitlement, i.MemBytes, i.DiskBytes = StateDown, now, 0, 0, 0, 0, 0
	})
}

type healthOutcome int

const (
	healthOK healthOutcome = iota
	healthExited
	healthStopped
	healthTimedOut
)

type healthResult struct {
	outcome healthOutcome
	err     error // the exit error, or the last failed check
}

func (in *instance) startTimeout() time.Duration {
	if t := in.spec.HealthCheck.Timeout; t > 0 {
		return t
	}
	return defaultStartTimeout
}

// awaitHealthy runs the startup health check until it passes, the process exits, a
// stop is requested or the start timeout passes.
func (in *instance) awaitHealthy(port int, exited <-chan error) healthResult {
	check := in.healthCheck(port)
	deadline := time.NewTimer(in.startTimeout())
	defer deadline.Stop()
	tick := time.NewTicker(in.c.cfg.HealthCheckInterval)
	defer tick.Stop()
	var lastErr error
	for {
		// A process that already exited is never healthy, even if something else
		// answers on its port.
		select {
		case err := <-exited:
			return healthResult{healthExited, err}
		case <-in.stop:
			return healthResult{outcome: healthStopped}
		default:
		}
		if lastErr = check(); lastErr == nil {
			return healthResult{outcome: healthOK}
		}
		select {
		case err := <-exited:
			return healthResult{healthExited, err}
		case <-in.stop:
			return healthResult{outcome: healthStopped}
		case <-deadline.C:
			return healthResult{healthTimedOut, lastErr}
		case <-tick.C:
		}
	}
}

func (in *instance) healthCheck(port int) func() error {
	addr := net.JoinHostPort(in.c.cfg.Host, strconv.Itoa(port))
	switch in.spec.HealthCheck.Type {
	case "process", "none":
		return func() error { return nil }
	case "http":
		return httpCheck(addr, in.spec.HealthCheck.Endpoint)
	}
	return func() error {
		conn, err := net.DialTimeout("tcp", addr, healthCheckAttemptTimeout)
		if err != nil {
			return fmt.Errorf("failed to make TCP connection to port %d: %w", port, err)
		}
		return conn.Close()
	}
}

// setState updates the instance's observed state and reports the change.
func (in *instance) setState(update func(*Instance)) {
	c := in.c
	c.mu.Lock()
	before, guid := in.info.State, in.info.GUID
	update(&in.info)
	if in.info.GUID != "" {
		guid = in.info.GUID
	}
	if in.info.State != StateRunning && in.info.State != StateStarting {
		in.pgid, in.cg, in.tmpDir = 0, nil, ""
	}
	info := in.info
	c.mu.Unlock()
	if info.State == before && info.State != StateStarting {
		return
	}
	c.log.Debug("instance state", "process_guid", in.spec.ProcessGUID, "index", in.index,
		"instance_guid", info.GUID, "state", info.State, "details", info.Details)
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(Event{
			ProcessGUID: in.spec.ProcessGUID, AppGUID: in.spec.AppGUID, ProcessType: in.spec.ProcessType,
			Index: in.index, InstanceGUID: guid, State: info.State, Details: info.Details,
			Crashes: info.Crashes, Time: info.Since, Cell: in.cell.name,
		})
	}
}

// openLog opens LogDir/<process guid>/<index><suffix> for appending: ".log" for the
// instance's stdout and the cell's lines, ".err" for its stderr. Without a LogDir the
// output is discarded.
func (in *instance) openLog(suffix string, cred *osproc.Credential) (io.Writer, func()) {
	if in.c.cfg.LogDir == "" {
		return io.Discard, func() {}
	}
	dir := filepath.Join(in.c.cfg.LogDir, in.spec.ProcessGUID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		in.c.log.Warn("create instance log dir", "dir", dir, "err", err)
		return io.Discard, func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(in.index)+suffix), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		in.c.log.Warn("open instance log", "dir", dir, "err", err)
		return io.Discard, func() {}
	}
	// The instance's user owns its output, so that it may open /dev/stdout and
	// /dev/stderr (as nginx and many log configurations do), which re-open these files;
	// their directory stays closed to it.
	if cred != nil {
		if err := f.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			in.c.log.Warn("give an instance its log file", "dir", dir, "err", err)
		}
	}
	return f, func() { f.Close() }
}

// cellLog writes a line like the [CELL/0] lines of `cf logs` into the instance log.
func (in *instance) cellLog(w io.Writer, format string, args ...any) {
	if w == io.Discard {
		return
	}
	fmt.Fprintf(w, "[CELL/%d] %s %s\n", in.index, in.c.now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// exitStatus is the status of a process's exit as a shell reports it: 128 + the
// signal for a process killed by one.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func exitDetails(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("exited on signal %d (%s)", ws.Signal(), ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return "exited: " + err.Error()
	}
	return "exited with status 0"
}

func killGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = osproc.SignalGroup(pgid, sig)
	}
}

func newGUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
