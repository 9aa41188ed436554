package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/plugin/statedir"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

var statusCmd = &Command{
	Name:        "status",
	PluginName:  "benchmark-status",
	Synopsis:    "[RUN_ID] [--dashboard [ADDR]] [--db DSN] [--state-dir DIR]",
	Summary:     "Show a run in progress or done (default: the newest run started from this machine): status, steps so far, live generators, findings",
	ExampleArgs: "status 20261122-130501-3f9a",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var rf recordedFlags
		rf.register(fs)
		var dash dashboardFlag
		dash.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			args = dash.take(args, resultsdb.ValidRunID)
			watch, err := dash.watch("")
			if err != nil {
				return err
			}
			logger := env.logger()
			store, runID, closeDB, err := rf.open(ctx, env, args, logger)
			if err != nil {
				// The run's database is out of reach (the demo's foundation is gone, the
				// cf CLI is logged out): its export directory may still have it all. A
				// usage error (a database to give again) stays one.
				var ue *usageError
				if dir, m := report.FindExport(exportDirs(rf.db.stateDir, args)); m != nil && !errors.As(err, &ue) {
					report.Exported(env.Stdout, dir, m, err)
					fmt.Fprintf(env.Stdout, "\nTry: %s %s\n", env.command("report"), dir)
					return nil
				}
				return err
			}
			defer closeDB()
			// A run whose process died stays "running" until someone looks: this is it.
			engine.AbortDeadRuns(ctx, store, rf.scaleDown(env, runID), func(msg string) { fmt.Fprintln(env.Stdout, msg) }, logger)
			if dash.given {
				return followRun(ctx, env, store, runID, watch, logger)
			}
			return printStatus(ctx, env, store, runID)
		}
	},
}

func printStatus(ctx context.Context, env *Env, store *resultsdb.Store, runID string) error {
	run, err := store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "run %s (%s, %s): %s", run.ID, run.Name, run.SpecFile, run.Status)
	if run.Reason != "" {
		fmt.Fprintf(env.Stdout, " (%s)", run.Reason)
	}
	end := env.Now()
	if run.Ended != nil {
		end = *run.Ended
	}
	fmt.Fprintf(env.Stdout, "\nstarted %s, %s\n", run.Started.Local().Format(time.DateTime), end.Sub(run.Started).Round(time.Second))
	sums, err := store.StepSummaries(ctx, runID)
	if err != nil {
		return err
	}
	if len(sums) > 0 {
		fmt.Fprintln(env.Stdout)
		if err := report.Summary(env.Stdout, sums); err != nil {
			return err
		}
	}
	if run.Status == resultsdb.RunRunning {
		seen := map[string]bool{}
		for _, s := range sums {
			if seen[s.Variant] {
				continue
			}
			seen[s.Variant] = true
			if live, err := store.LiveWorkers(ctx, runID, s.Variant); err == nil {
				fmt.Fprintf(env.Stdout, "%s: %d generator instance(s) alive\n", s.Variant, live)
			}
		}
	}
	events, err := store.Events(ctx, runID)
	if err != nil {
		return err
	}
	if len(events) > 0 {
		fmt.Fprintln(env.Stdout, "\nevents:")
		for _, e := range events {
			where := e.Variant
			if e.Step >= 0 {
				where += fmt.Sprintf(" step %d", e.Step+1)
			}
			fmt.Fprintf(env.Stdout, "  %s  %-5s %-6s %s: %s\n", e.At.Local().Format(time.TimeOnly), e.Level, e.Kind, where, e.Message)
		}
	}
	if run.Status != resultsdb.RunRunning {
		fmt.Fprintf(env.Stdout, "\nTry: %s %s\n", env.command("export"), runID)
	}
	return nil
}

// exportDirs are where the export directory of the run args name (the newest recorded
// run without one) may be: SPEC's export.dir as the run wrote it, then results (the
// default), relative to the working directory as the run's was; and that run's id.
func exportDirs(stateDir string, args []string) ([]string, string) {
	id, err := runIDArg(args)
	if err != nil {
		return nil, ""
	}
	rec, _ := statedir.LoadRecord(stateDir, id)
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

// followRun serves the dashboard of run id, under way in another process, until it
// ends (the page then shows its report) or the user stops watching.
func followRun(ctx context.Context, env *Env, store *resultsdb.Store, id string, watch *engine.Watch, log *slog.Logger) error {
	run, err := store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.Status != resultsdb.RunRunning {
		fmt.Fprintf(env.Stdout, "run %s is %s: nothing live to show.\nTry: %s %s --format html -o report.html\n", id, run.Status, env.command("report"), id)
		return nil
	}
	if err := watch.Start(ctx, log); err != nil {
		return err
	}
	defer watch.Close()
	printDashboard(env, watch.DashboardURL())
	if err := watch.Follow(ctx, store, id); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stdout, "stopped watching; run %s goes on\n", id)
			return nil
		}
		return err
	}
	fmt.Fprintf(env.Stdout, "run %s ended; the page shows its report\n", id)
	return nil
}
