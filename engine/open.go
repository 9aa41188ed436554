package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// ErrUsage marks an error the user answers by invoking the command otherwise: a run id
// that is none, a database to give (again). Its text says what to give.
var ErrUsage = errors.New("bad invocation")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// IsRunID reports whether s has the form of a run id (20261122-130501-3f9a), as a
// command tells a RUN_ID argument from others.
func IsRunID(s string) bool { return resultsdb.ValidRunID(s) }

// StoreOptions say where a command's results database is: as the state dir remembers
// each run, or given.
type StoreOptions struct {
	// StateDir is this machine's state (.cfbench): the run records and the private
	// Postgres.
	StateDir string
	// DSN is the database given with --db or CFBENCH_DB; "" for none. It wins over a
	// run's record.
	DSN string
	// Tunnel, when set, reaches DSN (as the tunnel app's binding names it) through the
	// tunnel app, for a run this machine did not record.
	Tunnel *TunnelServer
	// Connect is the cf CLI's connection, asked for only to reach a run recorded on
	// Cloud Foundry (behind its tunnel app); nil for none.
	Connect func() (*platform.CF, error)
	// Command is how the user invokes the command called name, for hints; nil:
	// "cf-benchmark NAME".
	Command func(name string) string
	Log     *slog.Logger
}

func (o StoreOptions) command(name string) string {
	if o.Command == nil {
		return "cf-benchmark " + name
	}
	return o.Command(name)
}

func (o StoreOptions) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
}

// OpenStore opens the database DSN gives, or else the private Postgres of the state dir
// (started, and created on first use); kind is StoreGiven or StorePrivate, where says
// for people which it is. close closes the store (and stops that server; its data
// stays).
func OpenStore(ctx context.Context, o StoreOptions) (store *resultsdb.Store, kind, where string, close func(), err error) {
	if o.DSN == "" {
		store, where, close, err = openPrivate(ctx, o.StateDir)
		return store, StorePrivate, where, close, err
	}
	if store, err = resultsdb.Open(ctx, o.DSN); err != nil {
		return nil, "", "", nil, err
	}
	return store, StoreGiven, "the database given by --db/CFBENCH_DB", store.Close, nil
}

// RunStore is the results database of a run, opened by OpenRun.
type RunStore struct {
	// Store is the database; RunID the run in it (the newest recorded run when none
	// was named).
	Store *resultsdb.Store
	RunID string
	// remote is true when the database is reached through a tunnel app.
	remote    bool
	scaleDown ScaleDown
	log       *slog.Logger
	close     func()
}

// Close closes the store and what it was reached through.
func (r *RunStore) Close() { r.close() }

