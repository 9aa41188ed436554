// Package harness runs the load-generator benchmark: nginx as the target on one core,
// every generator on another, closed-loop runs interleaved across generators, then
// for each generator with an open loop the highest rate it holds (package ratesearch),
// as many searches as runs, interleaved too (the report gives medians and min–max). It measures each run with package measure and reads its
// figures with package generator; package mdreport renders them.
package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/internal/cpuaffinity"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/generator"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/mdreport"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/measure"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/ratesearch"
)

// Config is one benchmark.
type Config struct {
	Closed    time.Duration // one closed-loop run
	Repeat    int           // closed-loop runs per generator
	Conns     int
	OpenStart int           // first open-loop rate, req/s
	Probes    int           // open-loop probes per generator
	OpenProbe time.Duration // one probe
	OpenP99   time.Duration // a rate holds when p99 stays under this (and drift < 1%)
	Only      []string      // generators to measure, generator.Default when empty
	QuietWait time.Duration // how long, over the whole run, to wait for a quiet machine
	Cache     string        // where peers are installed (…/cf-benchmark/bench)
	Ours      string        // bin/cf-benchmark
	Baseline  string        // another cf-benchmark build, the generator cf-benchmark-baseline
	Assets    string        // tools/bench/
	Keep      bool          // keep the run's temp dir
	Log       func(string, ...any)
}

// Run measures and returns the report.
func Run(ctx context.Context, cfg Config) (*mdreport.Report, error) {
	start := time.Now()
	if len(cfg.Only) == 0 {
		cfg.Only = generator.Default(cfg.Baseline != "")
	}
	tmp, err := os.MkdirTemp("", "cf-benchmark-bench.")
	if err != nil {
		return nil, err
	}
	// Enterable by the unprivileged user Postgres runs as when we are root.
	os.Chmod(tmp, 0o711)
	if cfg.Keep {
		defer cfg.Log("kept %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if err := generator.AptGet(ctx, cfg.Cache, "nginx"); err != nil {
		return nil, err
	}
	in := &generator.Installer{Cache: cfg.Cache, Ours: cfg.Ours, Baseline: cfg.Baseline, Log: cfg.Log}
	tools, skipped := in.Locate(ctx, cfg.Only)

	rep := &mdreport.Report{Machine: machine(), Cores: runtime.NumCPU(), TargetCore: 0, GenCore: 1, Conns: cfg.Conns, Repeat: cfg.Repeat,
		Closed: cfg.Closed, OpenProbe: cfg.OpenProbe, OpenStart: cfg.OpenStart, Probes: cfg.Probes, OpenP99: cfg.OpenP99}
	if rep.Cores < 2 {
		rep.GenCore = 0
		cfg.Log("only one core: target and generators share it, so these figures say little")
	}
	nginxBin, err := exec.LookPath("nginx")
	if err != nil {
		nginxBin = "/usr/sbin/nginx"
	}
	target, err := startNginx(ctx, nginxBin, cfg.Assets, filepath.Join(tmp, "nginx"), rep.TargetCore)
	if err != nil {
		return nil, fmt.Errorf("could not start nginx: %w", err)
	}
	defer target.stop()
	rep.Nginx = target.version
	cfg.Log("nginx %s (pid %d) on %s, core %d; generators on core %d", target.version, target.cmd.Process.Pid, target.url(), rep.TargetCore, rep.GenCore)

	h := &harness{cfg: cfg, rep: rep, port: target.port, quiet: cfg.QuietWait,
		gc: generator.Config{URL: target.url(), Conns: cfg.Conns, Assets: cfg.Assets}}
	for _, t := range tools {
		if slices.Contains([]string{generator.Ours, generator.OursTick1ms, generator.Baseline}, t.Name) && h.gc.DSN == "" {
			srv, dsn, err := startPostgres(ctx, filepath.Join(tmp, "pg"), rep.TargetCore)
			if err != nil {
				skipped[t.Name] = "the private Postgres did not start: " + err.Error()
				cfg.Log("skipping %s: %s", t.Name, skipped[t.Name])
				continue
			}
			defer srv.Close()
			h.gc.DSN = dsn
			h.runner.Ours = append(h.runner.Ours, srv.PID())
		}
		h.tools = append(h.tools, t)
	}
	for _, name := range cfg.Only {
		g := mdreport.Gen{Name: name, Label: name, Skipped: skipped[name]}
		for _, t := range h.tools {
			if t.Name == name {
				g.Label, g.Version = t.Label(), t.Version
				g.HowClosed = t.How(h.gc, cfg.Closed, false)
				if t.Built != "" {
					g.HowClosed += "; " + t.Built
				}
				if t.Open != nil {
					g.HowOpen = t.How(h.gc, cfg.OpenProbe, true)
				}
			}
		}
		rep.Gens = append(rep.Gens, g)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "runs"), 0o755); err != nil {
		return nil, err
	}
	h.tmp = filepath.Join(tmp, "runs")
	h.closedLoops(ctx)
	h.openLoops(ctx)
	rep.Generated, rep.Took = time.Now(), time.Since(start)
	return rep, ctx.Err()
}

