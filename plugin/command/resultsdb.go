package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/pgserver"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/tunnel"
)

// dbFlags are the flags that choose the results database.
type dbFlags struct {
	dsn      string
	stateDir string
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.dsn, "db", "", "results database URL (postgres://…); default $CFBENCH_DB, else a private Postgres in the state dir")
	fs.StringVar(&d.stateDir, "state-dir", ".cfbench", "directory for local state (the private Postgres lives in STATE_DIR/pg)")
}

// open connects to the results database. Without a DSN it starts the private Postgres
// server in the state dir; close stops it again (its data stays).
func (d *dbFlags) open(ctx context.Context, env *Env) (store *resultsdb.Store, where string, close func(), err error) {
	dsn := d.dsn
	if dsn == "" {
		dsn = env.Getenv("CFBENCH_DB")
	}
	if dsn != "" {
		store, err := resultsdb.Open(ctx, dsn)
		if err != nil {
			return nil, "", nil, err
		}
		return store, "the database given by --db/CFBENCH_DB", store.Close, nil
	}
	dir := filepath.Join(d.stateDir, "pg")
	// The server lives until close, not until ctx ends: after a Ctrl-C the run still
	// records that it was interrupted.
	srv := pgserver.New(pgserver.Options{Dir: dir})
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, "", nil, fmt.Errorf("start the private results Postgres: %w", err)
	}
	if err := srv.CreateDatabase(ctx, "cfbench"); err != nil {
		srv.Close()
		return nil, "", nil, err
	}
	store, err = resultsdb.Open(ctx, srv.DSN("cfbench"))
	if err != nil {
		srv.Close()
		return nil, "", nil, err
	}
	return store, "the private Postgres in " + dir, func() { store.Close(); srv.Close() }, nil
}

// tunnelFlags are the flags that reach the results database through the tunnel app
// (cmd/cfbench-tunnel, package tunnel) instead of directly.
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

// openThrough starts a tunnel client and connects to the results database through it.
// The DSN (--db or CFBENCH_DB) names the database as the tunnel app sees it; its host and
// port are the one remote the tunnel allows. close closes the store and the tunnel.
func (d *dbFlags) openThrough(ctx context.Context, env *Env, t *tunnelFlags, log *slog.Logger) (store *resultsdb.Store, where string, close func(), err error) {
	dsn := d.dsn
	if dsn == "" {
		dsn = env.Getenv("CFBENCH_DB")
	}
	auth, fingerprint := t.auth, t.fingerprint
	if auth == "" {
		auth = env.Getenv("CFBENCH_TUNNEL_AUTH")
	}
	if fingerprint == "" {
		fingerprint = env.Getenv("CFBENCH_TUNNEL_FINGERPRINT")
	}
	switch {
	case dsn == "":
		return nil, "", nil, usagef("--tunnel needs --db (or CFBENCH_DB): the results DB's URL as the tunnel app's binding gives it (cf env cfbench-tunnel)")
	case auth == "":
		return nil, "", nil, usagef("--tunnel needs the tunnel's user:password in CFBENCH_TUNNEL_AUTH (or --tunnel-auth)")
	case fingerprint == "":
		return nil, "", nil, usagef("--tunnel needs the tunnel app's key fingerprint in --tunnel-fingerprint (or CFBENCH_TUNNEL_FINGERPRINT): the app logs it at start")
	}
	remote, err := tunnel.DBRemote(dsn)
	if err != nil {
		return nil, "", nil, usagef("%v", err)
	}
	c, err := tunnel.NewClient(tunnel.ClientConfig{Server: t.url, Host: t.host, Auth: auth, Fingerprint: fingerprint, Remote: remote, Logger: log})
	if err != nil {
		return nil, "", nil, usagef("%v", err)
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // the tunnel lives until close
	stopTunnel := func() { cancel(); c.Close(); c.Wait() }
	if err := c.Start(tctx); err != nil {
		stopTunnel()
		switch {
		case errors.Is(err, tunnel.ErrFingerprint):
			err = fmt.Errorf("%w\nTry: cf logs cfbench-tunnel --recent | grep fingerprint (the app logs it at start)", err)
		case errors.Is(err, tunnel.ErrAuth):
			err = fmt.Errorf("%w\nTry: the user:password the tunnel app was started with (cf env cfbench-tunnel: CFBENCH_TUNNEL_AUTH)", err)
		case errors.Is(err, tunnel.ErrDenied):
			err = fmt.Errorf("%w\nTry: --db with the host and port of the tunnel app's binding (cf env cfbench-tunnel)", err)
		}
		return nil, "", nil, err
	}
	local, err := c.DSN(dsn)
	if err != nil {
		stopTunnel()
		return nil, "", nil, err
	}
	store, err = resultsdb.Open(ctx, local)
	if err != nil {
		stopTunnel()
		return nil, "", nil, err
	}
	return store, "the database behind the tunnel " + t.url, func() { store.Close(); stopTunnel() }, nil
}
