package command

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/pgserver"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
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
	srv, err := pgserver.Start(ctx, pgserver.Options{Dir: dir})
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the private results Postgres: %w", err)
	}
	if err := srv.CreateDatabase(ctx, "cfbench"); err != nil {
		srv.Stop()
		return nil, "", nil, err
	}
	store, err = resultsdb.Open(ctx, srv.DSN("cfbench"))
	if err != nil {
		srv.Stop()
		return nil, "", nil, err
	}
	return store, "the private Postgres in " + dir, func() { store.Close(); srv.Stop() }, nil
}
