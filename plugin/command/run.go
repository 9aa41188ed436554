package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/export"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

var runCmd = &Command{
	Name:       "run",
	PluginName: "run-benchmark",
	Synopsis:   "-f FILE [--json] [--bin-dir DIR] [--db DSN] [--state-dir DIR]",
	Summary: "Run a benchmark spec: push the apps and generators (with a landscape: section, on the Cloud Foundry you are logged in to), " +
		"ramp the load, store every request, print a summary, export CSV",
	ExampleArgs: "run -f examples/demo.yml",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "the benchmark spec (benchmark.yml)")
		asJSON := fs.Bool("json", false, "print progress and the summary as JSON lines (one object per event) instead of text")
		binDir := fs.String("bin-dir", "", "directory with the linux/amd64 cfbench-worker and cfbench-tunnel binaries pushed to Cloud Foundry (default $CFBENCH_BIN_DIR, else beside this program, else ./bin)")
		var db dbFlags
		db.register(fs)
		var cff cfFlags
		cff.register(fs)
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
			onCF := sp.Landscape != nil
			if err := engine.Check(sp, onCF); err != nil {
				return err
			}
			if onCF && (db.dsn != "" || env.Getenv("CFBENCH_DB") != "") {
				return usagef("--db and CFBENCH_DB are for runs without Cloud Foundry: this spec has a landscape, and its results go to results_db.service_instance %s", sp.ResultsDB.ServiceInstance)
			}
			logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			rec := runRecord{Name: sp.Name, Spec: *file, DB: "private"}
			if db.dsn != "" || env.Getenv("CFBENCH_DB") != "" {
				rec.DB = "given"
			}
			remember := func(run *resultsdb.Run) {
				rec.ID, rec.Started = run.ID, run.Epoch
				if err := saveRecord(db.stateDir, rec); err != nil {
					logger.Warn("status and export will need the database given again", "err", err)
				}
			}
			var rep engine.Reporter = &textReporter{w: env.Stdout, started: remember}
			var jrep *jsonReporter
			if *asJSON {
				jrep = newJSONReporter(env.Stdout, remember)
				rep = jrep
			}
			opts := engine.Options{Reporter: rep, Logger: logger, LookupEnv: env.lookupEnv}
			if onCF {
				cf, api, err := cff.connect(env)
				if err != nil {
					return err
				}
				worker, tunnelBin, err := findBins(env, *binDir)
				if err != nil {
					return err
				}
				dep, err := engine.Deploy(ctx, sp, engine.DeployConfig{CF: cf, API: api, WorkerBin: worker, TunnelBin: tunnelBin, Reporter: rep, Logger: logger,
					LookupEnv: env.lookupEnv})
				if err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("%w before the run started: %v", engine.ErrAborted, err)
					}
					return err
				}
				defer dep.Close()
				opts.Store, opts.Deployment = dep.Store, dep
				rec.DB, rec.Access = "cf", &dep.Access
				rep.Note("results db: " + sp.ResultsDB.ServiceInstance + " through the tunnel app " + dep.Access.TunnelApp)
			} else {
				store, where, closeDB, err := db.open(ctx, env)
				if err != nil {
					return err
				}
				defer closeDB()
				opts.Store = store
				rep.Note("results db: " + where)
			}
			res, runErr := engine.Run(ctx, sp, string(text), opts)
			if res == nil {
				return runErr
			}
			exportHint := fmt.Sprintf("%s %s", env.command("export"), res.Run.ID)
			if rec.DB == "private" && db.stateDir != ".cfbench" {
				exportHint += " --state-dir " + db.stateDir
			}
			if jrep != nil {
				rows := make([]map[string]any, len(res.Summaries))
				for i, s := range res.Summaries {
					rows[i] = stepFields(s)
				}
				jrep.emit("summary", map[string]any{"run": res.Run.ID, "status": string(res.Run.Status), "reason": res.Run.Reason, "steps": rows})
			} else {
				fmt.Fprintf(env.Stdout, "\nrun %s %s", res.Run.ID, res.Run.Status)
				if res.Run.Reason != "" {
					fmt.Fprintf(env.Stdout, " (%s)", res.Run.Reason)
				}
				fmt.Fprintln(env.Stdout, "; latencies from the intended send time, warm-up excluded")
				if err := report.Summary(env.Stdout, res.Summaries); err != nil {
					return err
				}
				for _, f := range res.Findings {
					fmt.Fprintf(env.Stdout, "%s: %s step %d: %s: %s\n", f.Level, f.Variant, f.Step+1, f.Check, f.Message)
				}
			}
			if errors.Is(runErr, engine.ErrAborted) {
				fmt.Fprintf(env.Stderr, "\nThe run was interrupted; what it collected is kept.\nTry: %s\n", exportHint)
				return runErr
			}
			if rl := sp.Collectors.RouterLogs; rl != nil {
				rep.Note(fmt.Sprintf("waiting %s for the run's last router log lines to arrive, then pulling them", rl.Delay))
				if wait.For(ctx, rl.Delay) {
					if err := collectRouterLogs(ctx, env, opts.Store, res.Run, rl, logger, jrep); err != nil {
						// The run's own data is complete; the logs can be pulled again.
						fmt.Fprintf(env.Stderr, "router logs: %v\nTry: %s %s\n", err, env.command("collect-logs"), res.Run.ID)
					}
				}
			}
			dir := filepath.Join(sp.Export.Dir, res.Run.ID)
			m, err := export.Export(context.WithoutCancel(ctx), opts.Store, res.Run.ID, dir, sp.Export.Tables)
			if err != nil {
				return errors.Join(runErr, fmt.Errorf("export: %w. Try: %s", err, exportHint))
			}
			if jrep != nil {
				jrep.emit("export", map[string]any{"run": res.Run.ID, "dir": dir, "files": m.Files})
			} else {
				fmt.Fprintln(env.Stdout)
				printExport(env, dir, m)
				fmt.Fprintf(env.Stdout, "status: %s %s\n", env.command("status"), res.Run.ID)
			}
			return runErr
		}
	},
}

// findBins finds the generator and tunnel binaries that runs on Cloud Foundry push.
func findBins(env *Env, flagDir string) (worker, tunnelBin string, err error) {
	dirs := env.BinDirs
	if d := env.Getenv("CFBENCH_BIN_DIR"); d != "" {
		dirs = []string{d}
	}
	if flagDir != "" {
		dirs = []string{flagDir}
	}
	for _, d := range dirs {
		w, t := filepath.Join(d, "cfbench-worker"), filepath.Join(d, "cfbench-tunnel")
		if isFile(w) && isFile(t) {
			return w, t, nil
		}
	}
	return "", "", usagef("cfbench-worker and cfbench-tunnel (linux/amd64) not found in %s: build them with make build (into bin/), then give --bin-dir DIR or CFBENCH_BIN_DIR", strings.Join(dirs, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
