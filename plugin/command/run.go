package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/cf-benchmark/cf-benchmark/engine"
)

var runCmd = &Command{
	Name:       "run",
	PluginName: "run-benchmark",
	Synopsis:   "-f FILE [--landscape FILE] [--json] [--dashboard [ADDR]] [--metrics prometheus[:ADDR]|otlp=URL] [--bin-dir DIR] [--db DSN] [--state-dir DIR]",
	Summary: "Run a benchmark spec: push the apps and generators (with a landscape: section, on the Cloud Foundry you are logged in to), " +
		"ramp the load, store every request, print a summary, export CSV",
	ExampleArgs: "run -f examples/demo.yml",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "the benchmark spec (benchmark.yml)")
		landscape := fs.String("landscape", "", "a FILE written by tofu (or terraform) output -json for terraform/: its landscape output replaces the spec's landscape and results_db sections")
		asJSON := fs.Bool("json", false, "print progress and the summary as JSON lines (one object per event) instead of text")
		binDir := fs.String("bin-dir", "", "directory with the linux/amd64 cfbench program pushed to Cloud Foundry as the generators, the tunnel, the relay and the drain (default $CFBENCH_BIN_DIR, else the one this plugin carries)")
		var db dbFlags
		db.register(fs)
		var cff cfFlags
		cff.register(fs)
		var dash dashboardFlag
		dash.register(fs)
		met := fs.String("metrics", "", "publish the run's figures as it goes: prometheus[:ADDR] serves them for scraping at http://ADDR/metrics "+
			"(default 127.0.0.1 and a free port, printed), otlp=URL pushes them to an OTLP/HTTP receiver every 10 s; the report's own numbers, then its final ones")
		return func(ctx context.Context, env *Env, args []string) error {
			args = dash.take(args, nil)
			watch, err := dash.watch(*met)
			if err != nil {
				return err
			}
			if *file == "" || len(args) > 0 {
				return usagef("give the spec with -f FILE")
			}
			sp, text, err := engine.ReadSpec(*file, *landscape)
			if err != nil {
				return err
			}
			// The quotas are checked by the session, once it has the cf CLI's connection.
			pushed, plan, err := preflight(ctx, env, sp, db.given(env) != "", *binDir, nil)
			if err != nil {
				return err
			}
			logger := env.logger()
			cfg := engine.SessionConfig{Pushed: pushed, LogSource: engine.LogSources(env.Getenv, logger), Logger: logger,
				LookupEnv: env.lookupEnv, SpillDir: filepath.Join(db.stateDir, "spill"), Plan: plan}
			rec := engine.RunRecord{Name: sp.Name, Spec: *file, DB: engine.StoreOnCF}
			if sp.Landscape != nil {
				if cfg.CF, cfg.API, err = cff.connect(env); err != nil {
					return err
				}
			} else {
				store, kind, where, closeDB, err := engine.OpenStore(ctx, db.options(env, nil))
				if err != nil {
					return err
				}
				defer closeDB()
				cfg.Store, cfg.StoreName, rec.DB = store, where, kind
			}
			// The dashboard and the metrics outlive an interrupt: the export and the report still come.
			if err := watch.Start(context.WithoutCancel(ctx), logger); err != nil {
				return err
			}
			defer watch.Close()
			dashURL := watch.DashboardURL()
			where, kind := watch.Metrics()
			var display engine.Display = &textReporter{env: env}
			if *asJSON {
				jr := newJSONReporter(env)
				jr.dashboard, jr.metrics = dashURL, where
				display = jr
			} else {
				if dashURL != "" {
					printDashboard(env, dashURL)
				}
				if where != "" {
					printMetrics(env, where, kind)
				}
			}
			cfg.Reporter = watch.Reporter(engine.Remembering(engine.Displaying(display), db.stateDir, rec, logger), cfg.Store)
			o, err := engine.RunSession(ctx, sp, string(text), cfg)
			if cfg.CF != nil && !*asJSON {
				fmt.Fprintln(env.Stdout, cfg.CF.Requests()) // CC requests: N (X/min; budget: …)
			}
			if o == nil {
				return err
			}
			hint := fmt.Sprintf("%s %s", env.command("export"), o.Run.ID)
			if rec.DB == engine.StorePrivate && db.stateDir != ".cfbench" {
				hint += " --state-dir " + db.stateDir
			}
			var stageErr *engine.StageError
			switch {
			case errors.Is(err, engine.ErrAborted):
				fmt.Fprintf(env.Stderr, "\nThe run was interrupted; what it collected is kept.\nTry: %s\n", hint)
			case errors.As(err, &stageErr) && stageErr.Stage == engine.StageExport:
				err = fmt.Errorf("%w. Try: %s", err, hint)
			}
			return err
		}
	},
}
