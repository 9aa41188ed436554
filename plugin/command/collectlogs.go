package command

import (
	"context"
	"errors"
	"flag"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

var collectLogsCmd = &Command{
	Name:        "collect-logs",
	PluginName:  "benchmark-collect-logs",
	Synopsis:    "[RUN_ID] [-f FILE] [--db DSN] [--state-dir DIR]",
	Summary:     "Pull a run's gorouter access logs (Elasticsearch/OpenSearch or a file), join them to its requests, report coverage per step",
	ExampleArgs: "collect-logs 20261122-130501-3f9a",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "take collectors.router_logs from this spec instead of the one the run was started with")
		var rf recordedFlags
		rf.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			logger := env.logger()
			store, runID, closeDB, err := rf.open(ctx, env, args, logger)
			if err != nil {
				return err
			}
			defer closeDB()
			run, err := store.GetRun(ctx, runID)
			if err != nil {
				return err
			}
			sp, err := runSpec(ctx, store, run, *file)
			if err != nil {
				return err
			}
			if sp.Collectors.RouterLogs == nil {
				return usagef("the spec of run %s has no collectors.router_logs: give a spec that has, with -f FILE", runID)
			}
			pull, err := engine.PullRouterLogs(ctx, store, run, sp.Collectors.RouterLogs, engine.LogSources(env.Getenv, logger), logger)
			if pull == nil {
				return err
			}
			printRouterLogs(env, run.ID, pull)
			found, cerr := engine.CheckCollected(ctx, store, run.ID, sp.Checks, pull.Collection.Pull.BudgetExhausted)
			for _, f := range found {
				printFinding(env, f.Variant, f.Step, f.Finding)
			}
			return errors.Join(err, cerr)
		}
	},
}

// runSpec is the spec file given, or else the spec run was started with.
func runSpec(ctx context.Context, store *resultsdb.Store, run *resultsdb.Run, file string) (*spec.Spec, error) {
	if file != "" {
		sp, _, err := readSpec(file, "")
		return sp, err
	}
	text, err := store.RunSpec(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	return spec.Parse(run.SpecFile, []byte(text), filepath.Dir(run.SpecFile))
}
