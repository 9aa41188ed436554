package command

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/export"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

var exportCmd = &Command{
	Name:        "export",
	PluginName:  "benchmark-export",
	Synopsis:    "RUN_ID [--dir DIR] [--tables T1,T2] [--db DSN] [--state-dir DIR]",
	Summary:     "Write the tables of a run to CSV files with a manifest (row counts, checksums)",
	ExampleArgs: "export 20261122-130501-3f9a --dir results/20261122-130501-3f9a",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var db dbFlags
		db.register(fs)
		dir := fs.String("dir", "", "output directory (default results/RUN_ID)")
		tables := fs.String("tables", "", "comma-separated tables to export (default all: "+strings.Join(export.Tables, ",")+")")
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 {
				return usagef("give exactly one RUN_ID")
			}
			runID := args[0]
			if !resultsdb.ValidRunID(runID) {
				return usagef("%q is not a run id (they look like 20261122-130501-3f9a)", runID)
			}
			var list []string
			if *tables != "" {
				list = strings.Split(*tables, ",")
			}
			out := *dir
			if out == "" {
				out = filepath.Join("results", runID)
			}
			store, _, closeDB, err := db.open(ctx, env)
			if err != nil {
				return err
			}
			defer closeDB()
			m, err := export.Export(ctx, store, runID, out, list)
			if err != nil {
				return err
			}
			printExport(env, out, m)
			return nil
		}
	},
}

func printExport(env *Env, dir string, m *export.Manifest) {
	var parts []string
	for _, f := range m.Files {
		parts = append(parts, fmt.Sprintf("%s %d", f.Table, f.Rows))
	}
	fmt.Fprintf(env.Stdout, "exported run %s to %s (rows: %s)\n", m.RunID, dir, strings.Join(parts, ", "))
}
