package foundation

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
)

// child is a process this test started; done is closed once it exited and was reaped,
// with err what it exited with.
type child struct {
	pid  int
	done chan struct{}
	err  error
}

// startChild starts name; the process is reaped when it exits, so that a stopped child
// does not linger as a zombie that signal 0 still finds, and killed (by its pid) when
// the test ends.
func startChild(t *testing.T, name string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // an error means it is gone already
		<-c.done
	})
	return c
}

// deadPID is the pid of a process of this test that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := startChild(t, "true")
	<-c.done
	return c.pid
}

func writePID(t *testing.T, dir string, pid string) {
	t.Helper()
	if err := os.WriteFile(pidFile(dir), []byte(pid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// token is what a foundation of pid writes in its pid file (pid and start time);
// off shifts the start time, as in a pid file of an earlier process with that pid.
func token(t *testing.T, pid int, off int) string {
	t.Helper()
	start, err := procstat.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(pidToken(pid, uint64(int64(start)+int64(off))))
}

// writeSettings makes dir look like the state directory of a foundation whose API is
// apiURL (an http://127.0.0.1:PORT).
func writeSettings(t *testing.T, dir, apiURL string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(apiURL, "http://"))
	p, _ := strconv.Atoi(port)
	b, _ := json.Marshal(Settings{APIPort: p, RouterPort: 1, User: "admin", Password: "pw", AppsDomain: "apps.localhost"})
	if err := os.WriteFile(filepath.Join(dir, "foundation.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunningReadsThePIDFile(t *testing.T) {
	t.Parallel()
	live := startChild(t, "sleep", "60").pid
	cases := []struct {
		name, content string // "" content: no pid file
		want          int
	}{
		{"no pid file", "", 0},
		{"garbage", "not a pid", 0},
		{"negative", "-1", 0},
		{"exited process", strconv.Itoa(deadPID(t)) + " 1", 0},
		{"live process", token(t, live, 0), live},
		{"live process with another start time (the pid was reused)", token(t, live, -1), 0},
		{"live process, no start time (an earlier version's file), not a foundation", strconv.Itoa(live), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.content != "" {
				writePID(t, dir, c.content)
			}
			pid, ok := Running(dir)
			if pid != c.want || ok != (c.want != 0) {
				t.Fatalf("Running = %d, %t; want %d", pid, ok, c.want)
			}
		})
	}
}

func TestStopTerminatesTheProcessAndThenFindsNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Stop(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Stop without a foundation = %v, want ErrNotRunning", err)
	}
	sleeper := startChild(t, "sleep", "60")
	pid := sleeper.pid
	writePID(t, dir, token(t, pid, 0))
	got, err := Stop(context.Background(), dir)
	if err != nil || got != pid {
		t.Fatalf("Stop = %d, %v; want %d", got, err, pid)
	}
	var ee *exec.ExitError
	<-sleeper.done
	if !errors.As(sleeper.err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("sleep ended with %v, want killed by SIGTERM", sleeper.err)
	}
	if _, err := Stop(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Stop after it stopped = %v, want ErrNotRunning", err)
	}
}

func TestStopLeavesAloneAProcessThatGotAStalePIDFilesPID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A foundation killed with -9 left its pid file; its pid is now this sleep's.
	other := startChild(t, "sleep", "60")
	writePID(t, dir, token(t, other.pid, -1))
	if pid, err := Stop(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Stop = %d, %v; want ErrNotRunning", pid, err)
	}
	if !procstat.Alive(other.pid) {
		t.Fatal("Stop signalled the process that got the stale pid")
	}
}

func TestStatusSaysWhetherTheAPIAnswers(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	dir := t.TempDir()
	if _, err := ReadStatus(context.Background(), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("ReadStatus without a foundation = %v, want ErrNotRunning", err)
	}
	live := startChild(t, "sleep", "60").pid
	writePID(t, dir, token(t, live, 0))
	writeSettings(t, dir, api.URL)
	st, err := ReadStatus(context.Background(), dir)
	if err != nil || st.PID != live || !st.Answering || st.Info.APIURL != api.URL || st.Info.User != "admin" || st.Info.RouterAddr != "127.0.0.1:1" {
		t.Fatalf("ReadStatus = %+v, %v; want pid %d answering at %s", st, err, live, api.URL)
	}
	api.Close()
	if st, err := ReadStatus(context.Background(), dir); err != nil || st.Answering {
		t.Fatalf("ReadStatus with the API gone = %+v, %v; want not answering", st, err)
	}
}

func TestDetach(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer api.Close()
	t.Run("returns once the spawned process serves", func(t *testing.T) {
		dir := t.TempDir()
		var got []string
		live := startChild(t, "sleep", "60").pid
		var gotEnv []string
		spawn := func(args, env []string, logPath string) (int, error) {
			got, gotEnv = append(args, logPath), env
			// What `foundation start` does in the spawned process: settings, pid file.
			writeSettings(t, dir, api.URL)
			writePID(t, dir, token(t, live, 0))
			return live, nil
		}
		pid, info, err := Detach(context.Background(), dir, spawn, []string{"--cells", "apps=0,loadgen=0"}, []string{"SECRET=x"})
		want := []string{"foundation", "start", "--state-dir", dir, "--cells", "apps=0,loadgen=0", LogFile(dir)}
		if err != nil || pid != live || info.APIURL != api.URL || strings.Join(got, " ") != strings.Join(want, " ") || strings.Join(gotEnv, " ") != "SECRET=x" {
			t.Fatalf("Detach = %d, %+v, %v; spawned %q with %q; want pid %d, API %s, spawned %q with SECRET=x", pid, info, err, got, gotEnv, live, api.URL, want)
		}
		if _, _, err := Detach(context.Background(), dir, spawn, nil, nil); !errors.As(err, new(*RunningError)) {
			t.Fatalf("Detach while one runs = %v, want a *RunningError", err)
		}
	})
	t.Run("quotes the log of a process that exits", func(t *testing.T) {
		dir := t.TempDir()
		spawn := func(args, _ []string, logPath string) (int, error) {
			os.WriteFile(logPath, []byte("listen: address already in use\n"), 0o644)
			return deadPID(t), nil
		}
		if _, _, err := Detach(context.Background(), dir, spawn, nil, nil); err == nil || !strings.Contains(err.Error(), "exited during start-up") ||
			!strings.HasSuffix(err.Error(), "listen: address already in use") {
			t.Fatalf("Detach = %v, want the end of the log", err)
		}
	})
	t.Run("sees a spawned process that exited unreaped", func(t *testing.T) {
		dir := t.TempDir()
		var cmd *exec.Cmd
		spawn := func(args, _ []string, logPath string) (int, error) {
			os.WriteFile(logPath, []byte("error: boom\n"), 0o600)
			cmd = exec.Command("true") // not reaped by Detach: a zombie once it exits
			if err := cmd.Start(); err != nil {
				return 0, err
			}
			return cmd.Process.Pid, nil
		}
		defer func() { cmd.Wait() }()
		if _, _, err := Detach(context.Background(), dir, spawn, nil, nil); err == nil || !strings.Contains(err.Error(), "exited during start-up") {
			t.Fatalf("Detach = %v, want the exit seen", err)
		}
	})
	t.Run("says when it cannot spawn", func(t *testing.T) {
		boom := errors.New("boom")
		spawn := func([]string, []string, string) (int, error) { return 0, boom }
		if _, _, err := Detach(context.Background(), t.TempDir(), spawn, nil, nil); !errors.Is(err, boom) {
			t.Fatalf("Detach = %v, want the spawn error", err)
		}
	})
}

func TestAFailedStartIsOneLine(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	settings := func(api, router int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			b, _ := json.Marshal(Settings{APIPort: api, RouterPort: router, PostgresPort: freePort, User: "admin", Password: "pw", Secret: "00"})
			if err := os.WriteFile(filepath.Join(dir, "foundation.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    string
	}{
		{"API port taken", settings(takenPort, freePort), "API port " + strconv.Itoa(takenPort) + " is taken"},
		{"router port taken", settings(freePort, takenPort), "router port " + strconv.Itoa(takenPort) + " is taken"},
		{"another start holds the state dir", func(t *testing.T, dir string) {
			settings(freePort, freePort)(t, dir)
			lock, err := lockStateDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lock.Close() })
		}, "a foundation is already starting from "},
		{"damaged settings", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "foundation.json"), []byte("{"), 0o600)
		}, "foundation.json is damaged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.prepare(t, dir)
			f := New(Config{StateDir: dir})
			err := f.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Start = %v; want one line saying %q", err, c.want)
			}
			if werr := f.Wait(); werr == nil {
				t.Error("Wait after a failed Start = nil")
			}
			f.Close() // must not panic, nor block
			// The lock went with the failed start: the next one may try again.
			if c.name != "another start holds the state dir" {
				lock, err := lockStateDir(dir)
				if err != nil {
					t.Fatalf("the failed start kept the state dir: %v", err)
				}
				lock.Close()
			}
		})
	}
}

func TestStateDirIsClosedToOtherUsers(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(filepath.Join(dir, "cc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"foundation.log", "access.log"} { // as an earlier version left them
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
	os.Mkdir(filepath.Join(dir, "pg"), 0o755)
	if err := closeStateDir(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{"": stateDirMode, "cc": 0o700, "foundation.log": 0o600, "access.log": 0o600, "pg": 0o755}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%q: %v, %v; want mode %v", name, fi.Mode().Perm(), err, mode)
		}
	}
}
