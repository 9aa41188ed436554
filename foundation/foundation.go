// Package foundation is the local foundation: a Cloud Foundry on one machine. It wires
// the Cloud Controller API (cc) to staging and cells that run apps as processes, a
// router that writes gorouter access logs, and a postgres service offering on a private
// Postgres server. Everything lives in one state directory and comes back as it was
// after a restart, on the same ports, so `cf api` and bound credentials stay valid.
package foundation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
	"github.com/cf-benchmark/cf-benchmark/foundation/pgbroker"
	"github.com/cf-benchmark/cf-benchmark/foundation/router"
	"github.com/cf-benchmark/cf-benchmark/foundation/staging"
	"github.com/cf-benchmark/cf-benchmark/pgserver"
)

// Config configures a foundation.
type Config struct {
	// StateDir holds everything: settings, the API's state, packages, droplets,
	// instance logs, the access log and the services' Postgres.
	StateDir string
	// Cells are the cells, one per isolation segment, each with its own CPUs; a fresh
	// foundation creates a segment (and a space) for each. Default: DefaultCells.
	Cells []cells.Cell
	// StatsInterval is how often instance usage is sampled (default 15 s, as Diego).
	StatsInterval time.Duration
	// StopGrace is SIGTERM to SIGKILL for instances (default 10 s, as Diego).
	StopGrace time.Duration
	// ESURL, when set, ships every router access-log line to this Elasticsearch in the
	// shape CF's Logstash pipeline produces, at most LogQuota lines per LogQuotaWindow
	// (0: no quota), as hosted logging caps them.
	ESURL          string
	LogQuota       int
	LogQuotaWindow time.Duration
	Logger         *slog.Logger
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
	// Isolation says how instances are isolated (cgroups and CPU sets per cell), or
	// why they are not.
	Isolation string
}

// Foundation is a running local foundation. Lifecycle: Start, then Close.
type Foundation struct {
	cfg      Config
	settings Settings
	pg       *pgserver.Server
	cells    *cells.Cells
	cc       *cc.Server
	api      *http.Server
	apiLn    net.Listener
	router   *router.Router
	log      *os.File
	shipper  *logship.Shipper
	done     chan error
}

