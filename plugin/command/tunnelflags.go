package command

import (
	"context"
	"errors"
	"flag"
	"log/slog"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// tunnelFlags are the flags that reach the results database through the tunnel app
// (cmd/cfbench: cfbench tunnel, package tunnel) instead of directly.
type tunnelFlags struct {
	url, auth, fingerprint, host string
}

func (t *tunnelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.url, "tunnel", "", "URL of the tunnel app (manifests/tunnel.yml): reach the results DB through it; --db is then the DB's URL as the app's binding gives it. "+
		"Example: CFBENCH_TUNNEL_AUTH=user:pass cf-benchmark export RUN_ID --db postgres://u:p@10.0.4.2:5432/results --tunnel https://cfbench-tunnel.apps.example.com --tunnel-fingerprint FP")
	fs.StringVar(&t.auth, "tunnel-auth", "", "user:password of the tunnel (default $CFBENCH_TUNNEL_AUTH; prefer the variable: flags show in ps)")
	fs.StringVar(&t.fingerprint, "tunnel-fingerprint", "", "fingerprint of the tunnel app's key, as its log prints it (default $CFBENCH_TUNNEL_FINGERPRINT)")
	fs.StringVar(&t.host, "tunnel-host", "", "Host header for the tunnel, to reach it through a router by its route (e.g. cfbench-tunnel.apps.localhost)")
}

// openThrough connects to the results database through the tunnel app. The DSN (--db
// or CFBENCH_DB) names the database as the tunnel app sees it. close closes the store
// and the tunnel.
func (t *tunnelFlags) openThrough(ctx context.Context, env *Env, db *dbFlags, log *slog.Logger) (*resultsdb.Store, func(), error) {
	dsn, auth, fingerprint := db.given(env), t.auth, t.fingerprint
	if auth == "" {
		auth = env.Getenv("CFBENCH_TUNNEL_AUTH")
	}
	if fingerprint == "" {
		fingerprint = env.Getenv("CFBENCH_TUNNEL_FINGERPRINT")
	}
	switch {
	case dsn == "":
		return nil, nil, usagef("--tunnel needs --db (or CFBENCH_DB): the results DB's URL as the tunnel app's binding gives it (cf env cfbench-tunnel)")
	case auth == "":
		return nil, nil, usagef("--tunnel needs the tunnel's user:password in CFBENCH_TUNNEL_AUTH (or --tunnel-auth)")
	case fingerprint == "":
		return nil, nil, usagef("--tunnel needs the tunnel app's key fingerprint in --tunnel-fingerprint (or CFBENCH_TUNNEL_FINGERPRINT): the app logs it at start")
	}
	srv := engine.TunnelServer{URL: t.url, Host: t.host, Auth: auth, Fingerprint: fingerprint}
	store, close, err := engine.OpenTunnelStore(ctx, srv, dsn, log)
	if errors.Is(err, engine.ErrTunnelConfig) {
		err = usagef("%v", err)
	}
	return store, close, err
}
