// Command cfbench is the one program cf-benchmark pushes to Cloud Foundry, as several
// apps with the binary buildpack: `cfbench worker` (a load generator), `cfbench tunnel`
// (the way to the results database), `cfbench relay` (generators sharing a few database
// connections) and `cfbench drain` (router logs from a syslog drain). It is built for
// linux/amd64, what CF's cells run, and the plugin carries it inside (plugin/payload),
// so that the plugin file alone can run a benchmark from any machine.
//
// The plugin pushes it with its own version in CFBENCH_VERSION; a cfbench of another
// version refuses to start, since the two speak through the run's tables and
// environment, which change between versions.
//
//	cfbench worker --app cfbench-loadgen --index 3
//	cfbench version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	cfbversion "github.com/cf-benchmark/cf-benchmark/internal/version"
)

// version is stamped at build time, as the plugin's is: make build passes
// -ldflags "-X main.version=…".
var version string

// program is one of the commands: args are those after its name.
type program func(ctx context.Context, args []string, getenv func(string) string, hostname string, stderr io.Writer) int

// programs are the commands by name, each in a file of its own.
var programs = map[string]program{
	"worker": func(ctx context.Context, args []string, getenv func(string) string, hostname string, stderr io.Writer) int {
		return runWorker(ctx, args, getenv, hostname, stderr, nil)
	},
	"tunnel": func(ctx context.Context, args []string, getenv func(string) string, _ string, stderr io.Writer) int {
		return runTunnel(ctx, args, getenv, stderr, nil)
	},
	"relay": func(ctx context.Context, args []string, getenv func(string) string, _ string, stderr io.Writer) int {
		return runRelay(ctx, args, getenv, stderr, nil)
	},
	"drain": func(ctx context.Context, args []string, getenv func(string) string, _ string, stderr io.Writer) int {
		return runDrain(ctx, args, getenv, stderr, nil)
	},
}

func main() {
	cli.Main(func(ctx context.Context) int {
		host, _ := os.Hostname()
		return run(ctx, os.Args[1:], os.Getenv, host, os.Stdout, os.Stderr, thisVersion())
	})
}

// thisVersion is this build's version (internal/version).
func thisVersion() string {
	info, _ := debug.ReadBuildInfo()
	return cfbversion.Of(version, info)
}

// run picks the program args[0] names and runs it with the rest, after checking that
// it was pushed by a plugin of its own version (own).
func run(ctx context.Context, args []string, getenv func(string) string, hostname string, stdout, stderr io.Writer, own string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, own)
		return 0
	}
	prog, ok := programs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cfbench: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if pusher := getenv(cfbversion.PushedByEnv); pusher != "" && pusher != own {
		fmt.Fprintf(stderr, "cfbench %s: this program is cf-benchmark %s, but the plugin that pushed it is %s: "+
			"they would misread each other's tables. Try: cf run-benchmark again without --bin-dir and CFBENCH_BIN_DIR "+
			"(the plugin carries its own), or rebuild that directory with make build\n", args[0], own, pusher)
		return 1
	}
	return prog(ctx, args[1:], getenv, hostname, stderr)
}

// serve runs a program's parts in one group (package lifecycle) until ctx ends
// (SIGTERM), which closes them gracefully, or one of them stops by itself (a listener
// that died), which ends the program with a failure naming it, so that Cloud Foundry
// restarts it instead of leaving it running without the part. ready runs once every
// part runs. It returns the exit code; fail reports a failure.
func serve(ctx context.Context, fail func(error) int, ready func(), parts ...lifecycle.Member) int {
	g := lifecycle.NewGroup(parts...)
	if err := g.Start(ctx); err != nil {
		return fail(err)
	}
	ready()
	if err := g.Wait(); err != nil {
		return fail(err)
	}
	return 0
}

func usage(w io.Writer) {
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "Usage: cfbench %s|version [options]\n\nThe programs cf-benchmark pushes to Cloud Foundry; cfbench COMMAND -h for a command's options.\n\nExample:\n  DATABASE_URL=postgres://u:p@127.0.0.1:5432/results cfbench worker --app cfbench-loadgen --index 0\n",
		strings.Join(names, "|"))
}
