package command

import (
	"errors"
	"fmt"

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

// usageError is an invocation problem; it maps to ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// isUsage reports whether err is an invocation problem: the command's own, or one the
// engine found in what it was given (engine.ErrUsage).
func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || errors.Is(err, engine.ErrUsage)
}

// exitCode prints err for the user and returns the exit code it maps to: the edge
// where errors become what a script sees.
func exitCode(env *Env, prog string, c *Command, err error) int {
	var (
		ue   *usageError
		serr spec.Errors
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &serr):
		shown, more := serr.Shown()
		for _, e := range shown {
			fmt.Fprintln(env.Stderr, e.Error())
		}
		if more > 0 {
			fmt.Fprintf(env.Stderr, "… and %d more\n", more)
		}
		fmt.Fprintf(env.Stderr, "%d problem(s) in the spec\n", len(serr))
		return ExitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "error: %s\nUsage: %s\n", ue.msg, c.Usage(prog))
		return ExitUsage
	case errors.Is(err, engine.ErrUsage):
		fmt.Fprintf(env.Stderr, "error: %v\nUsage: %s\n", err, c.Usage(prog))
		return ExitUsage
	case errors.Is(err, engine.ErrUnsupported):
		fmt.Fprintf(env.Stderr, "error: %v\n", err)
		return ExitUsage
	case errors.Is(err, engine.ErrAborted):
		return ExitAborted
	case isNotRunning(err):
		return ExitNotRunning
	case errors.Is(err, errThresholds):
		return ExitThresholds
	}
	fmt.Fprintf(env.Stderr, "error: %v\n", err)
	return ExitFailure
}
