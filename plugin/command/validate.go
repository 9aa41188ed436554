package command

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/platform"
)

var validateCmd = &Command{
	Name:        "validate",
	PluginName:  "benchmark-validate",
	Synopsis:    "-f FILE [--landscape FILE] [--bin-dir DIR] [--cf-home DIR]",
	Summary:     "Check a benchmark spec as run does before it starts, and print one line per problem (file:line:column: field: problem)",
	ExampleArgs: "validate -f examples/demo.yml",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		file := fs.String("f", "", "the benchmark spec (benchmark.yml)")
		landscape := fs.String("landscape", "", "as for run: a FILE of tofu output -json for terraform/, whose landscape replaces the spec's")
		binDir := fs.String("bin-dir", "", "as for run: a directory with the cfbench program pushed to Cloud Foundry (default $CFBENCH_BIN_DIR, else the one this plugin carries)")
		var cff cfFlags
		cff.register(fs)
		return func(ctx context.Context, env *Env, args []string) error {
			if *file == "" || len(args) > 0 {
				return usagef("give the spec with -f FILE")
			}
			sp, _, err := engine.ReadSpec(*file, *landscape)
			if err != nil {
				return err
			}
			// What run checks before it touches a foundation, and nothing less: with a
			// landscape and a cf login, the plan against the org's and spaces' quotas.
			var quotas engine.QuotaReader
			var noQuotas error
			if sp.Landscape != nil {
				var cf *platform.CF
				if cf, _, noQuotas = cff.connect(env); noQuotas == nil {
					quotas = cf
				}
			}
			_, plan, err := preflight(ctx, env, sp, env.Getenv("CFBENCH_DB") != "", *binDir, quotas)
			if err != nil {
				return err
			}
			if noQuotas != nil {
				fmt.Fprintf(env.Stdout, "quotas: not checked (%v)\n", noQuotas)
			}
			steps := len(sp.Levels())
			total := time.Duration(steps*len(sp.Variants)) * sp.Ramp.Hold
			fmt.Fprintf(env.Stdout, "%s: valid: %d variant(s), %d step(s) each (%s), about %s of load\n",
				*file, len(sp.Variants), steps, sp.Ramp.Describe(), total)
			fmt.Fprintln(env.Stdout, plan)
			return nil
		}
	},
}
