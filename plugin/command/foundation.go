package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/foundation/cells/cgroup"
)

// foundationCmd runs the local foundation. It is a command of the standalone CLI only:
// a long-running server has no place inside a cf CLI invocation.
var foundationCmd = &Command{
	Name:        "foundation",
	Synopsis:    "start|stop|status [--state-dir DIR] [--detach] [--cells apps=0,loadgen=1] [--es-url URL [--log-quota N/1h]]",
	Summary:     "Run a local Cloud Foundry on this machine: CC v3 API, router, cells, a postgres service",
	ExampleArgs: "foundation start --detach --state-dir .cfbench/foundation",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		dir := fs.String("state-dir", ".cfbench/foundation", "directory holding the foundation's state, logs and settings")
		detach := fs.Bool("detach", false, "start: run in the background and return once it answers")
		metrics := fs.Duration("metrics-interval", 15*time.Second, "start: how often instance usage is sampled, like Diego's container metrics (stats are up to this old)")
		esURL := fs.String("es-url", "", "start: ship router access-log lines to this Elasticsearch, shaped as CF's Logstash pipeline shapes them")
		quotaFlag := fs.String("log-quota", "", "start: ship at most N lines per window, like hosted logging (e.g. 1000/1h); the rest are dropped and counted")
		cellsFlag := fs.String("cells", "", "start: cells (isolation segments) and their CPUs, e.g. apps=0,loadgen=1 or apps=0-3,loadgen=4-7 (default: the CPUs split in two)")
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 {
				return usagef("give one of start, stop or status")
			}
			switch args[0] {
			case "start":
				if *metrics <= 0 {
					return usagef("--metrics-interval must be positive")
				}
				cfg := foundation.Config{StateDir: *dir, ESURL: *esURL, StatsInterval: *metrics}
				var err error
				if cfg.Cells, err = parseCells(*cellsFlag); err != nil {
					return usagef("--cells: %v", err)
				}
				if cfg.LogQuota, cfg.LogQuotaWindow, err = parseQuota(*quotaFlag); err != nil {
					return usagef("--log-quota: %v", err)
				}
				if *quotaFlag != "" && *esURL == "" {
					return usagef("--log-quota limits what is shipped to Elasticsearch: give --es-url too")
				}
				if *detach {
					// The background process gets the same flags.
					var args []string
					fs.Visit(func(f *flag.Flag) {
						if f.Name != "detach" && f.Name != "state-dir" {
							args = append(args, "--"+f.Name, f.Value.String())
						}
					})
					return detachFoundation(ctx, env, *dir, args)
				}
				return runFoundation(ctx, env, cfg)
			case "stop":
				return stopFoundation(env, *dir)
			case "status":
				return foundationStatus(env, *dir)
			}
			return usagef("unknown action %q: give one of start, stop or status", args[0])
		}
	},
}

// errNotRunning makes status exit 3, as init scripts do for a stopped service.
var errNotRunning = errors.New("the foundation is not running")

func pidFile(dir string) string { return filepath.Join(dir, "foundation.pid") }

// runFoundation runs the foundation in the foreground until ctx ends (Ctrl-C, SIGTERM).
func runFoundation(ctx context.Context, env *Env, cfg foundation.Config) error {
	dir := cfg.StateDir
	if pid, ok := runningPID(dir); ok {
		return fmt.Errorf("a foundation is already running from %s (pid %d); stop it with: cf-benchmark foundation stop --state-dir %s", dir, pid, dir)
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.Logger = logger
	f := foundation.New(cfg)
	if err := f.Start(ctx); err != nil { // ends when ctx does: Ctrl-C, SIGTERM
		return err
	}
	defer f.Close()
	// For foundation status, which runs in another process.
	if err := os.WriteFile(filepath.Join(dir, "isolation.txt"), []byte(f.Info().Isolation+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile(dir))
	printFoundation(env, f.Info(), "Local foundation running")
	fmt.Fprintln(env.Stdout, "Stop it with Ctrl-C.")
	select {
	case <-ctx.Done():
		fmt.Fprintln(env.Stderr, "stopping the foundation (app instances get SIGTERM, 10 s grace)")
		return nil
	case err := <-waitErr(f):
		return err
	}
}

func waitErr(f *foundation.Foundation) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f.Wait() }()
	return ch
}

