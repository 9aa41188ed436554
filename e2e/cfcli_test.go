//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/plugin/command"
)

const (
	pluginName = "cf-benchmark"
	// pluginVersion is stamped into the binary the way make build does (git describe
	// --tags --always --dirty), so the version that cf shows, shownVersion, must have
	// come through GetMetadata from the build.
	pluginVersion = "v7.8.9-3-g1a2b3c4-dirty"
	shownVersion  = "7.8.9"

	execTimeout = 2 * time.Minute
	// buildTimeout allows for a cold build cache; `make test` warms the cf CLI's first.
	buildTimeout = 10 * time.Minute
)

// TestCFCLIPlugin installs the plugin into the real cf CLI and checks what a user sees
// through cf: the plugin list, each command's help, a command run over cf's plugin RPC,
// and the uninstall.
func TestCFCLIPlugin(t *testing.T) {
	testtier.External(t, "the real cf CLI")
	root := moduleRoot(t)
	bin := buildPlugin(t, root)
	cf := newCF(t, root)

	cf.mustRun(t, "install-plugin", "-f", bin)
	// cf keeps its plugin registry under CF_PLUGIN_HOME; finding it there shows the user's
	// own registry was left alone.
	if _, err := os.Stat(filepath.Join(cf.pluginHome, ".cf", "plugins", "config.json")); err != nil {
		t.Fatalf("cf did not use the private CF_PLUGIN_HOME: %v", err)
	}

	t.Run("plugins lists every command", func(t *testing.T) {
		out := cf.mustRun(t, "plugins")
		// One row per command: plugin, version, command name, command help.
		if got, want := len(pluginRows(out)), len(command.PluginCommands()); got != want {
			t.Errorf("cf plugins shows %d rows for %s, want one per command (%d):\n%s", got, pluginName, want, out)
		}
		for _, c := range command.PluginCommands() {
			row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pluginName) + `\s+` + regexp.QuoteMeta(shownVersion) +
				`\s+` + regexp.QuoteMeta(c.PluginName) + `\s+` + regexp.QuoteMeta(c.Summary) + `\s*$`)
			if !row.MatchString(out) {
				t.Errorf("cf plugins has no row %q %q %q %q:\n%s", pluginName, shownVersion, c.PluginName, c.Summary, out)
			}
		}
	})

	t.Run("help", func(t *testing.T) {
		// The usage lines the README documents, so a synopsis change shows up here too.
		documented := map[string]string{"run-benchmark": "cf run-benchmark -f FILE"}
		for _, c := range command.PluginCommands() {
			t.Run(c.PluginName, func(t *testing.T) {
				out := cf.mustRun(t, "help", c.PluginName)
				sec := helpSections(out)
				if got, want := sec["NAME"], []string{c.PluginName + " - " + c.Summary}; !slices.Equal(got, want) {
					t.Errorf("NAME section = %q, want %q\n%s", got, want, out)
				}
				if got, want := sec["USAGE"], []string{c.Usage("cf")}; !slices.Equal(got, want) {
					t.Errorf("USAGE section = %q, want %q\n%s", got, want, out)
				}
				if want, ok := documented[c.PluginName]; ok && !strings.HasPrefix(c.Usage("cf"), want) {
					t.Errorf("usage %q does not start with the documented %q", c.Usage("cf"), want)
				}
				if got, want := sec["EXAMPLE"], []string{c.Example("cf")}; !slices.Equal(got, want) {
					t.Errorf("EXAMPLE section = %q, want %q\n%s", got, want, out)
				}
				flags := c.FlagHelp()
				if len(sec["OPTIONS"]) != len(flags) {
					t.Errorf("OPTIONS section has %d lines, want one per flag (%d)\n%s", len(sec["OPTIONS"]), len(flags), out)
				}
				for name, usage := range flags {
					// cf renders an option key "-f" as "--f" (it counts the hyphen as part
					// of the name); either spelling is one the plugin's flag parser accepts.
					opt := regexp.MustCompile(`^--?` + regexp.QuoteMeta(strings.TrimLeft(name, "-")) + `\s+` + regexp.QuoteMeta(usage) + `$`)
					if !anyMatch(opt, sec["OPTIONS"]) {
						t.Errorf("OPTIONS section has no line for %s %q\n%s", name, usage, out)
					}
				}
			})
		}
	})

	t.Run("command runs through cf", func(t *testing.T) {
		validate := command.Lookup("validate")
		spec := filepath.Join(root, "examples", "demo.yml")
		res := cf.run(t, validate.PluginName, "-f", spec)
		if res.err != nil || res.code != 0 {
			t.Fatalf("cf %s -f %s: exit %d, %v\nstdout:\n%s\nstderr:\n%s", validate.PluginName, spec, res.code, res.err, res.stdout, res.stderr)
		}
		if !strings.Contains(res.stdout, spec+": valid") {
			t.Errorf("cf %s printed no verdict for %s:\n%s", validate.PluginName, spec, res.stdout)
		}

		// A bad invocation: the plugin answers with its usage as seen from cf, and cf
		// reports any non-zero plugin exit as 1, so the plugin's exit code 2 is lost.
		res = cf.run(t, validate.PluginName)
		if res.err != nil || res.code != 1 {
			t.Errorf("cf %s without -f: exit %d, %v; want exit 1\nstderr:\n%s", validate.PluginName, res.code, res.err, res.stderr)
		}
		if !strings.Contains(res.stderr, validate.Usage("cf")) {
			t.Errorf("cf %s without -f: stderr lacks the usage %q:\n%s", validate.PluginName, validate.Usage("cf"), res.stderr)
		}
	})

	cf.mustRun(t, "uninstall-plugin", pluginName)
	out := cf.mustRun(t, "plugins")
	if rows := pluginRows(out); len(rows) != 0 {
		t.Errorf("cf plugins still lists %s after uninstall-plugin:\n%s", pluginName, out)
	}
	for _, c := range command.PluginCommands() {
		if res := cf.run(t, "help", c.PluginName); res.err != nil || res.code == 0 {
			t.Errorf("cf help %s after uninstall: exit %d, %v; want a failure (no such command)", c.PluginName, res.code, res.err)
		}
	}
}

