// Package command defines the commands of cf-benchmark once, for both faces of the binary:
// the cf CLI plugin (`cf run-benchmark …`) and the standalone CLI (`cf-benchmark run …`).
// Commands get their stdio and environment through Env, so they run in tests in process.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Exit codes: distinct so scripts can tell a bad invocation from a broken environment.
const (
	ExitOK      = 0
	ExitFailure = 1 // infrastructure or runtime failure
	ExitUsage   = 2 // bad flags, bad spec, unsupported spec
	ExitAborted = 130
	// ExitNotRunning is foundation status's answer for a stopped foundation.
	ExitNotRunning = 3
	// ExitThresholds is report's answer when a --fail-on threshold failed (or could
	// not be judged): the benchmark ran, its result is worse than the baseline allows.
	ExitThresholds = 4
)

// Env is what a command may use of its process.
type Env struct {
	// Stdin is the input of commands that read one (logs parse); nil when there is none.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Spawn starts this program again with args, detached from the terminal, with its
	// output appended to logPath, and returns its pid. Nil where that is impossible.
	Spawn func(args []string, logPath string) (pid int, err error)
	// CF is the cf CLI's connection (API, token) when running as a plugin; nil when
	// standalone, where commands read the cf CLI's config file.
	CF func() (CFTarget, error)
	// BinDirs are where to look for the generator and tunnel binaries pushed to Cloud
	// Foundry (cfbench-worker, cfbench-tunnel) when neither --bin-dir nor
	// $CFBENCH_BIN_DIR says: usually the directory of this executable, then ./bin.
	BinDirs []string
	// Version is this build's version (internal/version), which --version prints.
	Version string
	// prog is "cf" or "cf-benchmark", set by Execute, for hints naming other commands.
	prog string
}

// envToken is the variable a workload header names for the user's own Cloud Foundry
// token (e.g. Authorization: "${CF_OAUTH_TOKEN}"): as a plugin it comes from the cf
// CLI's connection unless set; standalone, set it: CF_OAUTH_TOKEN=$(cf oauth-token).
const envToken = "CF_OAUTH_TOKEN"

// lookupEnv is the environment generators expand header values from: the process's,
// plus the cf CLI's token as CF_OAUTH_TOKEN when running as a plugin.
func (env *Env) lookupEnv(name string) (string, bool) {
	if v := env.Getenv(name); v != "" {
		return v, true
	}
	if name == envToken && env.CF != nil {
		if t, err := env.CF(); err == nil && t.AccessToken != "" {
			return t.AccessToken, true
		}
	}
	return "", false
}

// command is how the user invokes the command called name (its standalone name; one of
// those whose plugin name is benchmark-NAME) in hints: "cf benchmark-export" as a
// plugin, "cf-benchmark export" standalone.
func (env *Env) command(name string) string {
	if env.prog == "cf" {
		return "cf benchmark-" + name
	}
	return "cf-benchmark " + name
}

// Command is one command of both the plugin and the standalone CLI.
type Command struct {
	Name        string // standalone: cf-benchmark NAME
	PluginName  string // cf NAME; "" for a command of the standalone CLI only
	Summary     string
	Synopsis    string // arguments and main flags after the name, for the usage line
	ExampleArgs string // an example invocation, without the leading "cf-benchmark"
	// Flags declares the flags; the returned func runs the command with the parsed flags
	// and the positional arguments.
	Flags func(fs *flag.FlagSet) func(ctx context.Context, env *Env, args []string) error
}

// Commands is every registered command. Only commands that work are listed.
var Commands = []*Command{runCmd, validateCmd, statusCmd, collectLogsCmd, exportCmd, reportCmd, foundationCmd, logsCmd}

// PluginCommands are the commands the cf CLI plugin registers.
func PluginCommands() []*Command {
	var out []*Command
	for _, c := range Commands {
		if c.PluginName != "" {
			out = append(out, c)
		}
	}
	return out
}

