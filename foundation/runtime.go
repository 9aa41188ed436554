package foundation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cc"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/router"
	"github.com/cf-benchmark/cf-benchmark/foundation/staging"
)

// runtime runs the API's apps with staging and cells.
type runtime struct {
	cells *cells.Cells
	// scratch is where apps are staged as the instances' user (the instances' dirs'
	// root, which that user may enter; the state dir is closed to it).
	scratch string
	// noIsolation, when set, goes into every instance's stats details, so that a user
	// reading cf app sees that the figures come from an unisolated machine.
	noIsolation string
}

var _ cc.Runtime = (*runtime)(nil)

func newRuntime(c *cells.Cells, scratch string) *runtime {
	r := &runtime{cells: c, scratch: scratch}
	if ok, reason := c.Isolation(); !ok {
		r.noIsolation = "no cgroup isolation: " + reason
	}
	return r
}

func (r *runtime) Stage(ctx context.Context, req cc.StageRequest) (cc.StageResult, error) {
	res, err := staging.Stage(ctx, staging.Request{PackageZip: req.PackageZip, DropletDir: req.DropletDir, Buildpacks: req.Buildpacks,
		Command: req.Command, MemoryMB: req.MemoryMB, Env: req.Env, Log: req.Log, User: r.cells.User(), ScratchDir: r.scratch})
	if errors.Is(err, staging.ErrNotDetected) {
		err = fmt.Errorf("%w: %w", cc.ErrNoAppDetected, err)
	}
	return cc.StageResult{Buildpack: res.Buildpack, BuildpackVersion: res.BuildpackVersion, StartCommand: res.StartCommand,
		ProcessTypes: res.ProcessTypes}, err
}

func (r *runtime) Run(s cc.RunSpec) { r.cells.Desire(cellSpec(s)) }

func cellSpec(s cc.RunSpec) cells.ProcessSpec {
	return cells.ProcessSpec{ProcessGUID: s.ProcessGUID, AppGUID: s.AppGUID, AppName: s.AppName, ProcessType: s.ProcessType,
		Dir: s.Dir, Command: s.Command, Env: s.Env, Instances: s.Instances, MemoryMB: s.MemoryMB, DiskMB: s.DiskMB,
		HealthCheck: cells.HealthCheck{Type: s.HealthCheck, Endpoint: s.HealthPath, Timeout: s.Timeout}, IsolationSegment: s.IsolationSegment}
}

func (r *runtime) Roll(s cc.RunSpec, maxInFlight, from, to int, done func(error)) {
	ro := r.cells.RollIndexes(cellSpec(s), maxInFlight, from, to)
	go func() {
		if err := ro.Err(); !errors.Is(err, cells.ErrClosed) {
			done(err)
		}
	}()
}

func (r *runtime) Stop(guid string) { r.cells.Remove(guid) }

func (r *runtime) Terminate(guid string, index int) (string, error) {
	return r.cells.Terminate(guid, index)
}

func (r *runtime) Instances(guid string) []cc.Instance {
	var out []cc.Instance
	now := time.Now()
	for _, in := range r.cells.Instances(guid) {
		var uptime time.Duration
		if in.State == "RUNNING" && !in.Started.IsZero() {
			uptime = now.Sub(in.Since) // restarts at every state change, as on Diego
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

func (t *table) Route(host, path string) (router.Route, bool) {
	app, http2, ok := t.cc.Lookup(host, path)
	if !ok {
		return router.Route{}, false
	}
	r := router.Route{AppGUID: app, HTTP2: http2}
	for _, in := range t.cells.Serving(app) { // the web process shares the app's guid
		if in.State == "RUNNING" {
			r.Backends = append(r.Backends, router.Backend{Addr: net.JoinHostPort(in.Host, strconv.Itoa(in.Port)), Index: in.Index, InstanceGUID: in.GUID})
		}
	}
	return r, true
}

func (t *table) Instance(app string, index int) (router.Backend, bool) {
	for _, in := range t.cells.Serving(app) {
		if in.Index == index && in.State == "RUNNING" {
			return router.Backend{Addr: net.JoinHostPort(in.Host, strconv.Itoa(in.Port)), Index: in.Index, InstanceGUID: in.GUID}, true
		}
	}
	return router.Backend{}, false
}
