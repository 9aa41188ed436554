// Package cells runs app instances as local processes for the local foundation, the
// way Diego cells run containers: it converges each process to its desired instance
// count, health-checks new instances, restarts crashed ones with Diego's backoff,
// stops them with SIGTERM then SIGKILL, and samples CPU, memory and disk.
//
// An instance is a process group started with /bin/sh -c in the droplet's app
// directory. Each isolation segment is a cell with its own CPUs (Config.Cells). Where
// cgroups are writable (v1 or v2, see package cgroup), a cell is a cpuset and each
// instance runs in its own cgroup below it, like a Garden container: its memory limit
// is enforced (exceeding it is an OOM kill and a crash, "… (out of memory)"), its CPU
// shares are proportional to its memory, and its stats come from the cgroup's
// counters. Elsewhere instances run unconfined, stats come from /proc, and
// Isolation says why; Config.EnforceMemory then kills an instance whose sampled RSS
// exceeds its limit.
//
// Config.User, CopyApp and RecordDir give instances what else a container gives them:
// their own unprivileged user, their own copy of the droplet and TMPDIR, and no life
// beyond the cell's (see sandbox.go for what remains).
package cells

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

// Instance states, named as Cloud Controller's process stats name them.
const (
	StateStarting = "STARTING"
	StateRunning  = "RUNNING"
	StateCrashed  = "CRASHED"
	StateDown     = "DOWN"
)

// Defaults, chosen to match Diego where it has one.
const (
	defaultHost               = "127.0.0.1"
	defaultStopGrace          = 10 * time.Second
	defaultStatsInterval      = 15 * time.Second
	defaultRestartBackoff     = 2 * time.Second
	defaultMaxRestartBackoff  = 30 * time.Second
	defaultHealthInterval     = 500 * time.Millisecond
	defaultStartTimeout       = 60 * time.Second
	healthCheckAttemptTimeout = time.Second
	// immediateRestarts crashes in a row restart at once, as on Diego (its restart
	// calculator's 3 immediate restarts count the first start: crashes 1 and 2).
	immediateRestarts = 2
	// crashResetAfter of running forgives earlier crashes, as on Diego.
	crashResetAfter = 5 * time.Minute
)

// HealthCheck says when a starting instance counts as RUNNING.
type HealthCheck struct {
	Type     string        // "port" (default), "process" (or "none"), "http"
	Endpoint string        // http path, default "/"
	Timeout  time.Duration // startup, default 60s
}

// ProcessSpec is the desired state of one app process.
type ProcessSpec struct {
	ProcessGUID, AppGUID, AppName, ProcessType string
	Dir                                        string            // working dir (the droplet's app dir)
	Command                                    string            // run with /bin/sh -c
	Env                                        map[string]string // app env incl. VCAP_APPLICATION, VCAP_SERVICES; the cell adds per-instance vars
	Instances                                  int
	MemoryMB, DiskMB                           int
	HealthCheck                                HealthCheck
	// IsolationSegment picks the cell (Config.Cells) by name; "" (the shared
	// segment) or a name no cell has picks the first.
	IsolationSegment string
}

