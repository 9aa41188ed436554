package command

import (
	"context"
	"errors"
	"flag"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

var logsCmd = &Command{
	Name:        "logs",
	PluginName:  "benchmark-logs",
	Synopsis:    "parse [--format " + strings.Join(accesslog.Formats(), "|") + "] < ACCESS_LOG",
	Summary:     "Parse access-log lines (gorouter, also from cf logs or a syslog drain; Apache common/combined) from stdin into JSON lines",
	ExampleArgs: "logs parse --format gorouter < access.log",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		format := fs.String("format", string(accesslog.Gorouter), "log format of the input: "+strings.Join(accesslog.Formats(), ", "))
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 || args[0] != "parse" {
				return usagef("give the subcommand: parse")
			}
			parse, err := accesslog.Parser(*format)
			if err != nil {
				return usagef("--format %q: want one of %s", *format, strings.Join(accesslog.Formats(), ", "))
			}
			if env.Stdin == nil {
				return errors.New("no standard input to read")
			}
			return parseLogs(ctx, env, parse)
		}
	},
}
