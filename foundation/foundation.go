// Package foundation is the local foundation: a Cloud Foundry on one machine. It wires
// the Cloud Controller API (cc) to staging and cells that run apps as processes, a
// router that writes gorouter access logs, and a postgres service offering on a private
// Postgres server. Everything lives in one state directory and comes back as it was
// after a restart, on the same ports, so `cf api` and bound credentials stay valid.
package foundation

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
	"github.com/cf-benchmark/cf-benchmark/foundation/pgbroker"
	"github.com/cf-benchmark/cf-benchmark/foundation/router"
	"github.com/cf-benchmark/cf-benchmark/foundation/syslogagent"
	"github.com/cf-benchmark/cf-benchmark/internal/cpuaffinity"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Config configures a foundation.
type Config struct {
	// StateDir holds everything: settings, the API's state, packages, droplets,
	// instance logs, the access log and the services' Postgres.
	StateDir string
	// Cells are the cells, one per isolation segment, each with its own CPUs; a fresh
	// foundation creates a segment (and a space) for each. Default: DefaultCells.
	Cells []cells.Cell
	// DefaultAppMemoryMB is the memory of an app pushed without one (CC's
	// default_app_memory, 1024 when 0).
	DefaultAppMemoryMB int
	// StatsInterval is how often instance usage is sampled (default 15 s, as Diego).
	StatsInterval time.Duration
	// StopGrace is SIGTERM to SIGKILL for instances (default 10 s, as Diego).
	StopGrace time.Duration
	// RouterDrainWait is how long a restarted router keeps serving before it closes
	// its listener (RestartRouter; default 20 s, gorouter's drain_wait).
	RouterDrainWait time.Duration
	// ESURL, when set, ships every router access-log line to this Elasticsearch in the
	// shape CF's Logstash pipeline produces, at most LogQuota lines per LogQuotaWindow
	// (0: no quota), as hosted logging caps them. With a quota and no ESURL, the lines
	// the quota admits go to a log store file instead (LogStoreFile, Info.LogStore).
	// ESIndex is the shipper's index name (default logship.DefaultIndex, logs-app-
	// daily indices as logsearch-for-cloudfoundry names them).
	ESURL          string
	ESIndex        string
	LogQuota       int
	LogQuotaWindow time.Duration
	// PlatformCPUs are the CPUs the foundation's own work runs on: this process (the
	// API, the router, log shipping, staging) and the services' Postgres, as a Cloud
	// Foundry's routers and service VMs are not its cells. Empty leaves them wherever
	// the kernel puts them, the apps' cells included, where they take CPU from the
	// apps under test. AppsFreeCPUs is the usual choice. This process's own CPUs are
	// given back when the foundation stops.
	PlatformCPUs []int
	// Throwaway says the foundation lives for one test or one suite run, in a fresh
	// state dir: its services' Postgres is a copy of a template cluster without crash
	// safety (pgserver.Options.Fast) instead of an initdb of its own with a password of
	// its own (1.3 CPU-s and seconds at each first start; tests start dozens).
	Throwaway bool
	// AccessTokenTTL and RefreshTokenTTL are the lifetimes of the tokens the API's UAA
	// endpoint issues; 0: 20 min and 30 days, as cf-deployment's cf client. Like the
	// rest of Config they hold for this start only (Settings are what is kept).
	AccessTokenTTL, RefreshTokenTTL time.Duration
	// RateLimit turns on CC's rate limiter (cc.rate_limiter): at most RateLimit
	// requests per user per RateLimitInterval (default 1 h); 0, the default, is off,
	// as in CC. CC exempts admins, the foundation's one user among them, unless
	// RateLimitAdmins.
	RateLimit         int
	RateLimitInterval time.Duration
	RateLimitAdmins   bool
	Logger            *slog.Logger
}