// Config configures Cells. Zero values take the defaults in the field comments.
type Config struct {
	Host      string        // address instances listen on / report, default 127.0.0.1
	LogDir    string        // per-instance output, appended: LogDir/<process guid>/<index>.log (stdout and the cell's [CELL/N] lines) and <index>.err (stderr); "" discards it
	StopGrace time.Duration // SIGTERM → wait → SIGKILL, default 10s
	// StatsInterval is how often CPU, memory and disk are sampled, default 15s (Diego's
	// metrics interval).
	StatsInterval time.Duration
	// RestartBackoff is the wait before the 3rd crash in a row is restarted (the first
	// two restart at once); it doubles per crash up to MaxRestartBackoff. Defaults 2s
	// and 30s (Diego waits 30s doubling to 16m; this is shorter so benchmarks recover).
	RestartBackoff, MaxRestartBackoff time.Duration
	// HealthCheckInterval is the pause between startup health checks, default 500ms.
	HealthCheckInterval time.Duration
	// EnforceMemory kills an instance whose sampled RSS exceeds its MemoryMB, a crash
	// reported as an OOM kill. Sampling is coarse, unlike a cgroup, so it
	// applies only without cgroup isolation; with it the kernel enforces the limit.
	EnforceMemory bool
	// Name names the cgroup root, cfbench-<Name> (letters, digits, '-', '_'); default
	// "cells". A second Cells of the same name on the machine gets cfbench-<Name>.1.
	// Start removes what a crashed earlier run of the same name left behind.
	Name string
	// Cells are the isolation segments, each a cell with its own CPUs, e.g.
	// {{"apps", []int{0}}, {"loadgen", []int{1}}}. Default: one shared cell "" with
	// every CPU. Start fails if a cell names a CPU this machine does not offer.
	Cells []Cell
	// NoIsolation runs instances without cgroups even where they are usable.
	NoIsolation bool
	// First puts the cells before every process outside them on the CPUs they share
	// (their cgroup root at the kernel's highest CPU weight): for a platform given CPUs
	// of its own beside some of the cells, as on Cloud Foundry the platform's machines
	// never keep a cell's processes waiting. Left off, the cells weigh what one process
	// does; with it on and no CPUs of its own, the platform would get next to nothing
	// wherever the cells are busy.
	First bool
	// CellMemoryMB is each cell's memory capacity, over which Garden spreads a cell's
	// CPU to compute CPU entitlement; default the machine's total memory.
	CellMemoryMB int
	// TmpDir holds each instance's directory (its TMPDIR, and with CopyApp its copy of
	// the app); default a new directory under the system temp dir, removed by Close.
	// With User, its ancestors must let that user through.
	TmpDir string
	// User is the user instances run as when this process runs as root: a dedicated
	// unprivileged one keeps them out of the files of the process that runs them.
	// Start creates it (useradd --system) when it does not exist. Ignored when not
	// root; "" runs instances as this process's user. Sandbox says which applies.
	User string
	// CopyApp gives each instance its own writable copy of its spec's Dir as working
	// dir and HOME, as Diego extracts the droplet into each container; else instances
	// share Dir.
	CopyApp bool
	// RecordDir, when set, keeps a record of each running instance's process group, so
	// that a Start after this process was killed stops the instances it left running
	// (Orphans). It must be closed to the instances' user.
	RecordDir string
	// Path is the PATH instances get unless their spec's Env sets one; default this
	// process's PATH, since apps run with the machine's java and node.
	Path   string
	Logger *slog.Logger
	Clock  func() time.Time
	// OnMetrics, if set, receives the container metrics of every instance with a live
	// process after each sample (every StatsInterval), as Diego's rep emits them to
	// Loggregator; an instance whose program has not begun (no memory charged yet)
	// has no reading until it has. It is called from the sampler goroutine, never under a lock, and
	// must not block for long.
	OnMetrics func([]ContainerMetrics)
	// OnEvent, if set, is called on every instance state change, in order per
	// instance, from that instance's goroutine and never under a lock. It must not
	// block for long. Cloud Controller can turn CRASHED into audit.app.process.crash.
	OnEvent func(Event)
}

// Event is one instance state change.
type Event struct {
	ProcessGUID, AppGUID, ProcessType string
	Index                             int
	// InstanceGUID is the instance's guid; a CRASHED event names the instance that
	// crashed, though the crash clears the instance's guid.
	InstanceGUID string
	State        string
	Details      string
	Crashes      int
	Time         time.Time
	// Cell is the instance's cell (isolation segment), Diego's cell_id.
	Cell string
}

