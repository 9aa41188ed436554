package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
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
			thresholds, err := report.ParseThresholds(*failOn)
			if err != nil {
				return usagef("%v", err)
			}
			if len(thresholds) > 0 && *baseline == "" {
				return usagef("--fail-on compares with a baseline: give --baseline RUN_ID")
			}
			// Every run id of a report is in one results database: the first run's.
			rep, err := engine.BuildReport(ctx, rf.options(env), args, report.Options{Baseline: *baseline, FailOn: thresholds})
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
