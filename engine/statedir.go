package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// The state directory (.cfbench by default) is what this machine remembers of each
// run it started (STATE_DIR/runs/RUN_ID.json), so that status, export, collect-logs and
// report find its results database without being told again, and the private results
// Postgres of runs without a database given (STATE_DIR/pg). OpenRun reads it.

// Where a run's results database is, as a RunRecord says.
const (
	StorePrivate = "private" // the state dir's Postgres
	StoreGiven   = "given"   // a DSN given with --db or CFBENCH_DB: it must be given again
	StoreOnCF    = "cf"      // on Cloud Foundry, behind the tunnel app RunRecord.Access names
)

// RunRecord is what this machine remembers of a run. It holds no secrets.
type RunRecord struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Spec    string    `json:"spec"`
	Started time.Time `json:"started"`
	// DB is StorePrivate, StoreGiven or StoreOnCF (then Access is set).
	DB     string  `json:"db"`
	Access *Access `json:"access,omitempty"`
}

// RunRecordsDir is where the records of the state dir dir are.
func RunRecordsDir(dir string) string { return filepath.Join(dir, "runs") }

// SaveRunRecord writes r into the state dir dir, replacing an earlier record of the run.
func SaveRunRecord(dir string, r RunRecord) error {
	if !resultsdb.ValidRunID(r.ID) {
		return fmt.Errorf("remember run %q: not a run id", r.ID)
	}
	rdir := RunRecordsDir(dir)
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return fmt.Errorf("remember run %s: %w", r.ID, err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(rdir, r.ID+".json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("remember run %s: %w", r.ID, err)
	}
	return nil
}

// LoadRunRecord reads the record of run id, or of the newest run when id is "" (run
// ids start with their UTC start time). It returns nil, nil when there is none.
func LoadRunRecord(dir, id string) (*RunRecord, error) {
	rdir := RunRecordsDir(dir)
	if id == "" {
		ents, err := os.ReadDir(rdir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("run records: %w", err)
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
		sort.Strings(ids)
		id = ids[len(ids)-1]
	}
	path := filepath.Join(rdir, id+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	var r RunRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("run record %s: %w", path, err)
	}
	return &r, nil
}

// openPrivate starts the private results Postgres of the state dir dir (created on
// first use; its data stays) and opens the store in it. close closes the store and
// stops the server. where says, for people, which database it is.
func openPrivate(ctx context.Context, dir string) (store *resultsdb.Store, where string, close func(), err error) {
	pgDir := filepath.Join(dir, "pg")
	// The server lives until close, not until ctx ends: after a Ctrl-C the run still
	// records that it was interrupted.
	srv := pgserver.New(pgserver.Options{Dir: pgDir})
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, "", nil, fmt.Errorf("start the private results Postgres: %w", err)
	}
	if err := srv.CreateDatabase(ctx, "cfbench"); err != nil {
		srv.Close()
		return nil, "", nil, fmt.Errorf("private results Postgres: %w", err)
	}
	store, err = resultsdb.Open(ctx, srv.DSN("cfbench"))
	if err != nil {
		srv.Close()
		return nil, "", nil, fmt.Errorf("private results Postgres: %w", err)
	}
	return store, "the private Postgres in " + pgDir, func() { store.Close(); srv.Close() }, nil
}

// privateStoreExists reports whether the state dir has its private Postgres already.
func privateStoreExists(stateDir string) bool {
	_, err := os.Stat(filepath.Join(stateDir, "pg"))
	return err == nil
}
