package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// ErrTunnelConfig marks a tunnel or database address OpenThroughTunnel cannot use (a
// bad server URL, fingerprint or DSN); nothing was started.
var ErrTunnelConfig = errors.New("bad tunnel configuration")

// OpenThroughTunnel is the one way to reach a results database through the tunnel app:
// it starts a tunnel client to cc.Server on 127.0.0.1, forwarding to the database dsn
// names (as the tunnel app sees it: its host and port are the one remote the tunnel
// allows; cc.Remote is set from it), and opens the store through it. close closes the
// store, then the tunnel, which lives until then even when ctx ends. A server that
// refuses the tunnel gives an error matching tunnel.ErrFingerprint, ErrAuth or
// ErrDenied.
func OpenThroughTunnel(ctx context.Context, cc tunnel.ClientConfig, dsn string) (store *resultsdb.Store, close func(), err error) {
	if cc.Remote, err = tunnel.DBRemote(dsn); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTunnelConfig, err)
	}
	c, err := tunnel.NewClient(cc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTunnelConfig, err)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() { cancel(); c.Close(); c.Wait() }
	if err := c.Start(tctx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("tunnel to the results database (%s): %w", cc.Server, err)
	}
	local, err := c.DSN(dsn)
	if err == nil {
		store, err = resultsdb.Open(ctx, local)
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("results database through the tunnel: %w", err)
	}
	return store, func() { store.Close(); stop() }, nil
}

// TunnelServer is a tunnel app as a user names it: its URL, the Host header to reach it
// through a router (or ""), its user:password and its key's fingerprint.
type TunnelServer struct {
	URL, Host, Auth, Fingerprint string
}

// OpenTunnelStore opens the results database dsn names through the tunnel app t, as
// OpenThroughTunnel does; when the app refuses the tunnel, the error says what to try.
func OpenTunnelStore(ctx context.Context, t TunnelServer, dsn string, log *slog.Logger) (store *resultsdb.Store, close func(), err error) {
	cc := tunnel.ClientConfig{Server: t.URL, Host: t.Host, Auth: t.Auth, Fingerprint: t.Fingerprint, Logger: log}
	store, close, err = OpenThroughTunnel(ctx, cc, dsn)
	switch {
	case errors.Is(err, tunnel.ErrFingerprint):
		err = fmt.Errorf("%w\nTry: cf logs cfbench-tunnel --recent | grep fingerprint (the app logs it at start)", err)
	case errors.Is(err, tunnel.ErrAuth):
		err = fmt.Errorf("%w\nTry: the user:password the tunnel app was started with (cf env cfbench-tunnel: CFBENCH_TUNNEL_AUTH)", err)
	case errors.Is(err, tunnel.ErrDenied):
		err = fmt.Errorf("%w\nTry: --db with the host and port of the tunnel app's binding (cf env cfbench-tunnel)", err)
	}
	return store, close, err
}

// Access is how to reach a run's results database on a Cloud Foundry again: the tunnel
// app and the service instance it is bound to. It holds no secrets: the tunnel's
// credentials are read from the app's environment when needed.
type Access struct {
	API                 string `json:"api"`
	Org                 string `json:"org"`
	Space               string `json:"space"`
	SpaceGUID           string `json:"space_guid"`
	TunnelApp           string `json:"tunnel_app"`
	ServiceInstance     string `json:"service_instance"`
	ServiceInstanceGUID string `json:"service_instance_guid"`
}

// Tunnel app environment: per-run credentials and the server key, whose fingerprint
// clients pin (kept across runs, so the fingerprint stays).
const (
	envTunnelAuth = "CFBENCH_TUNNEL_AUTH"
	envTunnelKey  = "CFBENCH_TUNNEL_KEY"
)

// TunnelApp is the name of the spec's tunnel app.
func TunnelApp(sp *spec.Spec) string { return sp.Name + "-tunnel" }

// pushTunnel pushes the tunnel app bound to the results database with new credentials
// (each run gets its own) and the key it had before, if any.
func pushTunnel(ctx context.Context, cf *platform.CF, sp *spec.Spec, land *platform.Landscape, pushed Pushed, timeout time.Duration) error {
	name := TunnelApp(sp)
	key := ""
	if old, err := cf.FindApp(ctx, land.Generators.GUID, name); err != nil {
		return err
	} else if old != nil {
		env, err := cf.AppEnv(ctx, old.GUID)
		if err != nil {
			return err
		}
		key = env[envTunnelKey]
	}
	if key == "" {
		var err error
		if key, err = tunnel.NewKey(); err != nil {
			return err
		}
	}
	auth, err := tunnel.NewAuth()
	if err != nil {
		return err
	}
	_, err = pushBound(ctx, cf, sp, land, name, pushed, "tunnel", "64M", "128M", timeout,
		map[string]string{envTunnelAuth: auth, envTunnelKey: key, "GOMEMLIMIT": "48MiB"})
	if err != nil {
		return fmt.Errorf("tunnel app: %w", err)
	}
	return nil
}

// Connect reaches the results database of access through its tunnel app: it reads the
// tunnel's credentials and key from the app's environment and the database's address
// from the app's binding, starts a tunnel client on 127.0.0.1 and opens the store.
// close closes both.
func Connect(ctx context.Context, cf *platform.CF, access Access, log *slog.Logger) (store *resultsdb.Store, close func(), err error) {
	app, err := cf.FindApp(ctx, access.SpaceGUID, access.TunnelApp)
	if err != nil {
		return nil, nil, err
	}
	if app == nil {
		return nil, nil, fmt.Errorf("tunnel app %s not found in space %s (org %s): it is pushed by cf run-benchmark", access.TunnelApp, access.Space, access.Org)
	}
	env, err := cf.AppEnv(ctx, app.GUID)
	if err != nil {
		return nil, nil, err
	}
	fp, err := tunnel.KeyFingerprint(env[envTunnelKey])
	if err != nil {
		return nil, nil, fmt.Errorf("tunnel app %s: %s: %w", access.TunnelApp, envTunnelKey, err)
	}
	creds, err := cf.BindingCredentials(ctx, app.GUID, access.ServiceInstanceGUID)
	if err != nil {
		return nil, nil, fmt.Errorf("tunnel app %s: %w", access.TunnelApp, err)
	}
	dsn, _ := creds["uri"].(string)
	if dsn == "" {
		return nil, nil, fmt.Errorf("the binding of %s to %s has no uri credential; the results database must be a Postgres service", access.TunnelApp, access.ServiceInstance)
	}
	if _, err := tunnel.DBRemote(dsn); err != nil {
		return nil, nil, fmt.Errorf("the binding of %s to %s: %w", access.TunnelApp, access.ServiceInstance, err)
	}
	target, err := cf.RouteTarget(ctx, app.GUID)
	if err != nil {
		return nil, nil, fmt.Errorf("tunnel app %s: %w", access.TunnelApp, err)
	}
	cc := tunnel.ClientConfig{Server: target.URL, Auth: env[envTunnelAuth], Fingerprint: fp, Logger: log}
	if target.ConnectTo != "" {
		cc.Server, cc.Host = "http://"+target.ConnectTo, hostOf(target.URL)
	}
	return OpenThroughTunnel(ctx, cc, dsn)
}

func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
