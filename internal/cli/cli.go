// Package cli is what this project's commands share around their own work: a context
// that ends on Ctrl-C or SIGTERM, flags parsed with the exit codes of Go's flag
// package, and errors printed as "name: error".
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
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

// ListenAddr is where a command that serves listens: on every interface at port (the
// --port flag, whose default is $PORT, as Cloud Foundry sets it for an app), or at
// fallback when port is "" (fallback "" makes a port required). A port is a number from
// 0 (any free port) to 65535.
func ListenAddr(port, fallback string) (string, error) {
	if port == "" {
		if fallback == "" {
			return "", errors.New("no port: PORT is not set (Cloud Foundry sets it) and --port is not given")
		}
		return fallback, nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("port %q is not a port number (0-65535)", port)
	}
	return net.JoinHostPort("0.0.0.0", port), nil
}