// OpenRun opens the results database of run id ("" for the newest run recorded here):
// through o.Tunnel when set; else as this machine recorded it, behind the tunnel app
// on Cloud Foundry or in the private Postgres, a DSN given winning. What the user must
// give otherwise is an ErrUsage.
func OpenRun(ctx context.Context, o StoreOptions, id string) (*RunStore, error) {
	if id != "" && !resultsdb.ValidRunID(id) {
		return nil, usagef("%q is not a run id (they look like 20261122-130501-3f9a)", id)
	}
	if o.Tunnel != nil {
		return openTunnelRun(ctx, o, id)
	}
	rec, err := LoadRunRecord(o.StateDir, id)
	if err != nil {
		return nil, err
	}
	given := o.DSN != ""
	rs := &RunStore{RunID: id, log: o.log()}
	if rec != nil {
		rs.RunID = rec.ID
	}
	giveAgain := usagef("run %s stored its results in a database given with --db: give it again (--db or CFBENCH_DB)", rs.RunID)
	switch {
	case rec == nil && id == "" && !given:
		return nil, usagef("no run recorded in %s: give a RUN_ID and --db DSN, or run one first", RunRecordsDir(o.StateDir))
	case rec == nil && !given && !privateStoreExists(o.StateDir):
		// Not recorded here, and no private Postgres to look in: do not create one (an
		// initdb of some 47 MB) only to find the run missing.
		hint := "give --db DSN where it is stored"
		if report.IsExportDir(filepath.Join("results", id)) {
			hint = "its results are in " + filepath.Join("results", id) + "; Try: " + o.command("report") + " " + filepath.Join("results", id)
		}
		return nil, fmt.Errorf("run %s: %w: not recorded in %s and there is no results database in %s (%s)",
			id, resultsdb.ErrRunNotFound, RunRecordsDir(o.StateDir), filepath.Join(o.StateDir, "pg"), hint)
	case given || rec == nil || rec.DB == StorePrivate:
		if rec != nil && rec.DB == StoreGiven && !given {
			return nil, giveAgain
		}
		rs.Store, _, _, rs.close, err = OpenStore(ctx, o)
	case rec.DB == StoreOnCF && rec.Access != nil:
		if o.Connect == nil {
			return nil, fmt.Errorf("run %s stored its results on Cloud Foundry (%s), and no connection to it is at hand", rs.RunID, rec.Access.API)
		}
		cf, cerr := o.Connect()
		if cerr != nil {
			return nil, cerr
		}
		rs.remote, rs.scaleDown = true, ScaleDownIn(cf, rec.Access.SpaceGUID)
		rs.Store, rs.close, err = Connect(ctx, cf, *rec.Access, rs.log)
	default:
		return nil, giveAgain
	}
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// openTunnelRun opens the database o.DSN names through the tunnel app o.Tunnel.
func openTunnelRun(ctx context.Context, o StoreOptions, id string) (*RunStore, error) {
	switch {
	case o.DSN == "":
		return nil, usagef("--tunnel needs --db (or CFBENCH_DB): the results DB's URL as the tunnel app's binding gives it (cf env cfbench-tunnel)")
	case o.Tunnel.Auth == "":
		return nil, usagef("--tunnel needs the tunnel's user:password in CFBENCH_TUNNEL_AUTH (or --tunnel-auth)")
	case o.Tunnel.Fingerprint == "":
		return nil, usagef("--tunnel needs the tunnel app's key fingerprint in --tunnel-fingerprint (or CFBENCH_TUNNEL_FINGERPRINT): the app logs it at start")
	}
	rs := &RunStore{RunID: id, remote: true, log: o.log()}
	var err error
	rs.Store, rs.close, err = OpenTunnelStore(ctx, *o.Tunnel, o.DSN, rs.log)
	if errors.Is(err, ErrTunnelConfig) {
		return nil, usagef("%v", err)
	}
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// OnCF reports whether this machine recorded run id as stored on Cloud Foundry.
func (o StoreOptions) OnCF(id string) bool {
	rec, err := LoadRunRecord(o.StateDir, id)
	return err == nil && rec != nil && rec.DB == StoreOnCF
}

// ExportDirs are where the export directory of run id (the newest recorded run for "")
// may be: its spec's export.dir as the run wrote it, then results (the default),
// relative to the working directory as the run's was; and that run's id ("" when
// unknown).
func (o StoreOptions) ExportDirs(id string) ([]string, string) {
	if id != "" && !resultsdb.ValidRunID(id) {
		return nil, ""
	}
	rec, _ := LoadRunRecord(o.StateDir, id)
	if rec != nil {
		id = rec.ID
	}
	if id == "" {
		return nil, ""
	}
	dirs := []string{"results"}
	if rec != nil && rec.Spec != "" {
		if text, err := os.ReadFile(rec.Spec); err == nil {
			if sp, err := spec.Parse(rec.Spec, text, filepath.Dir(rec.Spec)); err == nil && sp.Export.Dir != "" {
				dirs = append([]string{sp.Export.Dir}, dirs...)
			}
		}
	}
	return dirs, id
}

// AbortDead marks the runs of the store whose process died as aborted (AbortDeadRuns),
// scaling their generators down when the run is on Cloud Foundry; note says so.
func (r *RunStore) AbortDead(ctx context.Context, note func(string)) {
	AbortDeadRuns(ctx, r.Store, r.scaleDown, note, r.log)
}

// RunState is what status shows of a run: its row, its steps so far, the generator
// instances alive per variant while it runs, and its events.
type RunState struct {
	Run *resultsdb.Run
	// Running is true while the run goes on.
	Running   bool
	Summaries []resultsdb.StepSummary
	// Alive is, while it runs, the live generator instances of each variant of
	// Summaries, in their order.
	Alive  []VariantAlive
	Events []resultsdb.Event
	// Elapsed is how long it ran, or runs so far at now.
	Elapsed time.Duration
}

// VariantAlive is how many generator instances of a variant are alive.
type VariantAlive struct {
	Variant string
	Alive   int
}

// State reads the run's state, now being the time a run still going is measured to.
func (r *RunStore) State(ctx context.Context, now time.Time) (*RunState, error) {
	run, err := r.Store.GetRun(ctx, r.RunID)
	if err != nil {
		return nil, err
	}
	st := &RunState{Run: run, Running: run.Status == resultsdb.RunRunning}
	end := now
	if run.Ended != nil {
		end = *run.Ended
	}
	st.Elapsed = end.Sub(run.Started)
	if st.Summaries, err = r.Store.StepSummaries(ctx, r.RunID); err != nil {
		return nil, err
	}
	if st.Running {
		seen := map[string]bool{}
		for _, s := range st.Summaries {
			if seen[s.Variant] {
				continue
			}
			seen[s.Variant] = true
			if live, err := r.Store.LiveWorkers(ctx, r.RunID, s.Variant); err == nil {
				st.Alive = append(st.Alive, VariantAlive{s.Variant, live})
			}
		}
	}
	if st.Events, err = r.Store.Events(ctx, r.RunID); err != nil {
		return nil, err
	}
	return st, nil
}

// Follow feeds w's dashboard with the run, under way in another process, until it ends
// or ctx does.
func (r *RunStore) Follow(ctx context.Context, w *Watch) error {
	return w.Follow(ctx, r.Store, r.RunID)
}

// Export writes the run's tables (all for none) to CSV files in dir with a manifest.
func (r *RunStore) Export(ctx context.Context, dir string, tables []string) (*export.Manifest, error) {
	if r.remote {
		// chisel's client allocates a buffer per WebSocket message; collecting them at
		// the default pace costs about a quarter of an export's CPU.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	return ExportRun(ctx, r.Store, r.RunID, dir, tables, r.log)
}

// PullRouterLogs pulls the run's router logs again, as collectors.router_logs of the
// spec file (or, for "", of the spec the run was started with) says, from the sources
// open finds, and checks what they show. A spec without router logs is an ErrUsage. The
// pull is nil when none was made; the error joins why the pull and the checks failed.
func (r *RunStore) PullRouterLogs(ctx context.Context, specFile string, open LogSourceFunc) (*RouterLogPull, []StepFinding, error) {
	run, err := r.Store.GetRun(ctx, r.RunID)
	if err != nil {
		return nil, nil, err
	}
	var sp *spec.Spec
	if specFile != "" {
		sp, _, err = ReadSpec(specFile, "")
	} else {
		var text string
		if text, err = r.Store.RunSpec(ctx, run.ID); err == nil {
			sp, err = spec.Parse(run.SpecFile, []byte(text), filepath.Dir(run.SpecFile))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if sp.Collectors.RouterLogs == nil {
		return nil, nil, usagef("the spec of run %s has no collectors.router_logs: give a spec that has, with -f FILE", r.RunID)
	}
	pull, err := PullRouterLogs(ctx, r.Store, run, sp.Collectors.RouterLogs, open, r.log)
	if pull == nil {
		return nil, nil, err
	}
	found, cerr := CheckCollected(ctx, r.Store, run.ID, sp.Checks, pull.Collection.Pull.BudgetExhausted)
	return pull, found, errors.Join(err, cerr)
}

// ReadSpec reads and parses the spec file; relative paths in it are resolved against
// its directory. With a landscape file (tofu output -json of terraform/), its landscape
// and results_db replace the spec's, and the text returned is the spec with them in it.
// A file that cannot be read is an ErrUsage; the spec's problems are a spec.Errors.
func ReadSpec(file, landscape string) (*spec.Spec, []byte, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, usagef("read spec: %v", err)
	}
	if landscape != "" {
		land, err := os.ReadFile(landscape)
		if err != nil {
			return nil, nil, usagef("read the landscape: %v", err)
		}
		return spec.ParseWithLandscape(file, text, filepath.Dir(file), landscape, land)
	}
	sp, err := spec.Parse(file, text, filepath.Dir(file))
	if err != nil {
		return nil, nil, err
	}
	return sp, text, nil
}

// BuildReport makes the report of runs, each a run id or an export directory (none:
// the newest run recorded here), compared with opts.Baseline when set. Run ids are read
// from one results database, that of the first (OpenRun). A name that is neither is an
// ErrUsage.
func BuildReport(ctx context.Context, o StoreOptions, runs []string, opts report.Options) (*report.Report, error) {
	needDB, first := len(runs) == 0, ""
	for _, id := range append(append([]string(nil), runs...), opts.Baseline) {
		switch {
		case id == "" || report.IsExportDir(id):
		case resultsdb.ValidRunID(id):
			needDB = true
			if first == "" {
				first = id
			}
		default:
			return nil, usagef("%q is neither a run id (they look like 20261122-130501-3f9a) nor an export directory (with a manifest.json)", id)
		}
	}
	var store *resultsdb.Store // nil when every run is an export directory
	if needDB {
		rs, err := OpenRun(ctx, o, first)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		store = rs.Store
		if len(runs) == 0 {
			runs = []string{rs.RunID}
		}
	}
	return report.Build(ctx, report.Runs(store), runs, opts)
}
