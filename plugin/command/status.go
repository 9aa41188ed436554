package command

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
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
			args = dash.take(args, engine.IsRunID)
			watch, err := dash.watch("")
			if err != nil {
				return err
			}
			rs, err := rf.open(ctx, env, args)
			if err != nil {
				// The run's database is out of reach (the demo's foundation is gone, the
				// cf CLI is logged out): its export directory may still have it all. A
				// usage error (a database to give again) stays one.
				if dir, m := report.FindExport(exportDirs(rf.options(env), args)); m != nil && !isUsage(err) {
					report.Exported(env.Stdout, dir, m, err)
					fmt.Fprintf(env.Stdout, "\nTry: %s %s\n", env.command("report"), dir)
					return nil
				}
				return err
			}
			defer rs.Close()
			// A run whose process died stays "running" until someone looks: this is it.
			rs.AbortDead(ctx, func(msg string) { fmt.Fprintln(env.Stdout, msg) })
			if dash.given {
				return followRun(ctx, env, rs, watch)
			}
			return printStatus(ctx, env, rs)
		}
	},
}

func printStatus(ctx context.Context, env *Env, rs *engine.RunStore) error {
	st, err := rs.State(ctx, env.Now())
	if err != nil {
		return err
	}
	run := st.Run
	fmt.Fprintf(env.Stdout, "run %s (%s, %s): %s", run.ID, run.Name, run.SpecFile, run.Status)
	if run.Reason != "" {
		fmt.Fprintf(env.Stdout, " (%s)", run.Reason)
	}
	fmt.Fprintf(env.Stdout, "\nstarted %s, %s\n", run.Started.Local().Format(time.DateTime), st.Elapsed.Round(time.Second))
	if len(st.Summaries) > 0 {
		fmt.Fprintln(env.Stdout)
		if err := report.Summary(env.Stdout, st.Summaries); err != nil {
			return err
		}
	}
	for _, a := range st.Alive {
		fmt.Fprintf(env.Stdout, "%s: %d generator instance(s) alive\n", a.Variant, a.Alive)
	}
	if len(st.Events) > 0 {
		fmt.Fprintln(env.Stdout, "\nevents:")
		for _, e := range st.Events {
			where := e.Variant
			if e.Step >= 0 {
				where += fmt.Sprintf(" step %d", e.Step+1)
			}
			fmt.Fprintf(env.Stdout, "  %s  %-5s %-6s %s: %s\n", e.At.Local().Format(time.TimeOnly), e.Level, e.Kind, where, e.Message)
		}
	}
	if !st.Running {
		fmt.Fprintf(env.Stdout, "\nTry: %s %s\n", env.command("export"), rs.RunID)
	}
	return nil
}

// exportDirs are where the export directory of the run args name (the newest recorded
// run without one) may be, and that run's id (engine.StoreOptions.ExportDirs).
func exportDirs(o engine.StoreOptions, args []string) ([]string, string) {
	id, err := runIDArg(args)
	if err != nil {
		return nil, ""
	}
	return o.ExportDirs(id)
}

// followRun serves the dashboard of the run, under way in another process, until it
// ends (the page then shows its report) or the user stops watching.
func followRun(ctx context.Context, env *Env, rs *engine.RunStore, watch *engine.Watch) error {
	st, err := rs.State(ctx, env.Now())
	if err != nil {
		return err
	}
	id := rs.RunID
	if !st.Running {
		fmt.Fprintf(env.Stdout, "run %s is %s: nothing live to show.\nTry: %s %s --format html -o report.html\n", id, st.Run.Status, env.command("report"), id)
		return nil
	}
	if err := watch.Start(ctx, env.logger()); err != nil {
		return err
	}
	defer watch.Close()
	printDashboard(env, watch.DashboardURL())
	if err := rs.Follow(ctx, watch); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stdout, "stopped watching; run %s goes on\n", id)
			return nil
		}
		return err
	}
	fmt.Fprintf(env.Stdout, "run %s ended; the page shows its report\n", id)
	return nil
}