// Start brings the foundation up: Postgres, cells, the API and the router, then starts
// the apps that were started before.
func Start(ctx context.Context, cfg Config) (f *Foundation, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Cells) == 0 {
		cfg.Cells = DefaultCells(goruntime.NumCPU())
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	cfg.StateDir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	settings, err := loadSettings(filepath.Join(dir, "foundation.json"))
	if err != nil {
		return nil, err
	}
	f = &Foundation{cfg: cfg, settings: settings, done: make(chan error, 1)}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	// Listen first: a taken port is the likeliest failure, and should come before
	// anything starts.
	if f.apiLn, err = listen(settings.APIPort, "API"); err != nil {
		return nil, err
	}

	secret, _ := hex.DecodeString(settings.Secret)
	if f.pg, err = pgserver.Start(ctx, pgserver.Options{Dir: filepath.Join(dir, "pg"), Port: settings.PostgresPort}); err != nil {
		return nil, fmt.Errorf("start the services' postgres: %w", err)
	}
	// The cgroup root is named after the state dir, so two foundations never share one.
	f.cells = cells.New(cells.Config{Name: "f" + hashOf(dir), Cells: cfg.Cells, Host: "127.0.0.1", LogDir: filepath.Join(dir, "instances"),
		StatsInterval: cfg.StatsInterval, StopGrace: cfg.StopGrace, Logger: cfg.Logger})
	if err := f.cells.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	broker := pgbroker.New(f.pg.DSN("postgres"), "127.0.0.1", f.pg.Port(), secret)
	var segments []string
	for _, c := range cfg.Cells {
		segments = append(segments, c.Name)
	}
	f.cc, err = cc.New(cc.Config{DataDir: filepath.Join(dir, "cc"), Runtime: newRuntime(f.cells), Broker: broker,
		User: settings.User, Password: settings.Password, Secret: secret, AppsDomain: settings.AppsDomain,
		Segments: segments, RouterURL: "http://" + routerAddr(settings), Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	f.cc.SetBaseURL("http://" + f.apiLn.Addr().String())
	f.api = &http.Server{Handler: f.cc.Handler(), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := f.api.Serve(f.apiLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.done <- fmt.Errorf("api: %w", err)
		}
	}()

	if f.log, err = os.OpenFile(filepath.Join(dir, "access.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	var accessLog io.Writer = f.log
	if cfg.ESURL != "" {
		f.shipper = logship.New(logship.Config{URL: cfg.ESURL, Apps: apps{f.cc}, Quota: cfg.LogQuota, QuotaWindow: cfg.LogQuotaWindow, Logger: cfg.Logger})
		f.shipper.Start(context.WithoutCancel(ctx))
		// The file first: a shipper that fails must not cost the file its lines.
		accessLog = io.MultiWriter(f.log, shipperWriter{f.shipper})
	}
	f.router = router.New(router.Config{Listen: routerAddr(settings),
		Table: &table{cc: f.cc, cells: f.cells}, AccessLog: accessLog, Logger: cfg.Logger})
	if err := f.router.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("router: port %d (kept in %s/foundation.json): %w", settings.RouterPort, dir, err)
	}
	f.cc.Reconcile()
	return f, nil
}

// shipperWriter keeps the access-log file going when the shipper refuses a line (after
// Close, or over its buffer): io.MultiWriter stops at the first error.
type shipperWriter struct{ s *logship.Shipper }

func (w shipperWriter) Write(p []byte) (int, error) {
	w.s.Write(p) // refusals are counted in the shipper's Stats
	return len(p), nil
}

// apps labels shipped log lines with the API's app names, spaces and orgs.
type apps struct{ cc *cc.Server }

func (a apps) App(guid string) (logship.AppInfo, bool) {
	m, ok := a.cc.AppMeta(guid)
	return logship.AppInfo{Name: m.Name, SpaceName: m.SpaceName, SpaceGUID: m.SpaceGUID, OrgName: m.OrgName, OrgGUID: m.OrgGUID}, ok
}

// LogShipping reports the shipper's counters; ok is false when logs are not shipped.
func (f *Foundation) LogShipping() (logship.Stats, bool) {
	if f.shipper == nil {
		return logship.Stats{}, false
	}
	return f.shipper.Stats(), true
}

// Info describes how to reach the foundation.
func (f *Foundation) Info() Info {
	return Info{APIURL: "http://" + f.apiLn.Addr().String(), RouterAddr: f.router.Addr(), AppsDomain: f.settings.AppsDomain,
		User: f.settings.User, Password: f.settings.Password, StateDir: f.cfg.StateDir, AccessLog: filepath.Join(f.cfg.StateDir, "access.log"),
		Isolation: isolation(f.cells, f.cfg.Cells)}
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

// Wait returns when a server of the foundation fails.
func (f *Foundation) Wait() error { return <-f.done }

// Close stops the router, the API, every app instance (gracefully) and Postgres.
func (f *Foundation) Close() error {
	var errs []error
	if f.router != nil {
		errs = append(errs, f.router.Close())
	}
	if f.shipper != nil {
		errs = append(errs, f.shipper.Close())
	}
	if f.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, f.api.Shutdown(ctx))
		cancel()
	} else if f.apiLn != nil {
		f.apiLn.Close()
	}
	if f.cc != nil {
		errs = append(errs, f.cc.Close())
	}
	if f.cells != nil {
		errs = append(errs, f.cells.Close())
	}
	if f.pg != nil {
		errs = append(errs, f.pg.Stop())
	}
	if f.log != nil {
		errs = append(errs, f.log.Close())
	}
	return errors.Join(errs...)
}

// routerAddr is where the router listens; the API advertises it in its root document.
func routerAddr(s Settings) string { return "127.0.0.1:" + strconv.Itoa(s.RouterPort) }

func listen(port int, what string) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("%s port %d is taken (is this foundation already running? try: cf-benchmark foundation status): %w", what, port, err)
	}
	return ln, nil
}

