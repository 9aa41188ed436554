package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/collectors/export"
	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

var runCmd = &Command{
	Name:        "run",
	PluginName:  "run-benchmark",
	Synopsis:    "-f FILE [--db DSN] [--state-dir DIR]",
	Summary:     "Run a benchmark spec: ramp the load, store every request, print a summary, export CSV",
	ExampleArgs: "run -f examples/demo.yml",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "the benchmark spec (benchmark.yml)")
		var db dbFlags
		db.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			if *file == "" || len(args) > 0 {
				return usagef("give the spec with -f FILE")
			}
			text, err := os.ReadFile(*file)
			if err != nil {
				return usagef("read spec: %v", err)
			}
			sp, err := spec.Parse(*file, text, filepath.Dir(*file))
			if err != nil {
				return err
			}
			if err := engine.Check(sp); err != nil {
				return err
			}
			store, where, closeDB, err := db.open(ctx, env)
			if err != nil {
				return err
			}
			defer closeDB()
			fmt.Fprintf(env.Stdout, "results db: %s\n", where)
			logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			res, runErr := engine.Run(ctx, sp, string(text), engine.Options{Store: store, Progress: env.Stdout, Logger: logger})
			if res == nil {
				return runErr
			}
			fmt.Fprintf(env.Stdout, "\nrun %s %s", res.Run.ID, res.Run.Status)
			if res.Run.Reason != "" {
				fmt.Fprintf(env.Stdout, " (%s)", res.Run.Reason)
			}
			fmt.Fprintln(env.Stdout, "; latencies from the intended send time, warm-up excluded")
			if err := report.Summary(env.Stdout, res.Summaries); err != nil {
				return err
			}
			if errors.Is(runErr, engine.ErrAborted) {
				fmt.Fprintf(env.Stdout, "\nThe run was interrupted; what it collected is kept.\nTry: cf-benchmark export %s --state-dir %s\n", res.Run.ID, db.stateDir)
				return runErr
			}
			dir := filepath.Join(sp.Export.Dir, res.Run.ID)
			m, err := export.Export(context.WithoutCancel(ctx), store, res.Run.ID, dir, sp.Export.Tables)
			if err != nil {
				return errors.Join(runErr, fmt.Errorf("export: %w", err))
			}
			fmt.Fprintln(env.Stdout)
			printExport(env, dir, m)
			return runErr
		}
	},
}