// usageError is an invocation problem; it maps to ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Lookup finds a command by its standalone or plugin name.
func Lookup(name string) *Command {
	for _, c := range Commands {
		if c.Name == name || c.PluginName != "" && c.PluginName == name {
			return c
		}
	}
	return nil
}

// Usage is the usage line of c as invoked through prog ("cf" or "cf-benchmark").
func (c *Command) Usage(prog string) string {
	name := c.Name
	if prog == "cf" {
		name = c.PluginName
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", prog, name, c.Synopsis))
}

// FlagHelp returns each flag's help text keyed by its name without dashes: the cf CLI
// adds one dash to one-letter names and two to the others.
func (c *Command) FlagHelp() map[string]string {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	c.Flags(fs)
	out := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		out[f.Name] = f.Usage
	})
	return out
}

// Execute parses args for c (flags and positional arguments may be mixed) and runs it.
// prog is "cf" or "cf-benchmark" and only shapes help text. It returns an exit code.
func Execute(ctx context.Context, env *Env, prog string, c *Command, args []string) int {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	env.prog = prog
	run := c.Flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "%s\n\nUsage: %s\n\nExample:\n  %s\n\nOptions:\n", c.Summary, c.Usage(prog), c.Example(prog))
		fs.PrintDefaults()
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ExitOK
			}
			return ExitUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	err := run(ctx, env, positional)
	return exitCode(env, prog, c, err)
}

// Example is the example invocation of c through prog ("cf" or "cf-benchmark").
func (c *Command) Example(prog string) string {
	if prog == "cf" {
		return "cf " + c.PluginName + strings.TrimPrefix(c.ExampleArgs, c.Name)
	}
	return prog + " " + c.ExampleArgs
}

func exitCode(env *Env, prog string, c *Command, err error) int {
	var (
		ue   *usageError
		serr spec.Errors
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &serr):
		for _, e := range serr {
			fmt.Fprintln(env.Stderr, e.Error())
		}
		fmt.Fprintf(env.Stderr, "%d problem(s) in the spec\n", len(serr))
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "error: %s\nUsage: %s\n", ue.msg, c.Usage(prog))
		return ExitUsage
	case errors.Is(err, engine.ErrUnsupported):
		fmt.Fprintf(env.Stderr, "error: %v\n", err)
		return ExitUsage
	case errors.Is(err, engine.ErrAborted):
		return ExitAborted
	case errors.Is(err, errNotRunning):
		return ExitNotRunning
	case errors.Is(err, errThresholds):
		return ExitThresholds
	}
	fmt.Fprintf(env.Stderr, "error: %v\n", err)
	return ExitFailure
}

// Main is the standalone CLI: cf-benchmark COMMAND [args].
func Main(ctx context.Context, env *Env, args []string) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(env.Stdout, "cf-benchmark", env.Version)
		return ExitOK
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c := Lookup(args[1]); c != nil {
				return Execute(ctx, env, "cf-benchmark", c, []string{"-h"})
			}
		}
		printHelp(env.Stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c := Lookup(args[0])
	if c == nil {
		fmt.Fprintf(env.Stderr, "error: unknown command %q\n", args[0])
		printHelp(env.Stderr)
		return ExitUsage
	}
	return Execute(ctx, env, "cf-benchmark", c, args[1:])
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "cf-benchmark: benchmark apps on Cloud Foundry and store every request in Postgres.")
	fmt.Fprintln(w, "\nUsage: cf-benchmark COMMAND [options]   (or, as a cf CLI plugin: cf PLUGIN-COMMAND)")
	fmt.Fprintln(w, "\nCommands:")
	cmds := append([]*Command(nil), Commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		plugin := ""
		if c.PluginName != "" {
			plugin = "(cf " + c.PluginName + ")"
		}
		fmt.Fprintf(w, "  %-10s %-22s %s\n", c.Name, plugin, c.Summary)
	}
	fmt.Fprintln(w, "\nRun 'cf-benchmark help COMMAND' for a command's options and an example, 'cf-benchmark --version' for the version.")
}