// ContainerMetrics is one instance's usage at one sample, with the cumulative counters
// Garden keeps for a container: CPU time used, CPU time it was entitled to, and its
// age. A step's CPU is then exact from two readings: ΔCPUTime / Δwall.
type ContainerMetrics struct {
	ProcessGUID, AppGUID, AppName, ProcessType string
	Index                                      int
	InstanceGUID                               string
	// Time is when the sample was taken (wall clock, whatever Config.Clock says).
	Time time.Time
	// CPU is the fraction of one core used since the previous sample, and
	// CPUEntitlement that CPU over the instance's entitled cores (Instance's).
	CPU, CPUEntitlement float64
	// CPUTime is the CPU time the instance used since it started; it never decreases.
	CPUTime time.Duration
	// Entitlement is the CPU time the instance was entitled to since it started: its
	// entitled cores (Instance.CPUEntitlement) times its age.
	Entitlement time.Duration
	// Age is how long the instance's process has existed.
	Age time.Duration
	// CPUWait is how long the instance's threads, since it started, were ready to run
	// but waited for a CPU (run-queue wait, from the kernel's per-thread schedstat):
	// what its cell's neighbours and the host took from it. It never decreases; nil
	// where the kernel keeps no such counters. Garden has no such figure.
	CPUWait                       *time.Duration
	MemBytes, DiskBytes           uint64
	MemQuotaBytes, DiskQuotaBytes uint64
	// Cell is the instance's cell (isolation segment).
	Cell string
	// Counters says where CPUTime comes from: "cgroup" (the container's cpu.stat or
	// cpuacct.usage: everything that ran in it) or, without isolation, "proc" (the
	// process group's utime and stime: CPU of a child that exits and is reaped outside
	// the group is lost).
	Counters string
}

// Instance is the observed state of one app instance.
type Instance struct {
	Index   int
	GUID    string    // new per (re)start
	State   string    // "STARTING", "RUNNING", "CRASHED", "DOWN" (as CC stats)
	Host    string    // Config.Host
	Port    int       // the PORT it was given
	PID     int       // of the process group leader; 0 when not running
	Since   time.Time // when it entered State
	Started time.Time // when the current process started (uptime = now - Started)
	CPU     float64   // fraction of one core, averaged since the previous sample
	// MemBytes is what the instance's cgroup is charged for less inactive page cache,
	// as Garden reports it (see cgroup.Usage), or without isolation the summed RSS of
	// its process group; DiskBytes the size of its directory: its TMPDIR and, with
	// Config.CopyApp, its copy of the droplet (as Garden counts the droplet extracted
	// into each container), else not the shared droplet.
	MemBytes, DiskBytes uint64
	Details             string // e.g. the crash's "APP/PROC/WEB: Exited with status 1" (see exitDescription)
	Crashes             int    // crashes of this instance since it was desired (restarts for a changed spec start at 0)
	// CPUEntitlement is the CPU used over the CPU the instance is entitled to, since
	// the previous sample: Diego's cpu_entitlement, which Cloud Controller reports as
	// usage.cpu_entitlement (its percentage / 100). 1.0 is exactly the entitlement;
	// above it the instance lives on spare CPU it loses under contention. The
	// entitlement is Garden's: memory limit / Config.CellMemoryMB × the cell's CPUs.
	CPUEntitlement float64
	// Cell is the instance's cell (isolation segment) and CellAddr that cell's stable
	// address, 127.0.1.N for the Nth cell, to report as the stats' host; instances
	// are reached on Host whatever their cell.
	Cell, CellAddr string
}

