package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// The run's relay (results_db.relay, spec.UsesRelay; cmd/cfbench: cfbench relay,
// docs/connection-budget.md): generator instances reach the results database through
// it instead of a pool of connections each. cfbench worker reads the relay's URL, token
// and, where the route's domain does not resolve, the router to dial from these
// variables.
const (
	RelayURLEnv       = "CFBENCH_RELAY_URL"
	RelayTokenEnv     = "CFBENCH_RELAY_TOKEN"
	RelayConnectToEnv = "CFBENCH_RELAY_CONNECT_TO"
)

// RelayApp is the name of the run's relay app.
func RelayApp(sp *spec.Spec) string { return sp.Name + "-relay" }

// relayMemoryMB is the relay app's memory: it holds each post of samples until its COPY.
const relayMemoryMB = 256

// pushRelay pushes the run's relay (cfbench relay) into the generators space, bound to the
// results database with a new token, and returns it with the environment that takes
// the generators through it. The app stays, like the tunnel app (the next run of the
// spec pushes over it, with a new token); Deployment.Close stops it.
func pushRelay(ctx context.Context, cf *platform.CF, sp *spec.Spec, land *platform.Landscape, pushed Pushed, timeout time.Duration) (*platform.App, map[string]string, error) {
	token := rand.Text()
	app, err := pushBound(ctx, cf, sp, land, RelayApp(sp), pushed, "relay", fmt.Sprintf("%dM", relayMemoryMB), "128M", timeout,
		map[string]string{RelayTokenEnv: token, "GOMEMLIMIT": "200MiB"})
	if err != nil {
		return app, nil, fmt.Errorf("relay app: %w", err)
	}
	target, err := cf.RouteTarget(ctx, app.GUID)
	if err != nil {
		return app, nil, fmt.Errorf("relay app: %w", err)
	}
	env := map[string]string{RelayURLEnv: target.URL, RelayTokenEnv: token}
	if target.ConnectTo != "" {
		env[RelayConnectToEnv] = target.ConnectTo
	}
	return app, env, nil
}