// AppsFreeCPUs are the CPUs of no cell of segment "apps" (where DefaultCells puts the
// apps under test) of the given cells, DefaultCells(cpus) when there are none; nil
// when no CPU is left (one CPU, or cells covering them all).
func AppsFreeCPUs(cl []cells.Cell, cpus int) []int {
	if len(cl) == 0 {
		cl = DefaultCells(cpus)
	}
	apps := map[int]bool{}
	for _, c := range cl {
		if c.Name == "apps" {
			for _, cpu := range c.CPUs {
				apps[cpu] = true
			}
		}
	}
	var free []int
	for cpu := range cpus {
		if !apps[cpu] {
			free = append(free, cpu)
		}
	}
	return free
}

// DefaultCells splits the machine's CPUs between a cell for the apps under test and one
// for load generators (apps on CPU 0, generators on CPU 1 on a 2-core machine). With one
// CPU both cells share it.
func DefaultCells(cpus int) []cells.Cell {
	apps, load := []int{}, []int{}
	for c := 0; c < cpus; c++ {
		if c < max(1, cpus/2) {
			apps = append(apps, c)
		} else {
			load = append(load, c)
		}
	}
	if len(load) == 0 {
		load = apps
	}
	return []cells.Cell{{Name: "apps", CPUs: apps}, {Name: "loadgen", CPUs: load}}
}

// Settings are chosen on first start and kept in StateDir/foundation.json.
type Settings struct {
	APIPort    int `json:"api_port"`
	RouterPort int `json:"router_port"`
	// PostgresPort stays fixed: bound apps' credentials carry it.
	PostgresPort int    `json:"postgres_port"`
	User         string `json:"user"`
	Password     string `json:"password"`
	Secret       string `json:"secret"`
	AppsDomain   string `json:"apps_domain"`
}

// Info is what a user needs to reach a running foundation.
type Info struct {
	APIURL, RouterAddr, AppsDomain string
	User, Password                 string
	StateDir, AccessLog            string
	// LogStore is the log store file under quota (Config.LogQuota without ESURL), ""
	// when there is none.
	LogStore string
	// Isolation says how instances are isolated (cgroups and CPU sets per cell), or
	// why they are not.
	Isolation string
}

// Foundation is a local foundation. It follows the lifecycle of package lifecycle: its
// parts run in one lifecycle.Group (parts), started in order — the state directory and
// the API's port, the services' Postgres, the cells, the Cloud Controller, the syslog
// agent, the API, the access log and its shipper, the router — and closed in reverse
// order by Close and the end of Start's context, the app instances gracefully. The
// services' Postgres that exits on its own is started again, as a Cloud Foundry's
// service comes back (servicesPG); when it cannot be, or any other part fails on its
// own — the API server, the router, the cells, the log shipper — the foundation stops
// the others and Wait reports that failure.
type Foundation struct {
	cfg      Config
	settings Settings
	parts    *lifecycle.Group
	pg       *servicesPG // restarted when it exits on its own
	cells    *cells.Cells
	cc       *cc.Server
	apiLn    net.Listener
	router   *router.Router
	logs     *logcache.Store
	logsStop chan struct{} // stops the app log tailer
	logsDone chan struct{}
	log      *os.File
	shipper  *logship.Shipper
	store    *logStore // the log store under quota without Elasticsearch
	agent    *syslogagent.Agent
	lock     *os.File // the state dir's lock (lockStateDir)
	// ownCPUs are this process's CPUs before it moved to Config.PlatformCPUs.
	ownCPUs []int
	// containers holds the instances' directories (cells.Config.TmpDir).
	containers string
}

var _ lifecycle.Part = (*Foundation)(nil)

