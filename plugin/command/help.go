package command

import (
	"context"
	"fmt"
	"io"
	"sort"
)

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
