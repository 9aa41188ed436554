// Package generator knows the load generators the benchmark compares: how to find or
// install each (install.go), the command of a closed-loop run and of an open-loop
// probe, and how to read each tool's machine-readable output (wrk through a Lua done()
// script, oha's JSON, hey's CSV, vegeta's JSON report, k6's summary export, and
// cf-benchmark's `run --json`) into one Result.
package generator

import (
	"context"
	"fmt"
	"time"
)

// Result is what one run of a generator measured, read from its own output.
type Result struct {
	// OK counts 2xx responses; Errors counts transport errors and other statuses, as
	// far as the tool tells them (see Tool.ErrorsNote).
	OK, Errors int64
	// Seconds is the time over which OK was counted, as the tool reports it.
	Seconds float64
	// P99 is the 99th percentile latency (from the intended send time for the open
	// loop); zero when the tool does not report it.
	P99 time.Duration
	// Notes are remarks the tool's output calls for (dropped samples, warnings).
	Notes []string
}

// Config is what every run of every generator shares.
type Config struct {
	URL     string // the target, http://127.0.0.1:PORT/
	Conns   int    // connections, users, VUs or workers
	Scratch string // a directory for this run's files (outputs, specs)
	DSN     string // cf-benchmark's results database
	// Assets is the directory with the harness's files (tools/bench/: the wrk and k6
	// scripts, cf-benchmark's spec templates).
	Assets string
}

// Command is one timed run: Args (the program first) with Env added to the
// harness's environment. Parse reads its outcome afterwards, untimed; it may run a
// helper (vegeta's report).
type Command struct {
	Args  []string
	Env   []string
	Parse func(ctx context.Context, out Output) (Result, error)
}

// Output is what a run left: its standard output and error, and its scratch dir.
type Output struct {
	Stdout, Stderr []byte
	Dir            string
}

// Tool is one generator.
type Tool struct {
	Name    string // wrk, oha, oha-db, hey, vegeta, k6, cf-benchmark
	Version string // set by Locate
	Path    string // the program, set by Locate
	// Closed is a closed-loop run of d; Open a probe of d at rate requests/s (nil when
	// the tool has no open loop).
	Closed func(c Config, d time.Duration) (Command, error)
	Open   func(c Config, d time.Duration, rate int) (Command, error)
	// How describes the invocation for the report (a Markdown cell).
	How func(c Config, d time.Duration, open bool) string
	// Built says how the binary was built, when that matters (oha's --locked).
	Built string
}

// Label is the tool's name and version as the report shows it.
func (t *Tool) Label() string {
	switch t.Name {
	case Ours:
		return "cf-benchmark (records every request into Postgres)"
	case OursTick1ms:
		return "cf-benchmark, tick 1ms (records every request into Postgres)"
	case Baseline:
		return "cf-benchmark baseline " + t.Version + " (" + t.Path + ")"
	case "wrk":
		return "wrk " + t.Version + " (Debian)"
	case "oha-db":
		return "oha " + t.Version + " --db-url (stores every request in SQLite)"
	}
	return t.Name + " " + t.Version
}

// Ours is our own generator's name; OursTick1ms the same build with its open loop on a
// 1 ms tick (workload.tick), the cheapest per request; Baseline another build of it
// (-baseline).
const (
	Ours        = "cf-benchmark"
	OursTick1ms = "cf-benchmark-tick1ms"
	Baseline    = "cf-benchmark-baseline"
)

// Names lists the generators in the report's order.
var Names = []string{"wrk", "oha", "oha-db", "hey", "vegeta", "k6", Ours, OursTick1ms, Baseline}

// Default is the generators measured when none are named: Names but OursTick1ms, and
// Baseline only when there is a baseline build.
func Default(baseline bool) []string {
	var names []string
	for _, n := range Names {
		if n != OursTick1ms && (n != Baseline || baseline) {
			names = append(names, n)
		}
	}
	return names
}

// secs is d as a command-line duration in whole seconds ("10s").
func secs(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second)) }
