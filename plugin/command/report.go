package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// errThresholds is returned when the report's --fail-on thresholds failed; it maps to
// ExitThresholds.
var errThresholds = errors.New("thresholds failed")

// reportFormats are the forms of --format, each a method of *report.Report.
var reportFormats = map[string]func(*report.Report, io.Writer) error{
	"text": (*report.Report).WriteText,
	"json": (*report.Report).WriteJSON,
	"html": (*report.Report).WriteHTML,
}

var reportCmd = &Command{
	Name:        "report",
	PluginName:  "benchmark-report",
	Synopsis:    "[RUN_ID|EXPORT_DIR…] [--baseline RUN_ID|EXPORT_DIR] [--format text|json|html] [-o FILE] [--fail-on SPEC] [--db DSN] [--state-dir DIR]",
	Summary:     "What a run's numbers mean: capacity at the SLO, steps, scaling per CPU, latency by layer, findings, variants and runs side by side; text, JSON or one offline HTML file; from the results database or from a run's export directory (results/RUN_ID), the same report",
	ExampleArgs: "report 20261122-130501-3f9a --baseline results/20261121-090000-77aa --format html -o report.html --fail-on capacity=-10%,p99=+20%",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		baseline := fs.String("baseline", "", "compare the runs with this run (a run id, or its export directory): the change of capacity, throughput and latency per variant")
		format := fs.String("format", "text", "text, json (the documented contract, report/REPORT.md) or html (one self-contained file)")
		out := fs.String("o", "", "write the report to FILE instead of standard output")
		failOn := fs.String("fail-on", "", "thresholds against --baseline, e.g. capacity=-10%,p99=+20% (capacity, throughput, mean, p50, p90, p99, p999): "+
			"exit 4 when a change goes beyond one, or when one cannot be judged")
		var rf recordedFlags
		rf.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			write, ok := reportFormats[*format]
			if !ok {
				return usagef("--format %q: want text, json or html", *format)
			}
			needDB := len(args) == 0
			for _, id := range append(slices.Clone(args), *baseline) {
				switch {
				case id == "" || report.IsExportDir(id):
				case resultsdb.ValidRunID(id):
					needDB = true
				default:
					return usagef("%q is neither a run id (they look like 20261122-130501-3f9a) nor an export directory (with a manifest.json)", id)
				}
			}
			thresholds, err := report.ParseThresholds(*failOn)
			if err != nil {
				return usagef("%v", err)
			}
			if len(thresholds) > 0 && *baseline == "" {
				return usagef("--fail-on compares with a baseline: give --baseline RUN_ID")
			}
			ids := args
			var store *resultsdb.Store // nil when every run is an export directory
			if needDB {
				logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				first := ""
				for _, id := range append(slices.Clone(args), *baseline) {
					if first == "" && resultsdb.ValidRunID(id) {
						first = id
					}
				}
				// Every run id of a report is in one results database: the first run's.
				db, runID, closeDB, err := openRecorded(ctx, env, first, &rf.db, &rf.cf, logger)
				if err != nil {
					return err
				}
				defer closeDB()
				store = db
				if len(ids) == 0 {
					ids = []string{runID}
				}
			}
			rep, err := report.Build(ctx, report.Runs(store), ids, report.Options{Baseline: *baseline, FailOn: thresholds})
			if err != nil {
				return err
			}
			if err := writeReport(env, *out, rep, write); err != nil {
				return err
			}
			if rep.Failed() {
				for _, t := range rep.Thresholds {
					if t.Failed {
						fmt.Fprintf(env.Stderr, "threshold %s failed: %s\n", t.Spec, t.Detail)
					}
				}
				return errThresholds
			}
			return nil
		}
	},
}

// writeReport writes rep to path, or to standard output when path is "".
func writeReport(env *Env, path string, rep *report.Report, write func(*report.Report, io.Writer) error) error {
	if path == "" {
		return write(rep, env.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if err := write(rep, f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintf(env.Stderr, "wrote %s\n", path)
	return nil
}