type harness struct {
	cfg    Config
	rep    *mdreport.Report
	tools  []*generator.Tool
	gc     generator.Config
	runner measure.Runner
	port   int
	quiet  time.Duration // what is left of Config.QuietWait
	tmp    string
}

func (h *harness) gen(name string) *mdreport.Gen {
	for i := range h.rep.Gens {
		if h.rep.Gens[i].Name == name {
			return &h.rep.Gens[i]
		}
	}
	return nil
}

// closedLoops runs run r of every generator before run r+1 of any, so that a slow
// drift of the machine spreads over all of them. Each round starts with a run of
// cf-benchmark that sends almost nothing, its fixed cost per run.
func (h *harness) closedLoops(ctx context.Context) {
	for r := 1; r <= h.cfg.Repeat && ctx.Err() == nil; r++ {
		for _, t := range h.tools {
			if t.Name != generator.Ours {
				continue
			}
			h.cfg.Log("fixed cost: %s, run %d/%d (1 s at 1 req/s)", t.Name, r, h.cfg.Repeat)
			run, err := h.measure(ctx, t, fmt.Sprintf("%s.fixed.%d", t.Name, r), time.Second,
				func(c generator.Config) (generator.Command, error) { return t.Open(c, time.Second, 1) })
			if err != nil {
				h.cfg.Log("  failed: %v", err)
				continue
			}
			h.rep.Fixed = append(h.rep.Fixed, run)
			h.cfg.Log("  CPU %.2fs, elapsed %.2fs", run.CPU.Seconds(), run.Elapsed.Seconds())
		}
		for _, t := range h.tools {
			h.cfg.Log("closed loop: %s, run %d/%d (%s)", t.Name, r, h.cfg.Repeat, h.cfg.Closed)
			run, err := h.measure(ctx, t, fmt.Sprintf("%s.closed.%d", t.Name, r), h.cfg.Closed,
				func(c generator.Config) (generator.Command, error) { return t.Closed(c, h.cfg.Closed) })
			g := h.gen(t.Name)
			if err != nil {
				g.Failures = append(g.Failures, fmt.Sprintf("run %d: %v", r, err))
				h.cfg.Log("  failed: %v", err)
				continue
			}
			g.Runs = append(g.Runs, run)
			h.cfg.Log("  %d responses in %.2fs, CPU %.2fs (%.0f req per CPU-s), peak RSS %.1f MB, %d errors", run.OK, run.Seconds,
				run.CPU.Seconds(), float64(run.OK)/run.CPU.Seconds(), float64(run.RSS)/(1<<20), run.Errors)
		}
	}
}

// openLoops searches each open-loop generator's highest held rate, Repeat times,
// search r of every generator before search r+1 of any.
func (h *harness) openLoops(ctx context.Context) {
	for r := 1; r <= h.cfg.Repeat && ctx.Err() == nil; r++ {
		for _, t := range h.tools {
			if t.Open != nil {
				h.openLoop(ctx, t, r)
			}
		}
	}
}

