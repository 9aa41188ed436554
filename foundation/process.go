package foundation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// A foundation runs as one process per state directory, which it names in
// STATE_DIR/foundation.pid while it serves; the commands that start it in the
// background, ask for its status and stop it run in other processes and find it there.

// ErrNotRunning is returned by Status and Stop when no foundation runs from the state
// directory.
var ErrNotRunning = errors.New("the foundation is not running")

// RunningError is returned when a foundation already runs from the state directory.
type RunningError struct {
	Dir string
	PID int
}

func (e *RunningError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("a foundation is already starting from %s", e.Dir)
	}
	return fmt.Sprintf("a foundation is already running from %s (pid %d)", e.Dir, e.PID)
}

// Timeouts of the process management; variables so that tests need not wait them out.
var (
	// DetachTimeout bounds Detach's wait for the background foundation to answer.
	DetachTimeout = 3 * time.Minute
	// StopTimeout bounds Stop's wait after SIGTERM: instances get CF's 10 s between
	// SIGTERM and SIGKILL, and Postgres its shutdown.
	StopTimeout = 60 * time.Second
	pollEvery   = 100 * time.Millisecond
)

func pidFile(dir string) string { return filepath.Join(dir, "foundation.pid") }

// LogFile is where a foundation started with Detach writes its log.
func LogFile(dir string) string { return filepath.Join(dir, "foundation.log") }

// Running returns the pid of the foundation running from the state directory dir, and
// whether there is one: its pid file names a live process that is the one that wrote
// it (same start time; for a pid file of an earlier version without one, a process
// whose command line is a foundation start). A pid file left by a killed foundation
// whose pid another process got since names no foundation.
func Running(dir string) (int, bool) {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, start, hasStart, err := parsePIDFile(b)
	if err != nil {
		return 0, false
	}
	ok := procstat.Same(pid, start)
	if !hasStart {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		ok = err == nil && procstat.Alive(pid) && bytes.Contains(cmdline, []byte("foundation\x00start"))
	}
	if !ok {
		return 0, false
	}
	return pid, true
}

