package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
)

// foundationCmd runs the local foundation. It is a command of the standalone CLI only:
// a long-running server has no place inside a cf CLI invocation. On Linux only
// (foundation_other.go says so elsewhere): its cells are cgroups.
// esURLEnv gives foundation start its --es-url.
const esURLEnv = "CFBENCH_ES_URL"

var foundationCmd = &Command{
	Name:        "foundation",
	Synopsis:    foundationSynopsis,
	Summary:     foundationSummary,
	ExampleArgs: foundationExample,
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		dir := fs.String("state-dir", ".cfbench/foundation", "directory holding the foundation's state, logs and settings")
		detach := fs.Bool("detach", false, "start: run in the background and return once it answers")
		metrics := fs.Duration("metrics-interval", 15*time.Second, "start: how often instance usage is sampled, like Diego's container metrics (stats are up to this old)")
		esURL := fs.String("es-url", "", "start: ship router access-log lines to this Elasticsearch, shaped as CF's Logstash pipeline shapes them (default $"+esURLEnv+"; a URL with user:password is better given there, off the command line)")
		quotaFlag := fs.String("log-quota", "", "start: keep at most N router lines per window, like hosted logging (e.g. 1000/1h), in Elasticsearch (--es-url) or else in STATE-DIR/"+foundation.LogStoreFile+"; the rest are dropped and counted")
		cellsFlag := fs.String("cells", "", "start: cells (isolation segments) and their CPUs, e.g. apps=0,loadgen=1 or apps=0-3,loadgen=4-7 (default: the CPUs split in two)")
		platformFlag := fs.String("platform-cpus", "", "start: CPUs the foundation's own work (API, router, staging, services' Postgres) runs on, e.g. 1 or 2-3, or any (default: those of no apps cell, as a CF's routers are not its cells)")
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 {
				return usagef("give one of start, stop or status")
			}
			switch args[0] {
			case "start":
				if *metrics <= 0 {
					return usagef("--metrics-interval must be positive")
				}
				if *esURL == "" {
					*esURL = env.Getenv(esURLEnv)
				}
				cfg := foundation.Config{StateDir: *dir, ESURL: *esURL, StatsInterval: *metrics}
				var err error
				if cfg.Cells, err = cells.ParseCells(*cellsFlag); err != nil {
					return usagef("--cells: %v", err)
				}
				switch *platformFlag {
				case "":
					cfg.PlatformCPUs = foundation.AppsFreeCPUs(cfg.Cells, runtime.NumCPU())
				case "any":
				default:
					if cfg.PlatformCPUs, err = cgroup.ParseCPUList(*platformFlag); err != nil {
						return usagef("--platform-cpus: %v", err)
					}
				}
				if cfg.LogQuota, cfg.LogQuotaWindow, err = logship.ParseQuota(*quotaFlag); err != nil {
					return usagef("--log-quota: %v", err)
				}
				if !*detach {
					return serveFoundation(ctx, env, cfg)
				}
				if env.Spawn == nil {
					return errors.New("cannot start a background process from here")
				}
				// The background process gets the same flags, but the Elasticsearch URL (it
				// may carry a password) through its environment: a command line is
				// readable by every user of the machine.
				var flags, childEnv []string
				fs.Visit(func(f *flag.Flag) {
					if f.Name != "detach" && f.Name != "state-dir" && f.Name != "es-url" {
						flags = append(flags, "--"+f.Name, f.Value.String())
					}
				})
				if *esURL != "" {
					childEnv = append(childEnv, esURLEnv+"="+*esURL)
				}
				pid, info, err := foundation.Detach(ctx, *dir, env.Spawn, flags, childEnv)
				if err != nil {
					return err
				}
				printFoundation(env, info, fmt.Sprintf("Local foundation running in the background (pid %d, log %s)", pid, foundation.LogFile(*dir)))
				fmt.Fprintf(env.Stdout, "Stop it with: cf-benchmark foundation stop --state-dir %s\n", *dir)
				return nil
			case "stop":
				pid, err := foundation.Stop(ctx, *dir)
				if errors.Is(err, foundation.ErrNotRunning) {
					fmt.Fprintf(env.Stdout, "No foundation is running from %s.\n", *dir)
					return nil
				}
				if err == nil {
					fmt.Fprintf(env.Stdout, "Stopped the foundation (pid %d).\n", pid)
				}
				return err
			case "status":
				st, err := foundation.ReadStatus(ctx, *dir)
				if errors.Is(err, foundation.ErrNotRunning) {
					fmt.Fprintf(env.Stdout, "No foundation is running from %s. Start one with: cf-benchmark foundation start --detach --state-dir %s\n", *dir, *dir)
				}
				if err != nil {
					return err
				}
				state := "answering"
				if !st.Answering {
					state = "NOT answering (starting up, or stuck: see " + foundation.LogFile(*dir) + ")"
				}
				printFoundation(env, st.Info, fmt.Sprintf("Local foundation running (pid %d), API %s", st.PID, state))
				return nil
			}
			return usagef("unknown action %q: give one of start, stop or status", args[0])
		}
	},
}

// serveFoundation runs the foundation in the foreground until ctx ends (Ctrl-C, SIGTERM).
func serveFoundation(ctx context.Context, env *Env, cfg foundation.Config) error {
	cfg.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err := foundation.Serve(ctx, cfg, func(info foundation.Info) {
		printFoundation(env, info, "Local foundation running")
		fmt.Fprintln(env.Stdout, "Stop it with Ctrl-C.")
	})
	var running *foundation.RunningError
	switch {
	case errors.As(err, &running):
		return fmt.Errorf("%w; stop it with: cf-benchmark foundation stop --state-dir %s", err, running.Dir)
	case err == nil && ctx.Err() != nil:
		fmt.Fprintln(env.Stderr, "stopping the foundation (app instances get SIGTERM, 10 s grace)")
	}
	return err
}

// isNotRunning reports whether err says no foundation is running (ExitNotRunning).
func isNotRunning(err error) bool { return errors.Is(err, foundation.ErrNotRunning) }
