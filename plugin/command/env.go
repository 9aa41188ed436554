package command

import (
	"io"
	"log/slog"
	"time"
)

// Env is what a command may use of its process.
type Env struct {
	// Stdin is the input of commands that read one (logs parse); nil when there is none.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Now is the clock.
	Now func() time.Time
	// Spawn starts this program again with args, detached from the terminal, with its
	// output appended to logPath, and returns its pid. Nil where that is impossible.
	Spawn func(args, env []string, logPath string) (pid int, err error)
	// CF is the cf CLI's connection (API, token) when running as a plugin; nil when
	// standalone, where commands read the cf CLI's config file.
	CF func() (CFTarget, error)
	// Carried writes out the cfbench program this plugin carries, to push to Cloud
	// Foundry, and returns its path and the version it was built as;
	// payload.ErrNotCarried when it carries none (a build without make build). Nil for
	// none.
	Carried func() (path, version string, err error)
	// BinDirs are where to look for the cfbench program when neither --bin-dir nor
	// $CFBENCH_BIN_DIR names a directory and the plugin carries none: the directory of
	// this executable, then ./bin (make build puts it in bin/).
	BinDirs []string
	// Version is this build's version (internal/version), which --version prints.
	Version string
	// prog is "cf" or "cf-benchmark", set by Execute, for hints naming other commands.
	prog string
}

// envToken is the variable a workload header names for the user's own Cloud Foundry
// token (e.g. Authorization: "${CF_OAUTH_TOKEN}"): as a plugin it comes from the cf
// CLI's connection unless set; standalone, set it: CF_OAUTH_TOKEN=$(cf oauth-token).
const envToken = "CF_OAUTH_TOKEN"

// lookupEnv is the environment generators expand header values from: the process's,
// plus the cf CLI's token as CF_OAUTH_TOKEN when running as a plugin.
func (env *Env) lookupEnv(name string) (string, bool) {
	if v := env.Getenv(name); v != "" {
		return v, true
	}
	if name == envToken && env.CF != nil {
		if t, err := env.CF(); err == nil && t.AccessToken != "" {
			return t.AccessToken, true
		}
	}
	return "", false
}

// command is how the user invokes the command called name (its standalone name; one of
// those whose plugin name is benchmark-NAME) in hints: "cf benchmark-export" as a
// plugin, "cf-benchmark export" standalone.
func (env *Env) command(name string) string {
	if env.prog == "cf" {
		return "cf benchmark-" + name
	}
	return "cf-benchmark " + name
}

// logger is the log of a command: warnings and worse to stderr, apart from what the
// user reads on stdout.
func (env *Env) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
