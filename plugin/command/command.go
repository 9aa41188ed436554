// Package command defines the commands of cf-benchmark once, for both faces of the binary:
// the cf CLI plugin (`cf run-benchmark …`) and the standalone CLI (`cf-benchmark run …`).
// Commands get their stdio and environment through Env, so they run in tests in process.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Command is one command of both the plugin and the standalone CLI.
type Command struct {
	Name        string // standalone: cf-benchmark NAME
	PluginName  string // cf NAME; "" for a command of the standalone CLI only
	Summary     string
	Synopsis    string // arguments and main flags after the name, for the usage line
	ExampleArgs string // an example invocation, without the leading "cf-benchmark"
	// Unavailable, when set, is why the command cannot run on this platform and what
	// to do instead, in one line: help lists the command, and running it prints this
	// and exits with ExitUsage before any flag is parsed.
	Unavailable string
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
	if c.Unavailable != "" {
		return unavailable(env, prog, c, args)
	}
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

// unavailable answers a command that cannot run on this platform: its help with why
// for -h, else the reason as an error.
func unavailable(env *Env, prog string, c *Command, args []string) int {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintf(env.Stderr, "%s\n\nUsage: %s\n\nNot on this platform: %s.\n", c.Summary, c.Usage(prog), c.Unavailable)
			return ExitOK
		}
	}
	fmt.Fprintf(env.Stderr, "error: %s\n", c.Unavailable)
	return ExitUsage
}

// Example is the example invocation of c through prog ("cf" or "cf-benchmark").
func (c *Command) Example(prog string) string {
	if prog == "cf" {
		return "cf " + c.PluginName + strings.TrimPrefix(c.ExampleArgs, c.Name)
	}
	return prog + " " + c.ExampleArgs
}
