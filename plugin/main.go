// Command cf-benchmark is both a cf CLI plugin and a standalone CLI. The cf CLI starts a
// plugin as `cf-benchmark RPC_PORT COMMAND [args]`; anything else is the standalone CLI
// (`cf-benchmark run -f benchmark.yml`). Both faces run the same commands.
package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	cfplugin "code.cloudfoundry.org/cli/v8/plugin"

	cfbversion "github.com/cf-benchmark/cf-benchmark/internal/version"
	"github.com/cf-benchmark/cf-benchmark/plugin/command"
	"github.com/cf-benchmark/cf-benchmark/plugin/payload"
)

// version is stamped at build time: make build passes
// -ldflags "-X main.version=$(git describe --tags --always --dirty)".
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stderr := os.Stderr
	if dir, err := os.UserCacheDir(); err == nil {
		if log := libraryLog(filepath.Join(dir, "cf-benchmark")); log != nil {
			os.Stderr = log // before any goroutine of ours reads it
		}
	}
	env := &command.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: stderr, Getenv: os.Getenv, Now: time.Now, Spawn: spawn, BinDirs: binDirs(), Carried: carried,
		Version: cfbversion.Of(version, buildInfo())}
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

// buildInfo is what the Go toolchain recorded in this binary, or nil.
func buildInfo() *debug.BuildInfo {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info
	}
	return nil
}

// carried writes out the cfbench program this plugin carries into the user's cache
// directory (~/.cache, ~/Library/Caches, %LocalAppData%), where it stays for the next
// run of the same build.
func carried() (path, version string, err error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	path, err = payload.Extract(filepath.Join(dir, "cf-benchmark", "pushed"))
	return path, payload.Version(), err
}

// binDirs are where the program pushed to Cloud Foundry is looked for when this build
// carries none: beside this program (make build puts it in bin/), then ./bin. As a cf
// CLI plugin this program is a copy under the cf CLI's plugin directory, so ./bin
// matters then.
func binDirs() []string {
	dirs := []string{}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	return append(dirs, "bin")
}

// spawn starts this binary again with args in a session of its own, its output
// appended to logPath, and does not wait for it.
func spawn(args, env []string, logPath string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// The log is its owner's alone; and it gets only the log (stderr): the foundation
	// prints the admin password to stdout, which the caller prints from the settings.
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	if err := log.Chmod(0o600); err != nil { // a log from before
		return 0, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = log // stdout: /dev/null
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	return pid, cmd.Process.Release()
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