// New returns the foundation of cfg, not started.
func New(cfg Config) *Foundation {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Cells) == 0 {
		cfg.Cells = DefaultCells(goruntime.NumCPU())
	}
	f := &Foundation{cfg: cfg, logs: logcache.NewStore(0)}
	step := lifecycle.Step
	parts := []lifecycle.Member{
		{Name: "state dir", Part: step(f.takeStateDir, f.releaseStateDir)},
		{Name: "services' postgres", Part: lifecycle.Later(f.newServicesPG)},
		{Name: "instance dirs", Part: step(f.makeInstanceDirs, func() error { return os.RemoveAll(f.containers) })},
		{Name: "cells", Part: lifecycle.Later(f.newCells)},
	}
	if len(cfg.PlatformCPUs) > 0 {
		parts = append(parts, lifecycle.Member{Name: "platform CPUs", Part: step(f.pinPlatform, f.unpinPlatform)})
	}
	parts = append(parts,
		lifecycle.Member{Name: "cloud controller", Part: step(f.newCC, func() error { return f.cc.Close() })},
		lifecycle.Member{Name: "syslog agent", Part: lifecycle.Later(f.newAgent)},
		lifecycle.Member{Name: "app log tailer", Part: step(f.tailAppLogs, f.stopTailingAppLogs)},
		lifecycle.Member{Name: "api", Part: lifecycle.Later(f.newAPI)},
		lifecycle.Member{Name: "access log", Part: step(f.openAccessLog, func() error { return f.log.Close() })},
	)
	switch {
	case cfg.ESURL != "":
		parts = append(parts, lifecycle.Member{Name: "log shipper", Part: lifecycle.Later(f.newShipper)})
	case cfg.LogQuota > 0:
		parts = append(parts, lifecycle.Member{Name: "log store", Part: step(f.openLogStore, func() error { return f.store.Close() })})
	}
	parts = append(parts,
		lifecycle.Member{Name: "router", Part: lifecycle.Later(f.newRouter)},
		// Last: the apps that were started before start again once everything runs.
		lifecycle.Member{Name: "apps", Part: step(func(context.Context) error { f.cc.Reconcile(); return nil }, nil)},
	)
	f.parts = lifecycle.NewGroup(parts...)
	return f
}

// Start brings the foundation up — its parts in order, then the apps that were started
// before — and returns once all of it runs. On failure it stops what it had started.
func (f *Foundation) Start(ctx context.Context) error {
	if err := f.parts.Start(ctx); err != nil {
		return fmt.Errorf("foundation: %w", err)
	}
	if n := f.cells.Orphans(); n > 0 {
		f.cfg.Logger.Warn(fmt.Sprintf("stopped %d app instances that a killed foundation left running", n), "state_dir", f.cfg.StateDir)
	}
	if ok, reason := f.cells.Isolation(); !ok {
		f.cfg.Logger.Warn("no cgroups: the Log Cache's CPU counters (absolute_usage) sum each instance's process group from /proc, "+
			"missing CPU of children reaped outside it", "reason", reason)
	}
	return nil
}

// Wait blocks until the foundation has stopped: nil after Close or the end of Start's
// context, else the failure of the part that stopped it (and what went wrong stopping
// the others).
func (f *Foundation) Wait() error { return f.stopped(f.parts.Wait()) }

// Close stops the parts in reverse order, every app instance gracefully, and returns
// what Wait returns.
func (f *Foundation) Close() error { return f.stopped(f.parts.Close()) }

func (f *Foundation) stopped(err error) error {
	if err != nil {
		return fmt.Errorf("foundation: %w", err)
	}
	return nil
}

// Run is Start followed by Wait.
func (f *Foundation) Run(ctx context.Context) error { return lifecycle.Run(ctx, f) }

// takeStateDir takes the state directory (one foundation per state dir: a second start,
// even at the same moment, stops here), reads or chooses the settings, and takes the
// API's port and checks the others: a taken port is the likeliest failure, and should
// come before anything starts. On failure it gives back what it took.
func (f *Foundation) takeStateDir(context.Context) (err error) {
	dir, err := filepath.Abs(f.cfg.StateDir)
	if err != nil {
		return err
	}
	f.cfg.StateDir = dir
	if err := closeStateDir(dir); err != nil {
		return err
	}
	if f.lock, err = lockStateDir(dir); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.releaseStateDir()
		}
	}()
	for _, d := range []string{"cc", "instances", "run"} {
		if err := privateDir(filepath.Join(dir, d)); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
	}
	if f.settings, err = loadSettings(filepath.Join(dir, "foundation.json")); err != nil {
		return err
	}
	if f.apiLn, err = listen(f.settings.APIPort, "API"); err != nil {
		return err
	}
	type portUse struct {
		port int
		what string
	}
	ports := []portUse{{f.settings.RouterPort, "router"}}
	// The Postgres a killed foundation left is taken over, port and all.
	if _, err := pgserver.Attach(filepath.Join(dir, "pg"), ""); errors.Is(err, pgserver.ErrNotRunning) {
		ports = append(ports, portUse{f.settings.PostgresPort, "services' Postgres"})
	}
	for _, p := range ports {
		ln, err := listen(p.port, p.what)
		if err != nil {
			return fmt.Errorf("%w (kept in %s)", err, filepath.Join(dir, "foundation.json"))
		}
		ln.Close()
	}
	return nil
}

