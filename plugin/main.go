// Command cf-benchmark is both a cf CLI plugin and a standalone CLI. The cf CLI starts a
// plugin as `cf-benchmark RPC_PORT COMMAND [args]`; anything else is the standalone CLI
// (`cf-benchmark run -f benchmark.yml`). Both faces run the same commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	cfplugin "code.cloudfoundry.org/cli/v8/plugin"

	"github.com/cf-benchmark/cf-benchmark/plugin/command"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := &command.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	var code int
	if isPluginInvocation(os.Args) {
		p := &cliPlugin{ctx: ctx, env: env}
		cfplugin.Start(p)
		code = p.code
	} else {
		code = command.Main(ctx, env, os.Args[1:])
	}
	stop()
	os.Exit(code)
}

// isPluginInvocation reports whether the cf CLI started us: its first argument is the
// port of its RPC server.
func isPluginInvocation(args []string) bool {
	if len(args) < 2 {
		return false
	}
	port, err := strconv.Atoi(args[1])
	return err == nil && port > 0 && port < 65536
}
