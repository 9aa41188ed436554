// Command capacity runs the capacity simulation (package tools/bench/capacity, part
// of make bench): many generator instances through a relay on a Postgres with a
// connection cap, then, as the baseline, a few instances each with its own pool as
// cfbench worker without --relay runs. It writes the figures as Markdown to stdout and
// to --out.
//
//	go run ./tools/capacity -instances 1000 -steps 4 -hold 10s -relay-bin bin/cfbench
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/capacity"
)

func main() {
	cli.Main(func(ctx context.Context) int { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cfbench-capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var relayed, direct capacity.Config
	fs.IntVar(&relayed.Instances, "instances", 1000, "generator instances at the last step (through the relay)")
	fs.IntVar(&relayed.Steps, "steps", 3, "steps of the ramp (each adds instances/steps)")
	fs.Float64Var(&relayed.Rate, "rate", 0, "open-loop rate of each instance, req/s (0: a closed loop of one user and -think-time)")
	fs.DurationVar(&relayed.ThinkTime, "think-time", 10*time.Millisecond, "the closed loop's pause between requests (about 100 req/s per instance when the machine keeps up)")
	fs.DurationVar(&relayed.Hold, "hold", 10*time.Second, "length of each step")
	fs.IntVar(&relayed.LateJoiners, "late", 10, "instances started by hand once the last step runs (they join it late)")
	fs.IntVar(&relayed.MaxConnections, "max-connections", 100, "the database's max_connections")
	fs.IntVar(&relayed.RelayConns, "relay-conns", 8, "the relay's connections to the database")
	fs.StringVar(&relayed.RelayBin, "relay-bin", "", "a cfbench binary (cmd/cfbench) to run the relay in a process of its own, whose CPU is measured (default: in this process)")
	fs.IntVar(&direct.Instances, "direct-instances", 20, "instances of the baseline with a pool each (0: none)")
	out := fs.String("out", "tools/bench/capacity-latest.md", "file the Markdown report goes to")
	if code, ok := cli.Parse(fs, args); !ok {
		return code
	}
	if relayed.Instances < relayed.Steps || relayed.Steps < 1 || relayed.Rate < 0 || relayed.ThinkTime <= 0 || relayed.Hold <= 0 {
		fmt.Fprintln(stderr, "cfbench-capacity: want -instances >= -steps >= 1, -rate >= 0, -think-time > 0 and -hold > 0")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	relayed.Logger = logger
	direct = capacity.Config{Instances: direct.Instances, Steps: 1, Rate: relayed.Rate, ThinkTime: relayed.ThinkTime, Hold: relayed.Hold,
		MaxConnections: relayed.MaxConnections, Direct: true, Logger: logger}
	var runs []capacity.Report
	for _, c := range []capacity.Config{relayed, direct} {
		if c.Instances == 0 {
			continue
		}
		dir, err := os.MkdirTemp("", "cfbench-capacity-")
		if err == nil {
			err = os.Chmod(dir, 0o755) // for the unprivileged server user under root
		}
		if err != nil {
			fmt.Fprintln(stderr, "capacity:", err)
			return 1
		}
		c.Dir = dir
		fmt.Fprintf(stderr, "cfbench-capacity: %d instances (direct: %t), %d steps of %s\n", c.Instances, c.Direct, c.Steps, c.Hold)
		res, err := capacity.Run(ctx, c)
		os.RemoveAll(dir)
		if err != nil {
			fmt.Fprintln(stderr, "capacity:", err)
			return 1
		}
		runs = append(runs, capacity.Report{Config: c, Result: res})
	}
	md := capacity.Markdown(runs)
	fmt.Fprint(stdout, md)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err == nil {
		err = os.WriteFile(*out, []byte(md), 0o644)
	}
	for _, r := range runs {
		if r.Result.RunErr != nil || r.Result.Stored != r.Result.Sent {
			return 1 // the report says what went wrong
		}
	}
	return 0
}