// releaseStateDir gives back the API's port, if the API did not take it, and, last of
// all, the state dir: the next foundation may start now.
func (f *Foundation) releaseStateDir() error {
	if f.apiLn != nil {
		f.apiLn.Close()
	}
	return unlockStateDir(f.lock)
}

func (f *Foundation) newServicesPG() (lifecycle.Part, error) {
	f.pg = newServicesPG(pgserver.Options{Dir: filepath.Join(f.cfg.StateDir, "pg"), Port: f.settings.PostgresPort, Fast: f.cfg.Throwaway}, f.cfg.Logger)
	return f.pg, nil
}

// makeInstanceDirs makes the instances' directories afresh: a start after a kill -9
// drops those the killed foundation left.
func (f *Foundation) makeInstanceDirs(context.Context) (err error) {
	f.containers, err = freshDir(filepath.Join(os.TempDir(), "cfbench-instances-"+hashOf(f.cfg.StateDir)))
	return err
}

// newCells makes the cells. The cgroup root is named after the state dir, so two
// foundations never share one. Instances run each as a user of their own (staging as
// InstanceUser) in copies of their droplets, and a start after a kill -9 stops those
// the killed foundation left (recorded in run/). Every sample's container metrics go
// to the Log Cache, as Diego's rep sends them.
func (f *Foundation) newCells() (lifecycle.Part, error) {
	cfg, dir := f.cfg, f.cfg.StateDir
	// With CPUs of its own the platform shares some with cells (by default the
	// generators'), and there it waits for them, not they for it.
	f.cells = cells.New(cells.Config{Name: "f" + hashOf(dir), Cells: cfg.Cells, First: len(cfg.PlatformCPUs) > 0, Host: "127.0.0.1", LogDir: filepath.Join(dir, "instances"),
		User: InstanceUser, CopyApp: true, RecordDir: filepath.Join(dir, "run"), TmpDir: f.containers,
		StatsInterval: cfg.StatsInterval, StopGrace: cfg.StopGrace, Logger: cfg.Logger,
		OnMetrics: func(ms []cells.ContainerMetrics) { f.logs.Put(containerEnvelopes(ms)...) },
		// Instances start only once the API runs them, so f.cc is set by then.
		OnEvent: func(e cells.Event) {
			if e.State == cells.StateCrashed {
				f.cc.InstanceCrashed(e.ProcessGUID, e.Index, e.InstanceGUID, e.Cell, e.Details, e.Crashes, e.Time)
			}
		}})
	return f.cells, nil
}

