package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// runRecord is what this machine remembers of a run, so that status and export find its
// results database without being told again: the private Postgres, or a Cloud Foundry
// results database behind its tunnel app. It holds no secrets.
type runRecord struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Spec    string    `json:"spec"`
	Started time.Time `json:"started"`
	// DB is "private" (the state dir's Postgres), "given" (--db/CFBENCH_DB: give it
	// again) or "cf" (Access).
	DB     string         `json:"db"`
	Access *engine.Access `json:"access,omitempty"`
}

func recordsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

func saveRecord(stateDir string, r runRecord) error {
	dir := recordsDir(stateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("remember run %s: %w", r.ID, err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, r.ID+".json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("remember run %s: %w", r.ID, err)
	}
	return nil
}

// loadRecord reads the record of run id, or of the newest run when id is "". It returns
// nil, nil when there is none.
func loadRecord(stateDir, id string) (*runRecord, error) {
	dir := recordsDir(stateDir)
	if id == "" {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && resultsdb.ValidRunID(name) {
				ids = append(ids, name)
			}
		}
		if len(ids) == 0 {
			return nil, nil
		}
		sort.Strings(ids) // run ids start with their UTC start time
		id = ids[len(ids)-1]
	}
	b, err := os.ReadFile(filepath.Join(dir, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r runRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, id+".json"), err)
	}
	return &r, nil
}

// openRecorded opens the results database of run id ("" for the newest run) as this
// machine recorded it: behind the tunnel on Cloud Foundry, or the private Postgres. A
// DSN given with --db/CFBENCH_DB wins. It returns the run id it resolved.
func openRecorded(ctx context.Context, env *Env, id string, db *dbFlags, cff *cfFlags, log *slog.Logger) (store *resultsdb.Store, runID string, close func(), err error) {
	rec, err := loadRecord(db.stateDir, id)
	if err != nil {
		return nil, "", nil, err
	}
	given := db.dsn != "" || env.Getenv("CFBENCH_DB") != ""
	switch {
	case rec == nil && id == "" && !given:
		return nil, "", nil, usagef("no run recorded in %s: give a RUN_ID and --db DSN, or run one first", recordsDir(db.stateDir))
	case rec != nil:
		runID = rec.ID
	default:
		runID = id
	}
	switch {
	case given || rec == nil || rec.DB == "private":
		if rec != nil && rec.DB == "given" && !given {
			return nil, "", nil, usagef("run %s stored its results in a database given with --db: give it again (--db or CFBENCH_DB)", runID)
		}
		store, _, close, err = db.open(ctx, env)
	case rec.DB == "cf" && rec.Access != nil:
		cf, _, cerr := cff.connect(env)
		if cerr != nil {
			return nil, "", nil, cerr
		}
		store, close, err = engine.Connect(ctx, cf, *rec.Access, log)
	default:
		return nil, "", nil, usagef("run %s stored its results in a database given with --db: give it again (--db or CFBENCH_DB)", runID)
	}
	if err != nil {
		return nil, "", nil, err
	}
	return store, runID, close, nil
}

// recordedOnCF reports whether this machine recorded run id as stored on Cloud Foundry.
func recordedOnCF(stateDir, id string) bool {
	rec, err := loadRecord(stateDir, id)
	return err == nil && rec != nil && rec.DB == "cf"
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
