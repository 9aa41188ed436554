package command

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

var exportCmd = &Command{
	Name:        "export",
	PluginName:  "benchmark-export",
	Synopsis:    "RUN_ID [--dir DIR] [--tables T1,T2] [--db DSN] [--state-dir DIR] [--tunnel URL --tunnel-fingerprint FP [--tunnel-host HOST]]",
	Summary:     "Write the tables of a run to CSV files with a manifest (row counts, checksums)",
	ExampleArgs: "export 20261122-130501-3f9a --dir results/20261122-130501-3f9a",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var db dbFlags
		db.register(fs)
		var tun tunnelFlags
		tun.register(fs)
		var cff cfFlags
		cff.register(fs)
		dir := fs.String("dir", "", "output directory (default results/RUN_ID)")
		tables := fs.String("tables", "", "comma-separated tables to export (default all: "+strings.Join(engine.ExportTables(), ",")+")")
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 {
				return usagef("give exactly one RUN_ID")
			}
			runID := args[0]
			if !resultsdb.ValidRunID(runID) {
				return usagef("%q is not a run id (they look like 20261122-130501-3f9a)", runID)
			}
			if tun.url == "" && (tun.host != "" || tun.auth != "" || tun.fingerprint != "") {
				return usagef("--tunnel-auth, --tunnel-fingerprint and --tunnel-host go with --tunnel URL")
			}
			var list []string
			if *tables != "" {
				list = strings.Split(*tables, ",")
			}
			out := *dir
			if out == "" {
				out = filepath.Join("results", runID)
			}
			logger := env.logger()
			var (
				store   *resultsdb.Store
				closeDB func()
				err     error
			)
			if tun.url != "" || recordedOnCF(db.stateDir, runID) {
				// chisel's client allocates a buffer per WebSocket message; collecting
				// them at the default pace costs about a quarter of an export's CPU.
				defer debug.SetGCPercent(debug.SetGCPercent(400))
			}
			if tun.url != "" {
				store, closeDB, err = tun.openThrough(ctx, env, &db, logger)
			} else {
				// The run's record on this machine says where its results are: the
				// private Postgres, or a Cloud Foundry database behind its tunnel app.
				store, _, closeDB, err = openRecorded(ctx, env, runID, &db, &cff, logger)
			}
			if err != nil {
				return err
			}
			defer closeDB()
			m, err := engine.ExportRun(ctx, store, runID, out, list, logger)
			if err != nil {
				return err
			}
			printExport(env, out, m.RunID, m.RowCounts())
			return nil
		}
	},
}

// printExport says where run runID was exported and the rows of each table.
func printExport(env *Env, dir, runID, rows string) {
	fmt.Fprintf(env.Stdout, "exported run %s to %s (rows: %s)\n", runID, dir, rows)
}