func (h *harness) openLoop(ctx context.Context, t *generator.Tool, r int) {
	limits := ratesearch.Limits{Drift: 0.01, P99: h.cfg.OpenP99}
	runs := map[int]mdreport.Run{}
	p99s := map[int]time.Duration{}
	i := 0
	s := ratesearch.Search(ctx, h.cfg.OpenStart, h.cfg.Probes, func(ctx context.Context, rate int) (bool, string) {
		i++
		h.cfg.Log("open loop: %s at %d req/s (%s, search %d/%d, probe %d/%d)", t.Name, rate, h.cfg.OpenProbe, r, h.cfg.Repeat, i, h.cfg.Probes)
		var p99 time.Duration
		run, err := h.measure(ctx, t, fmt.Sprintf("%s.open.%d.%d", t.Name, r, rate), h.cfg.OpenProbe,
			func(c generator.Config) (generator.Command, error) {
				cmd, err := t.Open(c, h.cfg.OpenProbe, rate)
				parse := cmd.Parse
				cmd.Parse = func(ctx context.Context, o generator.Output) (generator.Result, error) {
					r, err := parse(ctx, o)
					p99 = r.P99
					return r, err
				}
				return cmd, err
			})
		if err != nil {
			h.cfg.Log("  failed: %v", err)
			return false, "failed: " + err.Error()
		}
		// Over the nominal probe length for every tool: sends a generator could not
		// make lower it; late ones show in p99, from the intended send time.
		held, verdict := limits.Judge(rate, float64(run.OK)/h.cfg.OpenProbe.Seconds(), p99, run.Errors)
		h.cfg.Log("  %s; CPU %.2fs (%.0f req per CPU-s)", verdict, run.CPU.Seconds(), float64(run.OK)/run.CPU.Seconds())
		runs[rate], p99s[rate] = run, p99
		return held, verdict
	})
	g := h.gen(t.Name)
	g.Opens = append(g.Opens, mdreport.Open{Search: s, Best: runs[s.Held], P99: p99s[s.Held]})
}

// measure runs one command of t, pinned to the generators' core, and reads its result.
func (h *harness) measure(ctx context.Context, t *generator.Tool, name string, d time.Duration,
	command func(generator.Config) (generator.Command, error)) (mdreport.Run, error) {
	c := h.gc
	c.Scratch = filepath.Join(h.tmp, name)
	if err := os.MkdirAll(c.Scratch, 0o755); err != nil {
		return mdreport.Run{}, err
	}
	cmd, err := command(c)
	if err != nil {
		return mdreport.Run{}, err
	}
	args := append([]string{t.Path}, cmd.Args[1:]...)
	measure.Settle(ctx, h.port, h.cfg.Log)
	measure.Quiet(ctx, &h.quiet, h.runner.Ours, h.cfg.Log)
	stdout, stderr, u, err := h.runner.Run(ctx, measure.Run{Args: args, Env: cmd.Env, Core: h.rep.GenCore, Limit: d + time.Minute})
	if h.cfg.Keep {
		os.WriteFile(filepath.Join(c.Scratch, "stdout"), stdout, 0o644)
		os.WriteFile(filepath.Join(c.Scratch, "stderr"), stderr, 0o644)
	}
	h.rep.Foreign += u.Foreign.CPU
	h.rep.Measured += u.Elapsed
	h.rep.Steal += u.Steal
	if u.Foreign.CPU > u.Elapsed/20 {
		h.cfg.Log("  other processes used %.2f CPU-s during this measurement (busiest: %s)", u.Foreign.CPU.Seconds(), u.Foreign.Top)
	}
	if err != nil {
		return mdreport.Run{}, err
	}
	res, err := cmd.Parse(ctx, generator.Output{Stdout: stdout, Stderr: stderr, Dir: c.Scratch})
	if err != nil {
		return mdreport.Run{}, err
	}
	return mdreport.Run{OK: res.OK, Errors: res.Errors, Seconds: res.Seconds, Elapsed: u.Elapsed, CPU: u.CPU, RSS: u.MaxRSS,
		Foreign: u.Foreign.CPU, Notes: res.Notes}, nil
}

// startPostgres starts a private Postgres and pins it, and every process it has
// forked, to core (later backends fork from the postmaster and inherit it).
func startPostgres(ctx context.Context, dir string, core int) (*pgserver.Server, string, error) {
	srv := pgserver.New(pgserver.Options{Dir: dir})
	if err := srv.Start(ctx); err != nil {
		return nil, "", err
	}
	if err := srv.CreateDatabase(ctx, "cfbench"); err != nil {
		srv.Close()
		return nil, "", err
	}
	if err := cpuaffinity.PinWithChildren(srv.PID(), []int{core}); err != nil {
		srv.Close()
		return nil, "", fmt.Errorf("pin postgres to core %d: %w", core, err)
	}
	return srv, srv.DSN("cfbench"), nil
}
