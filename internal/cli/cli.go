// Package cli is what this project's commands share around their own work: a context
// that ends on Ctrl-C or SIGTERM, flags parsed with the exit codes of Go's flag
// package, and errors printed as "name: error".
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main exits with the code run returns; run's context ends on SIGINT or SIGTERM, which
// stops the command gracefully.
func Main(run func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}

// Parse parses args with fs, which prints its errors and usage. ok is false when the
// command is to exit with code instead of going on: 0 after -h, 2 after a bad flag.
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}

// Failer returns what a command of fs does with an error that ends it: print "name:
// error" to the flag set's output and return exit code 1.
func Failer(fs *flag.FlagSet) func(error) int {
	return func(err error) int {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return 1
	}
}