// Cells runs app instances. It follows the lifecycle of package lifecycle: Close and the
// end of Start's context both stop every instance gracefully (SIGTERM, StopGrace,
// SIGKILL). A crashed instance is restarted, never the end of Cells. Its methods may be
// called concurrently.
type Cells struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	path string

	mu       sync.Mutex
	cells    []*cell // Config.Cells resolved; CPUs and groups are filled in by Start
	memoryMB int     // a cell's memory capacity, for CPU entitlement
	procs    map[string]*process
	ports    *freeport.Pool                // the instances' ports
	lastDone map[instanceKey]chan struct{} // newest instance per slot, so a replacement waits for it
	tmpRoot  string
	ownTmp   bool
	cred     *osproc.Credential // whom staging runs as; nil: this process's user
	uids     uidPool            // with cred, each running instance's own user
	orphans  int                // instances of a killed earlier run that Start stopped
	started  bool
	closed   bool
	// evacuating says evacuateLoop runs.
	evacuating bool

	isolated  bool
	isolation string       // Isolation's reason
	root      *cgroup.Root // nil without isolation
	// cpusAvailable, if set by a test, stands in for the machine's CPUs.
	cpusAvailable func() ([]int, error)
	available     []int // the CPUs Start found available
	// afterStart, if set by a test, runs between an instance's start and its
	// bookkeeping, as a starter that waits for a CPU does.
	afterStart func()

	runners sync.WaitGroup // instance goroutines
	bg      sync.WaitGroup // stats sampler
	quit    chan struct{}  // closed when shutting down
	life    lifecycle.State
}

var _ lifecycle.Part = (*Cells)(nil)

type process struct {
	spec  ProcessSpec
	insts map[int]*instance
	// surge holds the instances a roll started beside those of insts they are to
	// replace; they join insts once RUNNING (see Roll).
	surge map[int]*instance
	roll  *Rollout // the roll under way, if any
	// evac holds the evacuations under way by index (see Evacuate).
	evac map[int]*evacuation
}

type instanceKey struct {
	guid  string
	index int
}

// New returns Cells that start instances once Start is called.
func New(cfg Config) *Cells {
	if cfg.Host == "" {
		cfg.Host = defaultHost
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = defaultStopGrace
	}
	if cfg.StatsInterval <= 0 {
		cfg.StatsInterval = defaultStatsInterval
	}
	if cfg.RestartBackoff <= 0 {
		cfg.RestartBackoff = defaultRestartBackoff
	}
	if cfg.MaxRestartBackoff <= 0 {
		cfg.MaxRestartBackoff = defaultMaxRestartBackoff
	}
	if cfg.MaxRestartBackoff < cfg.RestartBackoff {
		cfg.MaxRestartBackoff = cfg.RestartBackoff
	}
	if cfg.HealthCheckInterval <= 0 {
		cfg.HealthCheckInterval = defaultHealthInterval
	}
	if cfg.Name == "" {
		cfg.Name = defaultName
	}
	cfg.Cells = slices.Clone(cfg.Cells)
	c := &Cells{
		cfg:       cfg,
		log:       cfg.Logger,
		now:       cfg.Clock,
		path:      cfg.Path,
		cells:     newCells(cfg.Cells),
		memoryMB:  cfg.CellMemoryMB,
		isolation: "not started",
		procs:     map[string]*process{},
		ports:     freeport.NewPool(),
		lastDone:  map[instanceKey]chan struct{}{},
		quit:      make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.path == "" {
		c.path = os.Getenv("PATH") // see Config.Path
	}
	if c.path == "" {
		c.path = "/usr/local/bin:/usr/bin:/bin"
	}
	if c.memoryMB <= 0 {
		c.memoryMB = machineMemoryMB()
	}
	return c
}

// Start sets up the cells (and their cgroups where usable, see Isolation), then
// launches the desired instances and the supervisor that samples stats; crash
// restarts run in each instance's goroutine. When ctx ends, everything is stopped as
// by Close. It fails on a configuration the machine cannot honour, such as a cell
// with a CPU it does not have, and when Cells were started or closed before.
func (c *Cells) Start(ctx context.Context) error {
	if err := c.life.Begin(); err != nil {
		return fmt.Errorf("cells: %w", err)
	}
	if err := c.start(); err != nil {
		c.life.Stopped(err)
		return err
	}
	stopping := c.life.Stopping()
	go func() {
		select {
		case <-ctx.Done():
		case <-stopping:
		}
		c.life.Stopped(c.shutdown())
	}()
	return nil
}

func (c *Cells) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cred, err := sandboxUser(c.cfg.User)
	if err != nil {
		return fmt.Errorf("cells: %w", err)
	}
	c.cred = cred
	// Before the cgroups: their clean-up would kill the orphans uncounted.
	if c.orphans, err = c.stopOrphans(); err != nil {
		return fmt.Errorf("cells: %w", err)
	}
	if err := c.setupIsolation(); err != nil {
		return fmt.Errorf("cells: %w", err)
	}
	c.tmpRoot = c.cfg.TmpDir
	if c.tmpRoot == "" {
		dir, err := os.MkdirTemp("", "cells-")
		if err != nil {
			c.abandonIsolationLocked()
			return fmt.Errorf("create instance tmp root: %w", err)
		}
		c.tmpRoot, c.ownTmp = dir, true
	} else if err := os.MkdirAll(c.tmpRoot, 0o755); err != nil {
		c.abandonIsolationLocked()
		return fmt.Errorf("create instance tmp root: %w", err)
	}
	// Instances pass through to their own directories, but may not list the others.
	if err := os.Chmod(c.tmpRoot, 0o711); err != nil {
		c.abandonIsolationLocked()
		return fmt.Errorf("instance tmp root: %w", err)
	}
	c.started = true
	if !c.closed { // else a Close came during Start: the supervisor stops at once
		for _, p := range c.procs {
			c.convergeLocked(p)
		}
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		c.sampleLoop()
	}()
	return nil
}

