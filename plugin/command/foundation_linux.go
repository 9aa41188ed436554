package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
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
		accessTTL := fs.Duration("access-token-ttl", foundation.DefaultAccessTokenTTL, "start: how long an access token lives, as UAA's access_token_validity (cf-deployment's cf client: 20m); the cf CLI refreshes when less than a minute is left")
		refreshTTL := fs.Duration("refresh-token-ttl", foundation.DefaultRefreshTokenTTL, "start: how long a refresh token lives, as UAA's refresh_token_validity (cf-deployment's cf client: 720h)")
		rateLimit := fs.String("rate-limit", "", "start: turn on CC's rate limiter: N requests per user per interval, e.g. 2000/60m (CC's general_limit and reset_interval_in_minutes); off by default, as in CC")
		rateLimitAdmins := fs.Bool("rate-limit-admins", false, "start: count the admin's requests too (CC exempts admins, and the foundation's one user is its admin)")
		platformFlag := fs.String("platform-cpus", "", "start: CPUs the foundation's own work (API, router, staging, services' Postgres) runs on, e.g. 1 or 2-3, or any (default: those of no apps cell, as a CF's routers are not its cells)")
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) > 0 && args[0] == "chaos" {
				return foundationChaos(ctx, env, *dir, args[1:])
			}
			if len(args) != 1 {
				return usagef("give one of start, stop, status or chaos")
			}
			switch args[0] {
			case "start":
				if *metrics <= 0 {
					return usagef("--metrics-interval must be positive")
				}
				if *esURL == "" {
					*esURL = env.Getenv(esURLEnv)
				}
				if *accessTTL < time.Second || *refreshTTL < time.Second {
					return usagef("--access-token-ttl and --refresh-token-ttl must be a second or more")
				}
				cfg := foundation.Config{StateDir: *dir, ESURL: *esURL, StatsInterval: *metrics,
					AccessTokenTTL: *accessTTL, RefreshTokenTTL: *refreshTTL, RateLimitAdmins: *rateLimitAdmins}
				set := foundation.StartFlags{RateLimit: *rateLimit, Cells: *cellsFlag, PlatformCPUs: *platformFlag, LogQuota: *quotaFlag}
				if err := set.Apply(&cfg); err != nil {
					return usagef("%v", err)
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
						if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
							flags = append(flags, "--"+f.Name+"="+f.Value.String()) // a bool takes no separate value
						} else {
							flags = append(flags, "--"+f.Name, f.Value.String())
						}
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
			return usagef("unknown action %q: give one of start, stop, status or chaos", args[0])
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