// loadSettings reads the settings, or chooses them (free ports, a password, a secret)
// and saves them on first start.
func loadSettings(path string) (Settings, error) {
	var s Settings
	b, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("%s is damaged: %w", path, err)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return s, err
	}
	s = Settings{User: "admin", Password: randomHex(12), Secret: randomHex(32), AppsDomain: "apps.localhost"}
	for _, p := range []*int{&s.APIPort, &s.RouterPort, &s.PostgresPort} {
		if *p, err = freePort(); err != nil {
			return s, err
		}
	}
	b, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return s, fmt.Errorf("save foundation settings: %w", err)
	}
	return s, nil
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runtime runs the API's apps with staging and cells.
type runtime struct {
	cells *cells.Cells
	// noIsolation, when set, goes into every instance's stats details, so that a user
	// reading cf app sees that the figures come from an unisolated machine.
	noIsolation string
}

var _ cc.Runtime = (*runtime)(nil)

func newRuntime(c *cells.Cells) *runtime {
	r := &runtime{cells: c}
	if ok, reason := c.Isolation(); !ok {
		r.noIsolation = "no cgroup isolation: " + reason
	}
	return r
}

func (r *runtime) Stage(ctx context.Context, req cc.StageRequest) (cc.StageResult, error) {
	res, err := staging.Stage(ctx, staging.Request{PackageZip: req.PackageZip, DropletDir: req.DropletDir, Buildpacks: req.Buildpacks,
		Command: req.Command, MemoryMB: req.MemoryMB, Env: req.Env, Log: req.Log})
	return cc.StageResult{Buildpack: res.Buildpack, StartCommand: res.StartCommand}, err
}

func (r *runtime) Run(s cc.RunSpec) {
	r.cells.Desire(cells.ProcessSpec{ProcessGUID: s.ProcessGUID, AppGUID: s.AppGUID, AppName: s.AppName, ProcessType: s.ProcessType,
		Dir: s.Dir, Command: s.Command, Env: s.Env, Instances: s.Instances, MemoryMB: s.MemoryMB, DiskMB: s.DiskMB,
		HealthCheck: cells.HealthCheck{Type: s.HealthCheck, Endpoint: s.HealthPath, Timeout: s.Timeout}, IsolationSegment: s.IsolationSegment})
}

func (r *runtime) Stop(guid string) { r.cells.Remove(guid) }

func (r *runtime) Instances(guid string) []cc.Instance {
	var out []cc.Instance
	now := time.Now()
	for _, in := range r.cells.Instances(guid) {
		var uptime time.Duration
		if in.State == "RUNNING" && !in.Started.IsZero() {
			uptime = now.Sub(in.Started)
		}
		details := in.Details
		if details == "" {
			details = r.noIsolation
		}
		// The stats host is the cell's address, as on Diego, so that co-located
		// instances can be told apart; the router reaches instances on in.Host.
		host := in.CellAddr
		if host == "" {
			host = in.Host
		}
		out = append(out, cc.Instance{Index: in.Index, GUID: in.GUID, State: in.State, Host: host, Port: in.Port, Uptime: uptime,
			CPU: in.CPU, CPUEntitlement: in.CPUEntitlement, MemBytes: in.MemBytes, DiskBytes: in.DiskBytes, Details: details})
	}
	return out
}

// table resolves the router's hosts through the API's routes to running instances.
type table struct {
	cc    *cc.Server
	cells *cells.Cells
}

var _ router.Table = (*table)(nil)

func (t *table) Route(host string) (router.Route, bool) {
	app, ok := t.cc.Lookup(host)
	if !ok {
		return router.Route{}, false
	}
	r := router.Route{AppGUID: app}
	for _, in := range t.cells.Instances(app) { // the web process shares the app's guid
		if in.State == "RUNNING" {
			r.Backends = append(r.Backends, router.Backend{Addr: net.JoinHostPort(in.Host, strconv.Itoa(in.Port)), Index: in.Index, InstanceGUID: in.GUID})
		}
	}
	return r, true
}

func (t *table) Instance(app string, index int) (router.Backend, bool) {
	for _, in := range t.cells.Instances(app) {
		if in.Index == index && in.State == "RUNNING" {
			return router.Backend{Addr: net.JoinHostPort(in.Host, strconv.Itoa(in.Port)), Index: in.Index, InstanceGUID: in.GUID}, true
		}
	}
	return router.Backend{}, false
}