// Orphans is how many instances that a killed earlier run left running (see
// Config.RecordDir) Start stopped.
func (c *Cells) Orphans() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.orphans
}

// Instances reports the desired instances of a process, sorted by index; empty when
// the process is unknown. Before Start every desired index is DOWN.
func (c *Cells) Instances(processGUID string) []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.procs[processGUID]
	if !ok {
		return []Instance{}
	}
	if !c.started || c.closed {
		cl := c.cellFor(p.spec.IsolationSegment)
		out := make([]Instance, p.spec.Instances)
		for i := range out {
			out[i] = Instance{Index: i, State: StateDown, Host: c.cfg.Host, Cell: cl.name, CellAddr: cl.addr}
		}
		return out
	}
	out := make([]Instance, 0, len(p.insts))
	for _, i := range slices.Sorted(maps.Keys(p.insts)) {
		// An index being evacuated shows its replacement, as Diego's does.
		if ev := p.evac[i]; ev != nil {
			out = append(out, ev.repl.info)
			continue
		}
		out = append(out, p.insts[i].info)
	}
	return out
}

// Close stops every instance gracefully and in parallel, waits for them, removes the
// cgroups and the tmp root it created. It is safe to call more than once; each call
// returns the error of removing the cgroups, if any.
func (c *Cells) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return c.life.Close()
}

// Wait blocks until Cells have shut down (Close, or the end of Start's context) and
// returns the error of removing the cgroups, if any.
func (c *Cells) Wait() error { return c.life.Wait() }

// Run is Start followed by Wait.
func (c *Cells) Run(ctx context.Context) error { return lifecycle.Run(ctx, c) }

// shutdown stops every instance and removes what Start set up.
func (c *Cells) shutdown() error {
	c.mu.Lock()
	c.closed = true
	for _, p := range c.procs {
		p.endRoll(ErrClosed)
		p.forgetEvacuations()
		for _, in := range p.insts {
			in.requestStop()
		}
	}
	close(c.quit)
	c.mu.Unlock()

	c.runners.Wait()
	c.bg.Wait()
	err := c.teardownIsolation()
	if c.ownTmp {
		if err := os.RemoveAll(c.tmpRoot); err != nil {
			c.log.Warn("remove instance tmp root", "dir", c.tmpRoot, "err", err)
		}
	}
	return err
}

// restartDelay is Diego's crash backoff with a configurable base and cap: the first
// two crashes in a row restart at once, then base, 2×base, … up to max.
func restartDelay(consecutive int, base, maxDelay time.Duration) time.Duration {
	if consecutive <= immediateRestarts {
		return 0
	}
	d := base
	for i := immediateRestarts + 1; i < consecutive && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}
