package command

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
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
			if !engine.IsRunID(runID) {
				return usagef("%q is not a run id (they look like 20261122-130501-3f9a)", runID)
			}
			so := db.options(env, &cff)
			var err error
			if so.Tunnel, err = tun.server(env); err != nil {
				return err
			}
			var list []string
			if *tables != "" {
				list = strings.Split(*tables, ",")
			}
			out := *dir
			if out == "" {
				out = filepath.Join("results", runID)
			}
			// Through --tunnel, else where the run's record on this machine says: the
			// private Postgres, or a Cloud Foundry database behind its tunnel app.
			rs, err := engine.OpenRun(ctx, so, runID)
			if err != nil {
				return err
			}
			defer rs.Close()
			m, err := rs.Export(ctx, out, list)
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
