package command

import (
	"context"
	"flag"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/platform"
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

// given is the DSN of --db or CFBENCH_DB, "" when neither gives one.
func (d *dbFlags) given(env *Env) string {
	if d.dsn != "" {
		return d.dsn
	}
	return env.Getenv("CFBENCH_DB")
}

// options are where the engine finds the results database of these flags; cff, when
// not nil, gives the cf CLI's connection for runs recorded on Cloud Foundry.
func (d *dbFlags) options(env *Env, cff *cfFlags) engine.StoreOptions {
	o := engine.StoreOptions{StateDir: d.stateDir, DSN: d.given(env), Command: env.command, Log: env.logger()}
	if cff != nil {
		o.Connect = func() (*platform.CF, error) {
			cf, _, err := cff.connect(env)
			return cf, err
		}
	}
	return o
}

// recordedFlags choose how a command that reads a recorded run reaches its results DB.
type recordedFlags struct {
	db dbFlags
	cf cfFlags
}

func (r *recordedFlags) register(fs *flag.FlagSet) {
	r.db.register(fs)
	r.cf.register(fs)
}

func (r *recordedFlags) options(env *Env) engine.StoreOptions { return r.db.options(env, &r.cf) }

// open parses the optional RUN_ID argument and opens that run's (or the newest run's)
// results DB as this machine recorded it (engine.OpenRun).
func (r *recordedFlags) open(ctx context.Context, env *Env, args []string) (*engine.RunStore, error) {
	id, err := runIDArg(args)
	if err != nil {
		return nil, err
	}
	return engine.OpenRun(ctx, r.options(env), id)
}

// runIDArg is the optional RUN_ID argument of a command ("" for the newest run).
func runIDArg(args []string) (string, error) {
	switch {
	case len(args) > 1:
		return "", usagef("give at most one RUN_ID")
	case len(args) == 0:
		return "", nil
	case !engine.IsRunID(args[0]):
		return "", usagef("%q is not a run id (they look like 20261122-130501-3f9a)", args[0])
	}
	return args[0], nil
}