// pluginRows returns the rows of `cf plugins` output that belong to this plugin.
func pluginRows(out string) []string {
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == pluginName {
			rows = append(rows, line)
		}
	}
	return rows
}

// helpSections splits `cf help COMMAND` output into its sections: a header line
// "NAME:" at column 0, then indented lines, returned trimmed and without blank lines.
func helpSections(out string) map[string][]string {
	sec := map[string][]string{}
	var cur string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":"):
			cur = strings.TrimSuffix(line, ":")
			sec[cur] = []string{}
		case cur != "":
			sec[cur] = append(sec[cur], strings.TrimSpace(line))
		}
	}
	return sec
}

func anyMatch(re *regexp.Regexp, lines []string) bool {
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// cfCLI runs the real cf binary with a private CF_HOME and CF_PLUGIN_HOME.
type cfCLI struct {
	path       string
	pluginHome string
	env        []string
	dir        string
}

// newCF installs the cf CLI with the project's script (a no-op when it is cached) and
// returns it set up with private config dirs.
func newCF(t *testing.T, root string) *cfCLI {
	t.Helper()
	testtier.External(t, "the real cf CLI")
	res := run(t, buildTimeout, root, os.Environ(), filepath.Join(root, "scripts", "install-cf-cli.sh"))
	if res.err != nil || res.code != 0 {
		t.Fatalf("scripts/install-cf-cli.sh: exit %d, %v\n%s", res.code, res.err, res.stderr)
	}
	path := strings.TrimSpace(res.stdout)
	if !filepath.IsAbs(path) || strings.Contains(path, "\n") {
		t.Fatalf("scripts/install-cf-cli.sh printed %q, want the absolute path of cf", res.stdout)
	}
	// Homes with spaces in their paths, as on Windows ("C:\Users\Ada Lovelace"): the
	// cf CLI, the plugin and the commands it runs must quote them where it matters.
	home, pluginHome := filepath.Join(t.TempDir(), "cf home"), filepath.Join(t.TempDir(), "plugin home")
	for _, d := range []string{home, pluginHome} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing of the user's cf set-up may leak in (CF_HOME, CF_USERNAME, …), and the
	// locale is pinned because cf translates its own text.
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "CF_") || name == "LANG" || name == "LANGUAGE" || strings.HasPrefix(name, "LC_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "CF_HOME="+home, "CF_PLUGIN_HOME="+pluginHome, "CF_TRACE=false", "CF_COLOR=false", "LANG=en_US.UTF-8")
	// cf runs in a dir the results store's server can reach (its state dir, .cfbench,
	// is under it) when tests run as root.
	return &cfCLI{path: path, pluginHome: pluginHome, env: env, dir: testpg.Dir(t)}
}

func (c *cfCLI) run(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, execTimeout, c.dir, c.env, c.path, args...)
}

// mustRun runs cf and fails the test unless it exits 0; it returns stdout.
func (c *cfCLI) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	res := c.run(t, args...)
	if res.err != nil || res.code != 0 {
		t.Fatalf("cf %s: exit %d, %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.code, res.err, res.stdout, res.stderr)
	}
	return res.stdout
}

// moduleRoot is the directory of this module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	res := run(t, execTimeout, ".", os.Environ(), "go", "env", "GOMOD")
	gomod := strings.TrimSpace(res.stdout)
	if res.err != nil || res.code != 0 || gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: %q, exit %d, %v\n%s", gomod, res.code, res.err, res.stderr)
	}
	return filepath.Dir(gomod)
}

// buildPlugin builds the cf-benchmark binary as the Makefile does and returns its path.
func buildPlugin(t *testing.T, root string) string {
	t.Helper()
	return buildOnce(t, root, append(os.Environ(), "CGO_ENABLED=0"), filepath.Join("plugin", pluginName), "./plugin",
		"-ldflags", "-X main.version="+pluginVersion)
}

// result is how a program ended. err is set only when it could not run to its end
// (not found, timed out); a non-zero exit is only code.
type result struct {
	stdout, stderr string
	code           int
	err            error
}

func run(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.err = fmt.Errorf("%s: no exit within %s: %w", name, timeout, ctx.Err())
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		res.err = err
	}
	return res
}