// newCC makes the Cloud Controller, once the cells run (it needs their cores and
// addresses). The Log Cache is served on the API's own address (its paths, /api/v1/…,
// are not CC's), so it needs no port of its own.
func (f *Foundation) newCC(context.Context) (err error) {
	cfg, settings := f.cfg, f.settings
	secret, _ := hex.DecodeString(settings.Secret)
	// A restarted server keeps the port and the password: the broker's DSN holds.
	broker := pgbroker.New(f.pg.server().DSN("postgres"), "127.0.0.1", f.pg.server().Port(), secret)
	var segments []string
	for _, c := range cfg.Cells {
		segments = append(segments, c.Name)
	}
	apiURL := "http://" + f.apiLn.Addr().String()
	f.cc, err = cc.New(cc.Config{DataDir: filepath.Join(cfg.StateDir, "cc"), DefaultAppMemoryMB: cfg.DefaultAppMemoryMB, Runtime: newRuntime(f.cells, f.containers), Broker: broker,
		User: settings.User, Password: settings.Password, Secret: secret, AppsDomain: settings.AppsDomain,
		Segments: segments, RouterURL: "http://" + routerAddr(settings), LogCacheURL: apiURL, CellCores: f.cells.Cores(),
		CellHosts: cellHosts(f.cells.Addrs()), AccessTokenTTL: cfg.AccessTokenTTL, RefreshTokenTTL: cfg.RefreshTokenTTL,
		RateLimit: cc.RateLimit{Limit: cfg.RateLimit, Interval: cfg.RateLimitInterval, Admins: cfg.RateLimitAdmins},
		AppLog:    f.appLog, Chaos: chaos{f}, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	f.cc.SetBaseURL(apiURL)
	return nil
}

// newAgent makes the syslog agent, which sends bound apps' lines to their drains (cf
// cups -l, bind).
func (f *Foundation) newAgent() (lifecycle.Part, error) {
	f.agent = syslogagent.New(syslogagent.Config{Drains: f.cc.Drains, App: func(guid string) (syslogagent.App, bool) {
		m, ok := f.cc.AppMeta(guid)
		return syslogagent.App{Org: m.OrgName, Space: m.SpaceName, Name: m.Name}, ok
	}, Dial: appsDomainDialer(f.settings.AppsDomain, routerAddr(f.settings)), Logger: f.cfg.Logger})
	return f.agent, nil
}

// newAPI makes the API server on the port takeStateDir took: the Cloud Controller and
// the Log Cache.
func (f *Foundation) newAPI() (lifecycle.Part, error) {
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", logcache.Handler(logcache.APIConfig{Store: f.logs, Auth: logReaders{f.cc}, Started: time.Now()}))
	mux.Handle("/", f.cc.Handler())
	return httpserver.New(&http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}, f.apiLn, 10*time.Second), nil
}

func (f *Foundation) openAccessLog(context.Context) (err error) {
	f.log, err = os.OpenFile(filepath.Join(f.cfg.StateDir, "access.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	return err
}

// newShipper makes the shipper of the access log's lines to Elasticsearch.
func (f *Foundation) newShipper() (lifecycle.Part, error) {
	cfg := f.cfg
	f.shipper = logship.New(logship.Config{URL: cfg.ESURL, Index: cfg.ESIndex, Apps: apps{f.cc}, Quota: cfg.LogQuota, QuotaWindow: cfg.LogQuotaWindow, Logger: cfg.Logger})
	return f.shipper, nil
}

// openLogStore opens the log store under quota, where there is no Elasticsearch.
func (f *Foundation) openLogStore(context.Context) (err error) {
	q := logship.Quota{Limit: f.cfg.LogQuota, Window: f.cfg.LogQuotaWindow}
	if q.Window <= 0 {
		q.Window = time.Hour // as the shipper's default
	}
	f.store, err = openLogStore(filepath.Join(f.cfg.StateDir, LogStoreFile), q, f.cfg.Logger)
	return err
}

// newRouter makes the router, whose access log goes to the file first (a shipper that
// fails must not cost the file its lines), then to the syslog agent (which never
// refuses a line) and to the shipper or the log store.
func (f *Foundation) newRouter() (lifecycle.Part, error) {
	accessLog := []io.Writer{f.log, f.agent}
	switch {
	case f.shipper != nil:
		accessLog = append(accessLog, shipperWriter{f.shipper})
	case f.store != nil:
		accessLog = append(accessLog, f.store)
	}
	f.router = router.New(router.Config{Listen: routerAddr(f.settings),
		Table: &table{cc: f.cc, cells: f.cells}, AccessLog: io.MultiWriter(accessLog...), Logger: f.cfg.Logger})
	return f.router, nil
}

// CellCPU is the CPU time the instances of the cell of an isolation segment have used,
// from the cell's cgroup (cells.Cells.CellCPU): what a test compares a run's utilisation
// with.
func (f *Foundation) CellCPU(segment string) (time.Duration, error) { return f.cells.CellCPU(segment) }

// Info describes how to reach the foundation.
func (f *Foundation) Info() Info {
	return Info{APIURL: "http://" + f.apiLn.Addr().String(), RouterAddr: f.router.Addr(), AppsDomain: f.settings.AppsDomain,
		User: f.settings.User, Password: f.settings.Password, StateDir: f.cfg.StateDir, AccessLog: filepath.Join(f.cfg.StateDir, "access.log"),
		Isolation: isolation(f.cells, f.cfg.Cells) + "; " + platform(f.cfg.PlatformCPUs) + "; " + f.cells.Sandbox(), LogStore: f.logStorePath()}
}

// logStorePath is the log store's file, "" without one.
func (f *Foundation) logStorePath() string {
	if f.store == nil {
		return ""
	}
	return filepath.Join(f.cfg.StateDir, LogStoreFile)
}

// isolation describes the cells, or why instances run without isolation.
func isolation(c *cells.Cells, cl []cells.Cell) string {
	ok, reason := c.Isolation()
	if !ok {
		return "NONE: apps and generators share every CPU and have no memory limits (" + reason + ")"
	}
	var parts []string
	for _, x := range cl {
		parts = append(parts, fmt.Sprintf("%s on CPU %s", x.Name, cgroup.FormatCPUList(x.CPUs)))
	}
	return "cgroups (" + reason + "): " + strings.Join(parts, ", ")
}

// pinPlatform moves this process and the services' Postgres (with its processes) to
// Config.PlatformCPUs, once the cells have taken the measure of the machine (without
// cgroups, the CPUs this process may use are theirs); what either starts later (a
// restarted Postgres too) inherits them. This process's CPUs before are kept for
// unpinPlatform to give back.
func (f *Foundation) pinPlatform(context.Context) error {
	cpus := f.cfg.PlatformCPUs
	own, err := cpuaffinity.Of(os.Getpid())
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(own, c) {
			return fmt.Errorf("platform CPU %d: this process may use only CPUs %s", c, cgroup.FormatCPUList(own))
		}
	}
	if err := cpuaffinity.Pin(os.Getpid(), cpus); err != nil {
		return fmt.Errorf("platform CPUs: %w", err)
	}
	f.ownCPUs = own
	if err := cpuaffinity.PinWithChildren(f.pg.server().PID(), cpus); err != nil {
		return errors.Join(fmt.Errorf("platform CPUs: the services' postgres: %w", err), f.unpinPlatform())
	}
	return nil
}

// unpinPlatform gives this process its CPUs back.
func (f *Foundation) unpinPlatform() error { return cpuaffinity.Pin(os.Getpid(), f.ownCPUs) }

// platform says where the foundation's own work runs.
func platform(cpus []int) string {
	if len(cpus) == 0 {
		return "the platform (API, router, services' Postgres) on any CPU, the apps' included"
	}
	return "the platform (API, router, services' Postgres) on CPU " + cgroup.FormatCPUList(cpus)
}

// appsDomainDialer dials hosts of the apps domain at the router, whatever their port
// (an https:// or syslog:// drain URL on a route names none): the domain resolves
// nowhere, and CF's DNS sends it to its routers. Other hosts are dialled as they are.
func appsDomainDialer(domain, router string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && (host == domain || strings.HasSuffix(host, "."+domain)) {
			addr = router
		}
		return d.DialContext(ctx, network, addr)
	}
}

// routerAddr is where the router listens; the API advertises it in its root document.
func routerAddr(s Settings) string { return "127.0.0.1:" + strconv.Itoa(s.RouterPort) }

// cellHosts is cc.Config.CellHosts from the cells' addresses: one cell, so one host, per
// isolation segment.
func cellHosts(addrs map[string]string) map[string][]string {
	out := make(map[string][]string, len(addrs))
	for name, addr := range addrs {
		out[name] = []string{addr}
	}
	return out
}

func listen(port int, what string) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("%s port %d is taken (is this foundation already running? try: cf-benchmark foundation status): %w", what, port, err)
	}
	return ln, nil
}
