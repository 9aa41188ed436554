package staging

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/fstree"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
)

func stageNode(ctx context.Context, req Request, appDir string, log io.Writer) (Result, error) {
	fmt.Fprintln(log, "-----> Nodejs Buildpack (local foundation)")
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	hasPkg := fileExists(filepath.Join(appDir, "package.json"))
	if hasPkg {
		b, err := os.ReadFile(filepath.Join(appDir, "package.json"))
		if err != nil {
			return Result{}, fmt.Errorf("nodejs_buildpack: %w", err)
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			return Result{}, fmt.Errorf("nodejs_buildpack: parse package.json: %w", err)
		}
	}

	// Decide what runs before installing anything, so a hopeless app fails fast.
	command := req.Command
	if command == "" {
		command = procfileWeb(appDir)
	}
	switch {
	case command != "":
	case pkg.Scripts["start"] != "":
		command = "npm start"
	case fileExists(filepath.Join(appDir, "server.js")):
		command = "node server.js"
	default:
		return Result{}, fmt.Errorf("nodejs_buildpack: %w: set command in the manifest, a start script in package.json, or add server.js", ErrNoStartCommand)
	}

	if hasPkg {
		if err := npmInstall(ctx, req, appDir, log); err != nil {
			return Result{}, err
		}
	}
	return Result{Buildpack: buildpackNode, StartCommand: command}, nil
}

// npmInstall installs production dependencies: `npm ci` when a lockfile pins them,
// else `npm install`. npm runs in its own process group so cancelling ctx also ends
// install scripts it started. Its cache and HOME live beside the app and are removed
// afterwards, so the droplet holds only the app. With req.User, npm runs as that user
// in a copy of the app it owns (see Request), and the installed app is copied back as
// this process's.
func npmInstall(ctx context.Context, req Request, appDir string, log io.Writer) error {
	args := []string{"install", "--omit=dev", "--no-audit", "--no-fund"}
	if fileExists(filepath.Join(appDir, "package-lock.json")) {
		args = []string{"ci", "--omit=dev", "--no-audit", "--no-fund"}
	}
	dir, work := appDir, filepath.Join(req.DropletDir, ".staging")
	if req.User != nil {
		scratch, err := os.MkdirTemp(req.ScratchDir, "staging-")
		if err != nil {
			return fmt.Errorf("nodejs_buildpack: %w", err)
		}
		defer os.RemoveAll(scratch)
		if err := fstree.Chown(scratch, req.User); err != nil {
			return fmt.Errorf("nodejs_buildpack: %w", err)
		}
		dir, work = filepath.Join(scratch, "app"), filepath.Join(scratch, ".staging")
		if err := fstree.Copy(appDir, dir, req.User); err != nil {
			return fmt.Errorf("nodejs_buildpack: copy the app to stage it: %w", err)
		}
	}
	defer os.RemoveAll(work)
	for _, d := range []string{work, filepath.Join(work, "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("nodejs_buildpack: %w", err)
		}
		if err := fstree.Chown(d, req.User); err != nil {
			return fmt.Errorf("nodejs_buildpack: %w", err)
		}
	}

	env := map[string]string{
		"PATH":                       hostPath(),
		"HOME":                       work,
		"TMPDIR":                     filepath.Join(work, "tmp"),
		"NODE_ENV":                   "production",
		"npm_config_cache":           filepath.Join(work, "npm-cache"),
		"npm_config_update_notifier": "false",
	}
	for k, v := range req.Env {
		env[k] = v
	}
	fmt.Fprintf(log, "       Installing node modules (npm %s)\n", args[0])
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	cmd.Env = envList(env)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = osproc.Group(req.User, 0)
	cmd.Cancel = func() error { return osproc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("nodejs_buildpack: npm %s: %w", args[0], ctx.Err())
		}
		return fmt.Errorf("nodejs_buildpack: npm %s failed (see staging log): %w", args[0], err)
	}
	if req.User == nil {
		return nil
	}
	if err := os.RemoveAll(appDir); err != nil {
		return fmt.Errorf("nodejs_buildpack: %w", err)
	}
	if err := fstree.Copy(dir, appDir, nil); err != nil {
		return fmt.Errorf("nodejs_buildpack: copy the staged app into the droplet: %w", err)
	}
	return nil
}

// hostPath is the PATH npm runs with: this process's own, since the local foundation
// uses the machine's node and npm. It is the one place staging reads the environment.
func hostPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return "/usr/local/bin:/usr/bin:/bin"
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
