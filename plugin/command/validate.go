package command

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

var validateCmd = &Command{
	Name:        "validate",
	PluginName:  "benchmark-validate",
	Synopsis:    "-f FILE",
	Summary:     "Check a benchmark spec and print one line per problem (file:line:column: field: problem)",
	ExampleArgs: "validate -f examples/demo.yml",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "the benchmark spec (benchmark.yml)")
		return func(ctx context.Context, env *Env, args []string) error {
			if *file == "" || len(args) > 0 {
				return usagef("give the spec with -f FILE")
			}
			sp, err := spec.Load(*file)
			if err != nil {
				return err
			}
			steps := sp.Ramp.Steps()
			total := time.Duration(len(steps)*len(sp.Variants)) * sp.Ramp.Hold
			fmt.Fprintf(env.Stdout, "%s: valid: %d variant(s), %d step(s) each (%d to %d generator instances), about %s of load\n",
				*file, len(sp.Variants), len(steps), steps[0], steps[len(steps)-1], total)
			return nil
		}
	},
}
