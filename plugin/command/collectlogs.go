package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/elastic"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/file"
	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
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
			logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			store, runID, closeDB, err := rf.open(ctx, env, args, logger)
			if err != nil {
				return err
			}
			defer closeDB()
			run, err := store.GetRun(ctx, runID)
			if err != nil {
				return err
			}
			var sp *spec.Spec
			if *file != "" {
				sp, err = spec.Load(*file)
			} else {
				var text string
				if text, err = store.RunSpec(ctx, runID); err == nil {
					sp, err = spec.Parse(run.SpecFile, []byte(text), filepath.Dir(run.SpecFile))
				}
			}
			if err != nil {
				return err
			}
			if sp.Collectors.RouterLogs == nil {
				return usagef("the spec of run %s has no collectors.router_logs: give a spec that has, with -f FILE", runID)
			}
			return collectRouterLogs(ctx, env, store, run, sp.Collectors.RouterLogs, logger, nil)
		}
	},
}

// logSources builds a router log source from a spec's collectors.router_logs, by source
// kind; apps maps the run's app GUIDs to names. It returns the source and its name for
// the pull's record.
var logSources = map[spec.LogSource]func(rl *spec.RouterLogs, env *Env, apps map[string]string, log *slog.Logger) (routerlogs.Source, string, error){
	spec.SourceElasticsearch: elasticSource,
	spec.SourceFile:          fileSource,
}

// elasticSource reads Elasticsearch or OpenSearch; credentials come from the
// environment: CFBENCH_LOGS_API_KEY, or CFBENCH_LOGS_USERNAME and CFBENCH_LOGS_PASSWORD.
func elasticSource(rl *spec.RouterLogs, env *Env, _ map[string]string, log *slog.Logger) (routerlogs.Source, string, error) {
	cfg := elastic.Config{URLs: []string{rl.URL}, Index: rl.Index, Raw: rl.Raw, Logger: log,
		APIKey: env.Getenv("CFBENCH_LOGS_API_KEY"), Username: env.Getenv("CFBENCH_LOGS_USERNAME"), Password: env.Getenv("CFBENCH_LOGS_PASSWORD")}
	var pairs []string
	for name, path := range rl.Fields {
		pairs = append(pairs, name+"="+path)
	}
	if err := cfg.Fields.Set(strings.Join(pairs, ",")); err != nil {
		return nil, "", err
	}
	src, err := elastic.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return src, "elasticsearch:" + strings.TrimRight(rl.URL, "/") + "/" + rl.Index, nil
}

// fileSource reads a file of access-log lines (a router's log, cf logs output).
func fileSource(rl *spec.RouterLogs, _ *Env, apps map[string]string, _ *slog.Logger) (routerlogs.Source, string, error) {
	src, err := file.New(rl.Path, apps)
	if err != nil {
		return nil, "", err
	}
	abs, err := filepath.Abs(rl.Path)
	if err != nil {
		abs = rl.Path
	}
	return src, "file:" + abs, nil
}

// collectRouterLogs pulls, then prints the coverage table (or, with jrep, JSON events).
func collectRouterLogs(ctx context.Context, env *Env, store *resultsdb.Store, run *resultsdb.Run, rl *spec.RouterLogs, log *slog.Logger, jrep *jsonReporter) error {
	vs, err := store.RunVariants(ctx, run.ID)
	if err != nil {
		return err
	}
	apps := map[string]string{}
	for _, v := range vs {
		if v.AppGUID != "" {
			apps[v.AppGUID] = v.AppName
		}
	}
	src, name, err := logSources[rl.Source](rl, env, apps, log)
	if err != nil {
		return fmt.Errorf("router logs: %w", err)
	}
	budget := routerlogs.Budget{MaxDocuments: int64(rl.MaxDocuments), MaxRequestsPerSecond: rl.MaxRequestsPerSecond}
	lc, err := engine.CollectRouterLogs(ctx, store, run, name, src, budget, log)
	if err != nil && lc == nil {
		return err
	}
	cov, cerr := store.RouterCoverage(context.WithoutCancel(ctx), run.ID)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	p := lc.Pull
	if jrep != nil {
		rows := make([]map[string]any, len(cov))
		for i, c := range cov {
			rows[i] = map[string]any{"variant": c.Variant, "step": c.Step + 1, "sent": c.Sent, "found": c.Found, "missing": c.Missing(),
				"coverage": c.Share(), "gaps": report.CoverageVerdict(c, p.BudgetExhausted)}
		}
		jrep.emit("router_logs", map[string]any{"run": run.ID, "source": name, "retrieved": p.Retrieved, "stored": p.Stored,
			"foreign": p.Foreign, "unparseable": p.Unparseable, "budget_exhausted": p.BudgetExhausted, "coverage": rows})
		return err
	}
	fmt.Fprintf(env.Stdout, "router logs of run %s from %s: %d documents read, %d requests of this run stored, %d of other clients, %d unparseable",
		run.ID, name, p.Retrieved, p.Stored, p.Foreign, p.Unparseable)
	if p.BudgetExhausted {
		fmt.Fprint(env.Stdout, " (document budget spent)")
	}
	fmt.Fprintln(env.Stdout)
	if terr := report.CoverageTable(env.Stdout, cov, p.BudgetExhausted); terr != nil {
		return errors.Join(err, terr)
	}
	return err
}
