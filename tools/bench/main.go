// Command bench is the load-generator benchmark of `make bench`: cf-benchmark's
// generator and its peers (wrk, oha, hey, vegeta, k6) against one nginx on 127.0.0.1,
// pinned to cores; closed-loop medians and each open loop's highest held rate, written
// as Markdown to stdout and to -out (see package harness; BENCHMARKS.md has the method).
// Peers are installed once into $CFBENCH_CACHE/bench (default ~/.cache/cf-benchmark);
// one that cannot be installed is reported as skipped. Progress goes to stderr.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/tools/bench/generator"
	"github.com/cf-benchmark/cf-benchmark/tools/bench/harness"
)

const example = `
Examples:
  # a quick trial, a few minutes once the tools are installed
  go run ./tools/bench -seconds 3 -repeat 1 -open-seconds 3 -open-probes 5
  # this build against the one before, paired, with the peers of issue 50
  go run ./tools/bench -only "wrk oha oha-db cf-benchmark cf-benchmark-baseline" -baseline /tmp/cf-benchmark-before
`

func main() {
	fs := flag.NewFlagSet("cfbench-bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: cfbench-bench [flags]")
		fs.PrintDefaults()
		fmt.Fprint(os.Stderr, example)
	}
	seconds := fs.Int("seconds", 10, "length of one closed-loop run, seconds")
	repeat := fs.Int("repeat", 3, "closed-loop runs and open-loop searches per generator (interleaved); the report gives medians and min–max")
	conns := fs.Int("connections", 64, "connections, users, VUs or workers of every generator")
	openStart := fs.Int("open-start", 10000, "first open-loop rate probed, requests/s")
	probes := fs.Int("open-probes", 7, "open-loop probes per generator")
	openSeconds := fs.Int("open-seconds", 10, "length of one open-loop probe, seconds")
	openP99 := fs.Duration("open-p99", 10*time.Millisecond, "a rate holds when its p99 stays under this and drift under 1%")
	only := fs.String("only", "", "space-separated subset of: wrk oha oha-db hey vegeta k6 cf-benchmark cf-benchmark-tick1ms cf-benchmark-baseline (oha-db: oha with --db-url, storing every request in SQLite; cf-benchmark-tick1ms: its open loop on a 1 ms tick, only when named)")
	out := fs.String("out", "tools/bench/results-latest.md", "where to write the report")
	oursBin := fs.String("ours", "bin/cf-benchmark", "the cf-benchmark program to measure (make build writes it)")
	baseline := fs.String("baseline", "", "another cf-benchmark build to measure beside -ours, paired (generator cf-benchmark-baseline)")
	keep := fs.Bool("keep", false, "keep the run's temp dir (configs, raw outputs) for a look")
	quiet := fs.Duration("quiet-wait", 15*time.Minute, "at most this long, over the whole run, waiting for other processes to go quiet")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() > 0 {
		os.Exit(2)
	}
	for name, v := range map[string]int{"seconds": *seconds, "repeat": *repeat, "connections": *conns, "open-start": *openStart,
		"open-probes": *probes, "open-seconds": *openSeconds} {
		if v <= 0 {
			fmt.Fprintf(os.Stderr, "cfbench-bench: -%s must be a positive integer, got %d\n", name, v)
			os.Exit(2)
		}
	}
	for _, name := range strings.Fields(*only) {
		if !slices.Contains(generator.Names, name) {
			fmt.Fprintf(os.Stderr, "cfbench-bench: -only: unknown generator %q (known: %s)\n", name, strings.Join(generator.Names, " "))
			os.Exit(2)
		}
	}
	cache := os.Getenv("CFBENCH_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "cf-benchmark")
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := harness.Run(ctx, harness.Config{Closed: time.Duration(*seconds) * time.Second, Repeat: *repeat, Conns: *conns,
		OpenStart: *openStart, Probes: *probes, OpenProbe: time.Duration(*openSeconds) * time.Second, OpenP99: *openP99,
		Only: strings.Fields(*only), QuietWait: *quiet, Cache: filepath.Join(cache, "bench"), Ours: *oursBin, Baseline: *baseline,
		Assets: "tools/bench", Keep: *keep, Log: logf})
	if err != nil && rep == nil {
		logf("%v", err)
		os.Exit(1)
	}
	// Interrupted: what was measured so far is still worth its report.
	var b bytes.Buffer
	rep.Write(&b)
	if err != nil {
		fmt.Fprintf(&b, "\n**Interrupted (%v): the runs and searches after that are missing.**\n", err)
	}
	os.Stdout.Write(b.Bytes())
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err == nil {
		err = os.WriteFile(*out+".tmp", b.Bytes(), 0o644)
		if err == nil {
			err = os.Rename(*out+".tmp", *out)
		}
	}
	if err != nil {
		logf("write the report: %v", err)
		os.Exit(1)
	}
	logf("done in %s; report in %s", rep.Took.Round(time.Second), *out)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
}
