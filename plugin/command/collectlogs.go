package command

import (
	"context"
	"flag"

	"github.com/cf-benchmark/cf-benchmark/engine"
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
			rs, err := rf.open(ctx, env, args)
			if err != nil {
				return err
			}
			defer rs.Close()
			pull, found, err := rs.PullRouterLogs(ctx, *file, engine.LogSources(env.Getenv, env.logger()))
			if pull == nil {
				return err
			}
			printRouterLogs(env, rs.RunID, pull)
			for _, f := range found {
				printFinding(env, f.Variant, f.Step, f.Finding)
			}
			return err
		}
	},
}