// Serve runs a foundation in this process until ctx ends (nil, unless stopping went
// wrong) or a part of it fails. While it serves, the state directory names this process, so that Status, Stop
// and a second Serve find it; ready is called once with its Info when it serves. A
// foundation already running from the directory is a *RunningError.
func Serve(ctx context.Context, cfg Config, ready func(Info)) error {
	dir := cfg.StateDir
	if pid, ok := Running(dir); ok {
		return &RunningError{Dir: dir, PID: pid}
	}
	f := New(cfg)
	if err := f.Start(ctx); err != nil { // it ends when ctx does
		return err
	}
	defer f.Close()
	// For Status, which runs in another process.
	if err := os.WriteFile(filepath.Join(dir, "isolation.txt"), []byte(f.Info().Isolation+"\n"), 0o600); err != nil {
		return fmt.Errorf("write isolation: %w", err)
	}
	start, err := procstat.StartTime(os.Getpid())
	if err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	if err := os.WriteFile(pidFile(dir), []byte(pidToken(os.Getpid(), start)), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	defer os.Remove(pidFile(dir))
	ready(f.Info())
	return f.Wait()
}

// Spawner starts this program again with args and, beside this process's environment,
// env (KEY=VALUE: secrets go there, not on a command line that every user of the
// machine can read), detached from the terminal, with its output appended to logPath,
// and returns its pid without waiting for it.
type Spawner func(args, env []string, logPath string) (pid int, err error)

// Detach starts a foundation from the state directory dir in a background process:
// spawn runs `foundation start --state-dir DIR FLAGS...` with env (which calls Serve), with its
// log in LogFile(dir). It returns the process's pid and the foundation's Info once that
// process serves and its API answers, within DetachTimeout. A foundation already running
// is a *RunningError; a process that exits first is an error quoting the end of its log.
func Detach(ctx context.Context, dir string, spawn Spawner, flags, env []string) (int, Info, error) {
	if pid, ok := Running(dir); ok {
		return 0, Info{}, &RunningError{Dir: dir, PID: pid}
	}
	if err := closeStateDir(dir); err != nil {
		return 0, Info{}, err
	}
	logPath := LogFile(dir)
	pid, err := spawn(append([]string{"foundation", "start", "--state-dir", dir}, flags...), env, logPath)
	if err != nil {
		return 0, Info{}, fmt.Errorf("start the foundation in the background: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, DetachTimeout)
	defer cancel()
	for {
		if p, ok := Running(dir); ok && p == pid {
			if info, err := ReadInfo(dir); err == nil && answers(wctx, info.APIURL) {
				return pid, info, nil
			}
		}
		if !procstat.Alive(pid) { // a zombie too: the spawner need not reap it
			return 0, Info{}, fmt.Errorf("the foundation exited during start-up (log %s): %s", logPath, lastLine(logPath))
		}
		if !wait.For(wctx, pollEvery) {
			if err := ctx.Err(); err != nil {
				return 0, Info{}, err
			}
			return 0, Info{}, fmt.Errorf("the foundation (pid %d) did not answer within %s; see %s", pid, DetachTimeout, logPath)
		}
	}
}

// Stop sends SIGTERM to the foundation running from dir and returns its pid once it
// has exited, within StopTimeout. No foundation running is ErrNotRunning, also when
// the pid file names a process that is not the foundation (see Running): that one is
// left alone.
func Stop(ctx context.Context, dir string) (int, error) {
	pid, ok := Running(dir)
	if !ok {
		return 0, ErrNotRunning
	}
	start, err := procstat.StartTime(pid)
	if err != nil {
		return 0, ErrNotRunning // exited meanwhile
	}
	if err := osproc.Signal(pid, syscall.SIGTERM); err != nil {
		return 0, fmt.Errorf("stop the foundation (pid %d): %w", pid, err)
	}
	wctx, cancel := context.WithTimeout(ctx, StopTimeout)
	defer cancel()
	for procstat.Same(pid, start) {
		if !wait.For(wctx, pollEvery) {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("the foundation (pid %d) is still running %s after SIGTERM", pid, StopTimeout)
		}
	}
	return pid, nil
}

// Status is a running foundation as another process sees it.
type Status struct {
	PID  int
	Info Info
	// Answering tells whether its API answers now; it does not while starting up.
	Answering bool
}

// ReadStatus returns the status of the foundation running from dir, or ErrNotRunning.
func ReadStatus(ctx context.Context, dir string) (Status, error) {
	pid, ok := Running(dir)
	if !ok {
		return Status{}, ErrNotRunning
	}
	info, err := ReadInfo(dir)
	if err != nil {
		return Status{}, err
	}
	return Status{PID: pid, Info: info, Answering: answers(ctx, info.APIURL)}, nil
}

// ReadInfo rebuilds the Info of the foundation of the state directory dir from its
// settings (written on its first start), as another process needs it.
func ReadInfo(dir string) (Info, error) {
	var s Settings
	b, err := os.ReadFile(filepath.Join(dir, "foundation.json"))
	if err != nil {
		return Info{}, fmt.Errorf("read the foundation's settings: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Info{}, fmt.Errorf("the foundation's settings are damaged: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, err
	}
	iso, _ := os.ReadFile(filepath.Join(dir, "isolation.txt"))
	in := Info{Isolation: strings.TrimSpace(string(iso)), APIURL: fmt.Sprintf("http://127.0.0.1:%d", s.APIPort), RouterAddr: routerAddr(s),
		AppsDomain: s.AppsDomain, User: s.User, Password: s.Password, StateDir: abs, AccessLog: filepath.Join(abs, "access.log")}
	// A store exists once a start with a log quota (and no Elasticsearch) made it.
	if _, err := os.Stat(filepath.Join(abs, LogStoreFile)); err == nil {
		in.LogStore = filepath.Join(abs, LogStoreFile)
	}
	return in, nil
}

// apiClient asks a foundation's API whether it answers, with a transport of its own:
// whatever else in the process closes http.DefaultTransport's idle connections
// (httptest servers do) cannot break its request.
var apiClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// answers reports whether the API at apiURL answers its root with 200.
func answers(ctx context.Context, apiURL string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/", nil)
	if err != nil {
		return false
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// lastLine is the last line of the file at path (its error, when a start failed), or
// why there is none.
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
