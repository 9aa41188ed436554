package command

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/plugin/statedir"
	"github.com/cf-benchmark/cf-benchmark/report"
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

// given is the DSN of --db or CFBENCH_DB, "" when neither gives one.
func (d *dbFlags) given(env *Env) string {
	if d.dsn != "" {
		return d.dsn
	}
	return env.Getenv("CFBENCH_DB")
}

// open connects to the given results database, or else starts the private Postgres in
// the state dir; close closes the store (and stops that server; its data stays).
func (d *dbFlags) open(ctx context.Context, env *Env) (store *resultsdb.Store, where string, close func(), err error) {
	dsn := d.given(env)
	if dsn == "" {
		return statedir.OpenPrivate(ctx, d.stateDir)
	}
	if store, err = resultsdb.Open(ctx, dsn); err != nil {
		return nil, "", nil, err
	}
	return store, "the database given by --db/CFBENCH_DB", store.Close, nil
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

// open parses the optional RUN_ID argument and opens that run's (or the newest run's)
// results DB; it returns the run id it resolved.
func (r *recordedFlags) open(ctx context.Context, env *Env, args []string, log *slog.Logger) (*resultsdb.Store, string, func(), error) {
	id, err := runIDArg(args)
	if err != nil {
		return nil, "", nil, err
	}
	return openRecorded(ctx, env, id, &r.db, &r.cf, log)
}

// openRecorded opens the results database of run id ("" for the newest run) as this
// machine recorded it: behind the tunnel on Cloud Foundry, or the private Postgres. A
// DSN given with --db/CFBENCH_DB wins. It returns the run id it resolved.
func openRecorded(ctx context.Context, env *Env, id string, db *dbFlags, cff *cfFlags, log *slog.Logger) (store *resultsdb.Store, runID string, close func(), err error) {
	rec, err := statedir.LoadRecord(db.stateDir, id)
	if err != nil {
		return nil, "", nil, err
	}
	given := db.given(env) != ""
	runID = id
	if rec != nil {
		runID = rec.ID
	}
	giveAgain := usagef("run %s stored its results in a database given with --db: give it again (--db or CFBENCH_DB)", runID)
	switch {
	case rec == nil && id == "" && !given:
		return nil, "", nil, usagef("no run recorded in %s: give a RUN_ID and --db DSN, or run one first", statedir.RecordsDir(db.stateDir))
	case rec == nil && !given && !privateDBExists(db.stateDir):
		// Not recorded here, and no private Postgres to look in: do not create one (an
		// initdb of some 47 MB) only to find the run missing.
		hint := "give --db DSN where it is stored"
		if report.IsExportDir(filepath.Join("results", id)) {
			hint = "its results are in " + filepath.Join("results", id) + "; Try: " + env.command("report") + " " + filepath.Join("results", id)
		}
		return nil, "", nil, fmt.Errorf("run %s: %w: not recorded in %s and there is no results database in %s (%s)",
			id, resultsdb.ErrRunNotFound, statedir.RecordsDir(db.stateDir), filepath.Join(db.stateDir, "pg"), hint)
	case given || rec == nil || rec.DB == statedir.DBPrivate:
		if rec != nil && rec.DB == statedir.DBGiven && !given {
			return nil, "", nil, giveAgain
		}
		store, _, close, err = db.open(ctx, env)
	case rec.DB == statedir.DBCF && rec.Access != nil:
		cf, _, cerr := cff.connect(env)
		if cerr != nil {
			return nil, "", nil, cerr
		}
		store, close, err = engine.Connect(ctx, cf, *rec.Access, log)
	default:
		return nil, "", nil, giveAgain
	}
	if err != nil {
		return nil, "", nil, err
	}
	return store, runID, close, nil
}

// privateDBExists reports whether the state dir has its private Postgres already.
func privateDBExists(stateDir string) bool {
	_, err := os.Stat(filepath.Join(stateDir, "pg"))
	return err == nil
}

// scaleDown scales generator apps down in the space where run id was recorded to run
// on Cloud Foundry; nil for a run recorded otherwise, or when the cf CLI's connection
// is not at hand (a dead run's generators then stop issuing, idle, at their next poll).
func (r *recordedFlags) scaleDown(env *Env, id string) engine.ScaleDown {
	rec, err := statedir.LoadRecord(r.db.stateDir, id)
	if err != nil || rec == nil || rec.DB != statedir.DBCF || rec.Access == nil {
		return nil
	}
	cf, _, err := r.cf.connect(env)
	if err != nil {
		return nil
	}
	return engine.ScaleDownIn(cf, rec.Access.SpaceGUID)
}

// recordedOnCF reports whether this machine recorded run id as stored on Cloud Foundry.
func recordedOnCF(stateDir, id string) bool {
	rec, err := statedir.LoadRecord(stateDir, id)
	return err == nil && rec != nil && rec.DB == statedir.DBCF
}

// runIDArg is the optional RUN_ID argument of a command ("" for the newest run).
func runIDArg(args []string) (string, error) {
	switch {
	case len(args) > 1:
		return "", usagef("give at most one RUN_ID")
	case len(args) == 0:
		return "", nil
	case !resultsdb.ValidRunID(args[0]):
		return "", usagef("%q is not a run id (they look like 20261122-130501-3f9a)", args[0])
	}
	return args[0], nil
}
