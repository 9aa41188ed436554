package command

import (
	"context"
	"errors"
	"flag"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
)

var logsCmd = &Command{
	Name:        "logs",
	PluginName:  "benchmark-logs",
	Synopsis:    "parse [--format " + strings.Join(engine.AccessLogFormats(), "|") + "] < ACCESS_LOG",
	Summary:     "Parse access-log lines (gorouter, also from cf logs or a syslog drain; Apache common/combined) from stdin into JSON lines",
	ExampleArgs: "logs parse --format gorouter < access.log",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		format := fs.String("format", engine.DefaultAccessLogFormat, "log format of the input: "+strings.Join(engine.AccessLogFormats(), ", "))
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 || args[0] != "parse" {
				return usagef("give the subcommand: parse")
			}
			err := engine.ParseAccessLogs(ctx, *format, env.Stdin, env.Stdout, env.Stderr)
			if errors.Is(err, engine.ErrLogFormat) {
				return usagef("--format %q: want one of %s", *format, strings.Join(engine.AccessLogFormats(), ", "))
			}
			return err
		}
	},
}