// detachFoundation starts the foundation in a background process and returns once its
// API answers.
func detachFoundation(ctx context.Context, env *Env, dir string, flags []string) error {
	if pid, ok := runningPID(dir); ok {
		return fmt.Errorf("a foundation is already running from %s (pid %d)", dir, pid)
	}
	if env.Spawn == nil {
		return errors.New("cannot start a background process from here")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "foundation.log")
	pid, err := env.Spawn(append([]string{"foundation", "start", "--state-dir", dir}, flags...), logPath)
	if err != nil {
		return fmt.Errorf("start the foundation in the background: %w", err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if p, ok := runningPID(dir); ok && p == pid {
			if info, err := readInfo(dir); err == nil && answers(info.APIURL) {
				printFoundation(env, info, fmt.Sprintf("Local foundation running in the background (pid %d, log %s)", pid, logPath))
				fmt.Fprintf(env.Stdout, "Stop it with: cf-benchmark foundation stop --state-dir %s\n", dir)
				return nil
			}
		}
		if syscall.Kill(pid, 0) != nil {
			return fmt.Errorf("the foundation exited during start-up; its log %s ends with:\n%s", logPath, tailFile(logPath, 2000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the foundation (pid %d) did not answer within 3 minutes; see %s", pid, logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func stopFoundation(env *Env, dir string) error {
	pid, ok := runningPID(dir)
	if !ok {
		fmt.Fprintf(env.Stdout, "No foundation is running from %s.\n", dir)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop the foundation (pid %d): %w", pid, err)
	}
	// App instances get CF's 10 s between SIGTERM and SIGKILL; allow for them.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			fmt.Fprintf(env.Stdout, "Stopped the foundation (pid %d).\n", pid)
			return nil
		}
	}
	return fmt.Errorf("the foundation (pid %d) is still running 60 s after SIGTERM", pid)
}

func foundationStatus(env *Env, dir string) error {
	pid, ok := runningPID(dir)
	if !ok {
		fmt.Fprintf(env.Stdout, "No foundation is running from %s. Start one with: cf-benchmark foundation start --detach --state-dir %s\n", dir, dir)
		return errNotRunning
	}
	info, err := readInfo(dir)
	if err != nil {
		return err
	}
	state := "answering"
	if !answers(info.APIURL) {
		state = "NOT answering (starting up, or stuck: see " + filepath.Join(dir, "foundation.log") + ")"
	}
	printFoundation(env, info, fmt.Sprintf("Local foundation running (pid %d), API %s", pid, state))
	return nil
}

// runningPID reads the pid file and reports whether that process is alive.
func runningPID(dir string) (int, bool) {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return pid, true
}

// readInfo rebuilds a running foundation's Info from its settings file.
func readInfo(dir string) (foundation.Info, error) {
	var s foundation.Settings
	b, err := os.ReadFile(filepath.Join(dir, "foundation.json"))
	if err != nil {
		return foundation.Info{}, fmt.Errorf("read the foundation's settings: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return foundation.Info{}, fmt.Errorf("the foundation's settings are damaged: %w", err)
	}
	abs, _ := filepath.Abs(dir)
	iso, _ := os.ReadFile(filepath.Join(dir, "isolation.txt"))
	return foundation.Info{Isolation: strings.TrimSpace(string(iso)), APIURL: fmt.Sprintf("http://127.0.0.1:%d", s.APIPort), RouterAddr: fmt.Sprintf("127.0.0.1:%d", s.RouterPort),
		AppsDomain: s.AppsDomain, User: s.User, Password: s.Password, StateDir: abs, AccessLog: filepath.Join(abs, "access.log")}, nil
}

func answers(apiURL string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(apiURL + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func printFoundation(env *Env, in foundation.Info, headline string) {
	w := env.Stdout
	fmt.Fprintf(w, "%s\n", headline)
	fmt.Fprintf(w, "  API:        %s\n", in.APIURL)
	fmt.Fprintf(w, "  Router:     http://%s  (routes are *.%s: send the Host header, e.g. curl -H 'Host: myapp.%s' http://%s/)\n", in.RouterAddr, in.AppsDomain, in.AppsDomain, in.RouterAddr)
	fmt.Fprintf(w, "  User:       %s\n", in.User)
	fmt.Fprintf(w, "  Password:   %s\n", in.Password)
	fmt.Fprintf(w, "  State:      %s (access log: %s)\n", in.StateDir, in.AccessLog)
	if in.Isolation != "" {
		fmt.Fprintf(w, "  Isolation:  %s\n", in.Isolation)
		if strings.HasPrefix(in.Isolation, "NONE") {
			fmt.Fprintf(w, "Warning: without isolation, CPU figures of apps and generators taint each other.\n")
		}
	}
	fmt.Fprintf(w, "Log in with the cf CLI:\n")
	fmt.Fprintf(w, "  cf api %s\n", in.APIURL)
	fmt.Fprintf(w, "  cf auth %s %s\n", in.User, in.Password)
	fmt.Fprintf(w, "  cf target -o cfbench -s apps\n")
}

// parseQuota reads --log-quota N/WINDOW (e.g. 1000/1h); "" is no quota.
func parseQuota(s string) (int, time.Duration, error) {
	if s == "" {
		return 0, 0, nil
	}
	n, w, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 1 {
		return 0, 0, fmt.Errorf("%q: want lines per window, like 1000/1h", s)
	}
	window, err := time.ParseDuration(w)
	if err != nil || window <= 0 {
		return 0, 0, fmt.Errorf("%q: the window %q is not a duration like 1h or 15m", s, w)
	}
	return count, window, nil
}

// parseCells reads --cells: name=CPUS entries separated by commas, where CPUS is a CPU
// list (0, 0-3, or 0,2 continuing over the next commas until the next name=).
func parseCells(s string) ([]cells.Cell, error) {
	if s == "" {
		return nil, nil
	}
	var out []cells.Cell
	for _, tok := range strings.Split(s, ",") {
		name, list, named := strings.Cut(tok, "=")
		if !named {
			if len(out) == 0 {
				return nil, fmt.Errorf("%q: want name=CPUS, e.g. apps=0,loadgen=1", s)
			}
			name, list = "", tok
		}
		cpus, err := cgroup.ParseCPUList(list)
		if err != nil || len(cpus) == 0 {
			return nil, fmt.Errorf("%q: %q is not a CPU list like 0, 0-3 or 4-7", s, list)
		}
		if named {
			if name == "" {
				return nil, fmt.Errorf("%q: a cell needs a name", s)
			}
			out = append(out, cells.Cell{Name: name, CPUs: cpus})
		} else {
			last := &out[len(out)-1]
			last.CPUs = append(last.CPUs, cpus...)
		}
	}
	return out, nil
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
