package engine

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/version"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Pushed is the program a run pushes besides the apps under test: cmd/cfbench, one
// linux/amd64 executable that is the generator (`cfbench worker`), the tunnel, the
// relay and the drain.
type Pushed struct {
	// Binary is the path of the executable.
	Binary string
	// Version is the version of the plugin that pushes it, given to every app pushed
	// from it (version.PushedByEnv): a program of another version refuses to start.
	Version string
}

// app is b pushed as cfbench's program prog ("worker", "tunnel", "relay", "drain").
func (p Pushed) app(prog string, b platform.BinaryApp) platform.BinaryApp {
	b.Binary = p.Binary
	b.Command = "./" + filepath.Base(p.Binary) + " " + prog
	b.Env = maps.Clone(b.Env)
	if p.Version != "" {
		if b.Env == nil {
			b.Env = map[string]string{}
		}
		b.Env[version.PushedByEnv] = p.Version
	}
	return b
}

// pushBound pushes one of the run's own apps (the tunnel, the drain, the relay): pushed's
// program prog as app name in the generators space, one instance with a route, bound to the results
// database (CFBENCH_DB_SERVICE names it among the app's bindings), and waits until it
// runs.
func pushBound(ctx context.Context, cf *platform.CF, sp *spec.Spec, land *platform.Landscape, name string, pushed Pushed, prog, memory, disk string,
	timeout time.Duration, env map[string]string) (*platform.App, error) {
	env = maps.Clone(env)
	env["CFBENCH_DB_SERVICE"] = sp.ResultsDB.ServiceInstance
	// The route carries part of the org's guid: routes are global on a foundation, and
	// two orgs running the same spec must not collide.
	host := fmt.Sprintf("%s-%s", name, strings.ReplaceAll(land.OrgGUID, "-", "")[:8])
	app, err := cf.PushBinary(ctx, pushed.app(prog, platform.BinaryApp{Org: land.Org, Space: land.Generators.Name, Name: name,
		Memory: memory, Disk: disk, Instances: 1, RouteHost: host, HealthCheck: "port",
		Services: []string{sp.ResultsDB.ServiceInstance}, Env: env}))
	if err != nil {
		return nil, err
	}
	if err := cf.WaitRunning(ctx, app.ProcessGUID, 1, timeout); err != nil {
		return app, fmt.Errorf("%s: %w", name, err)
	}
	return app, nil
}
