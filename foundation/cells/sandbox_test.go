//go:build linux

package cells

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// sandboxUser is the user the sandbox tests run instances as: the foundation's own.
const testSandboxUser = "cfbench-app"

type probeResult struct {
	UID    int               `json:"uid"`
	Groups []int             `json:"groups"`
	Read   map[string]string `json:"read"`
	Write  map[string]string `json:"write"`
	Bind   map[string]string `json:"bind"`
}

func probe(t *testing.T, in Instance, q url.Values) probeResult {
	t.Helper()
	resp, err := testhttp.Client.Get(fmt.Sprintf("http://%s:%d/probe?%s", in.Host, in.Port, q.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p probeResult
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// appDir is a droplet's app dir holding the fixture, in a directory closed to others
// as the foundation's state dir is.
func appDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "droplet", "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fixtureBin)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "fixture"), b, 0o755)
	}
	if err == nil {
		err = os.Symlink("fixture", filepath.Join(dir, "fixture-link"))
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSandboxKeepsInstancesFromTheCellsFiles(t *testing.T) {
	testtier.External(t, "a system user for instances (created with useradd when missing)")
	if os.Geteuid() != 0 {
		t.Skip("instances run as another user only when the cells run as root")
	}
	t.Parallel()
	state := t.TempDir() // 0700, as the foundation's state dir
	secret := filepath.Join(state, "foundation.json")
	if err := os.WriteFile(secret, []byte(`{"password":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	app := appDir(t)
	e := startCells(t, func(c *Config) {
		c.User, c.CopyApp, c.TmpDir, c.NoIsolation = testSandboxUser, true, "", true
	})
	spec := fixtureSpec("sandboxed", 2, nil)
	spec.Dir, spec.Command = app, "./fixture-link"
	e.c.Desire(spec)
	eventually(t, 30*time.Second, "two instances running", allRunning(e.c, "sandboxed", 2))
	insts := e.c.Instances("sandboxed")
	env0, env1 := getEnv(t, insts[0]), getEnv(t, insts[1])
	if env0["HOME"] == app || env0["HOME"] == env1["HOME"] || env0["_PWD"] != env0["HOME"] || env0["TMPDIR"] == env1["TMPDIR"] ||
		!strings.HasPrefix(env0["TMPDIR"], filepath.Dir(env0["HOME"])) {
		t.Fatalf("HOME %s / %s, TMPDIR %s / %s, working dir %s: want a copy of %s and a TMPDIR per instance",
			env0["HOME"], env1["HOME"], env0["TMPDIR"], env1["TMPDIR"], env0["_PWD"], app)
	}
	u, err := user.Lookup(testSandboxUser)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(env1["HOME"], "fixture")
	otherEnv := fmt.Sprintf("/proc/%d/environ", insts[1].PID) // its service credentials, a run's secrets
	ownEnv := fmt.Sprintf("/proc/%d/environ", insts[0].PID)
	q := url.Values{
		"read":  {secret, filepath.Join(app, "fixture"), other, otherEnv, ownEnv, filepath.Join(env0["HOME"], "fixture")},
		"write": {filepath.Join(env0["HOME"], "written"), filepath.Join(env0["TMPDIR"], "written"), filepath.Join(app, "written")},
		"bind":  {"0.0.0.0:0", "127.0.0.1:0", "0.0.0.0:80"},
	}
	p := probe(t, insts[0], q)
	p1 := probe(t, insts[1], url.Values{})
	for _, p := range []probeResult{p, p1} {
		if strconv.Itoa(p.UID) == u.Uid || p.UID < instanceUIDBase || p.UID >= instanceUIDBase+instanceUIDs ||
			len(p.Groups) > 1 || (len(p.Groups) == 1 && p.Groups[0] != p.UID) {
			t.Errorf("instance runs as uid %d with groups %v, want a uid of its own from %d, not %s's (%s), and no other group",
				p.UID, p.Groups, instanceUIDBase, testSandboxUser, u.Uid)
		}
	}
	if p.UID == p1.UID {
		t.Errorf("both instances run as uid %d, want a user each", p.UID)
	}
	want := map[string]map[string]bool{ // true: allowed
		// Each instance its own user: another instance's files and environment are closed
		// to it, as between Garden containers.
		"read": {secret: false, filepath.Join(app, "fixture"): false, other: false, otherEnv: false, ownEnv: true,
			filepath.Join(env0["HOME"], "fixture"): true},
		"write": {filepath.Join(env0["HOME"], "written"): true, filepath.Join(env0["TMPDIR"], "written"): true,
			filepath.Join(app, "written"): false},
		// No network namespace (docs/local-foundation.md, "What an app can reach"): any address of the
		// host, but no privileged port.
		"bind": {"0.0.0.0:0": true, "127.0.0.1:0": true, "0.0.0.0:80": false},
	}
	got := map[string]map[string]string{"read": p.Read, "write": p.Write, "bind": p.Bind}
	for kind, paths := range want {
		for path, allowed := range paths {
			if res := got[kind][path]; (res == "ok") != allowed {
				t.Errorf("%s %s: %q, want allowed=%t", kind, path, res, allowed)
			}
		}
	}
	if !strings.Contains(e.c.Sandbox(), "staging as user "+testSandboxUser) {
		t.Errorf("Sandbox() = %q", e.c.Sandbox())
	}
}

// The helper process of TestOrphansOfAKilledRunAreStopped: it runs Cells with a
// record dir and an instance that leaves a child in its group, prints the instance's
// pid once it runs, and serves until killed.
func init() {
	dir := os.Getenv("CELLS_ORPHAN_RECORDS")
	if dir == "" {
		return
	}
	c := New(Config{Name: "orphans", RecordDir: dir, NoIsolation: true, TmpDir: os.Getenv("CELLS_ORPHAN_TMP"), HealthCheckInterval: 25 * time.Millisecond})
	if err := c.Start(context.Background()); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	c.Desire(ProcessSpec{ProcessGUID: "orphan", Dir: os.TempDir(), Instances: 1, HealthCheck: HealthCheck{Type: "process"},
		Command: "sleep 600 & exec sleep 601"})
	for {
		if in := c.Instances("orphan"); len(in) == 1 && in[0].State == StateRunning && in[0].PID > 0 {
			fmt.Println(in[0].PID)
			select {}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOrphansOfAKilledRunAreStopped(t *testing.T) {
	t.Parallel()
	records, tmp := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CELLS_ORPHAN_RECORDS="+records, "CELLS_ORPHAN_TMP="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var leader int
	if _, err := fmt.Fscan(out, &leader); err != nil || leader <= 0 {
		t.Fatalf("the helper did not report its instance: %v", err)
	}
	var members []int
	eventually(t, 30*time.Second, "the instance's shell to start its two sleeps", func() bool {
		members = scanGroups(map[int]bool{leader: true})[leader].pids
		return len(members) == 2
	})
	t.Cleanup(func() { // should the test fail: none of them outlives it
		for _, pid := range members {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// kill -9 of the process that runs the cells: only the leader dies with it.
	cmd.Process.Kill()
	cmd.Wait()
	eventually(t, 30*time.Second, "the instance's first process to die with its cell (PR_SET_PDEATHSIG)", func() bool { return !procstat.Alive(leader) })
	if !groupAlive(leader) {
		t.Fatal("the instance's child died too: nothing left for the next start to stop")
	}

	c := New(Config{Name: "orphans", RecordDir: records, NoIsolation: true, TmpDir: tmp})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Orphans() != 1 {
		t.Errorf("Orphans() = %d, want 1", c.Orphans())
	}
	eventually(t, 30*time.Second, "the orphan's processes to be gone", func() bool { return !groupAlive(leader) })
	if left, _ := os.ReadDir(records); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

func TestOrphanGroupSparesAnotherProcessWithTheRecordedPID(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	start, err := procstat.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if got := orphanGroup(pid, start); len(got) != 1 || got[0] != pid {
		t.Errorf("orphanGroup of the recorded process = %v, want [%d]", got, pid)
	}
	// A record of an earlier process that had this pid: this one is not it.
	if got := orphanGroup(pid, start-1); len(got) != 0 {
		t.Errorf("orphanGroup with another start time = %v, want none", got)
	}
}
