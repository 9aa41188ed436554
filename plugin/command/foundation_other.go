//go:build !linux

package command

import (
	"context"
	"flag"
	"runtime"
)

// foundationCmd is listed off Linux too, so that help and `cf-benchmark foundation
// start` say in one line what to do instead of running the local foundation.
var foundationCmd = &Command{
	Name:        "foundation",
	Synopsis:    foundationSynopsis,
	Summary:     foundationSummary + " (Linux only)",
	ExampleArgs: foundationExample,
	Unavailable: foundationUnavailable(runtime.GOOS),
	Flags: func(*flag.FlagSet) func(context.Context, *Env, []string) error {
		return func(context.Context, *Env, []string) error { return nil } // Execute refuses first
	},
}

// isNotRunning is false: without the foundation no error says it is not running.
func isNotRunning(error) bool { return false }
