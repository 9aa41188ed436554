package command

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

var statusCmd = &Command{
	Name:        "status",
	PluginName:  "benchmark-status",
	Synopsis:    "[RUN_ID] [--db DSN] [--state-dir DIR]",
	Summary:     "Show a run in progress or done (default: the newest run started from this machine): status, steps so far, live generators, findings",
	ExampleArgs: "status 20261122-130501-3f9a",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var rf recordedFlags
		rf.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			logger := env.logger()
			store, runID, closeDB, err := rf.open(ctx, env, args, logger)
			if err != nil {
				return err
			}
			defer closeDB()
			// A run whose process died stays "running" until someone looks: this is it.
			engine.AbortDeadRuns(ctx, store, rf.scaleDown(env, runID), func(msg string) { fmt.Fprintln(env.Stdout, msg) }, logger)
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
