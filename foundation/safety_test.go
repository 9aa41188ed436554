//go:build linux

package foundation

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/operation"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// stubZip is the stub target zipped as a binary app.
func stubZip(t *testing.T) []byte {
	t.Helper()
	bin := t.TempDir()
	build(t, moduleRoot(t), "go", "build", "-o", filepath.Join(bin, "cfbench-stub"), "./cmd/cfbench-stub")
	return zipDir(t, bin, zip.Store)
}

// pushBinary pushes bits as app name with command, one instance, and waits until the
// router reaches it.
func pushBinary(t *testing.T, info Info, bits []byte, name, command string) string {
	t.Helper()
	cfg, err := config.New(info.APIURL, config.UserPassword(info.User, info.Password))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	one := uint(1)
	app, err := operation.NewAppPushOperation(cl, "cfbench", "apps").Push(ctx, &operation.AppManifest{Name: name,
		Buildpacks: []string{"binary_buildpack"}, Routes: &operation.AppManifestRoutes{{Route: name + ".apps.localhost"}},
		AppManifestProcess: operation.AppManifestProcess{Command: command, Memory: "64M", Instances: &one}}, bytes.NewReader(bits))
	if err != nil {
		t.Fatalf("push %s: %v", name, err)
	}
	waitFor(t, name+" to answer through the router", func() bool {
		req, _ := http.NewRequest("GET", "http://"+info.RouterAddr+"/hello", nil)
		req.Host = name + ".apps.localhost"
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return app.GUID
}

// appsCannotReachTheSecrets pushes an app that tries to read the foundation's
// settings (admin password, token-signing secret), the API's state, the services'
// Postgres password and the logs, to list the state dir, and to bind every address;
// it reports what worked in its log. What it reaches is what docs/local-foundation.md says ("What
// an app can reach").
func appsCannotReachTheSecrets(t *testing.T, f *Foundation, bits []byte) {
	if os.Geteuid() != 0 {
		t.Skip("instances run as another user than the foundation's only when it runs as root")
	}
	info := f.Info()
	dir := info.StateDir
	secrets := []string{"foundation.json", "access.log", "cc/state.json", "pg/password"}
	dirs := []string{".", "cc", "instances", "run"}
	var probe strings.Builder
	for _, p := range secrets {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("the foundation has no %s to probe: %v", p, err)
		}
		fmt.Fprintf(&probe, `if cat %[1]s/%[2]s >/dev/null 2>&1; then echo "probe read %[2]s: open"; else echo "probe read %[2]s: closed"; fi; `, dir, p)
	}
	for _, d := range dirs {
		fmt.Fprintf(&probe, `if ls %[1]s/%[2]s >/dev/null 2>&1; then echo "probe list %[2]s: open"; else echo "probe list %[2]s: closed"; fi; `, dir, d)
	}
	probe.WriteString(`if node -e "require('net').createServer().listen(0,'0.0.0.0',()=>process.exit(0)).on('error',()=>process.exit(1))"; ` +
		`then echo "probe bind 0.0.0.0: open"; else echo "probe bind 0.0.0.0: closed"; fi; `)
	// Another app's environment (its service credentials; a run's tunnel secrets): an
	// app holding a secret runs first, and the prober looks for it in every process's.
	secret := fmt.Sprintf("cfbench-probe-secret-%d", time.Now().UnixNano())
	pushBinary(t, info, bits, "holder", "CFBENCH_PROBE_SECRET="+secret+" exec ./cfbench-stub")
	fmt.Fprintf(&probe, `if cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -q '^CFBENCH_PROBE_SECRET=%s'; `+
		`then echo "probe read another app's environment: open"; else echo "probe read another app's environment: closed"; fi; `+
		// The control: the same reading of its own environment works.
		`if cat /proc/$$/environ 2>/dev/null | tr '\0' '\n' | grep -q '^HOME='; then echo "probe read its own environment: open"; `+
		`else echo "probe read its own environment: closed"; fi; `, secret)
	probe.WriteString(`echo "probe uid: $(id -u)"; touch "$HOME/w" "$TMPDIR/w" && echo "probe write home: open"; exec ./cfbench-stub`)
	guid := pushBinary(t, info, bits, "prober", probe.String())

	b, err := os.ReadFile(filepath.Join(dir, "instances", guid, "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`probe (.+): (\S+)`).FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{"bind 0.0.0.0": "open", "write home": "open"} // docs/local-foundation.md: no network namespace
	for _, p := range secrets {
		want["read "+p] = "closed"
	}
	want["read another app's environment"], want["read its own environment"] = "closed", "open"
	for _, d := range dirs {
		want["list "+d] = "closed"
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if got["uid"] == "0" || got["uid"] == "" {
		t.Errorf("the app runs as uid %q, want an unprivileged user", got["uid"])
	}
	if !strings.Contains(info.Isolation, "a user of their own") || !strings.Contains(info.Isolation, "staging as user "+InstanceUser) {
		t.Errorf("Info.Isolation = %q, want it to say whom instances run as", info.Isolation)
	}
	// No secret in any file of the state dir but the settings.
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path, filepath.Join(dir, "pg")) || path == filepath.Join(dir, "foundation.json") {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(info.Password)) {
			t.Errorf("%s holds the admin password", path)
		}
		return nil
	})
}

// The helper process of TestAStartAfterAKillStopsTheOrphans: a foundation that serves
// from the state dir given until it is killed.
func init() {
	dir := os.Getenv("CFBENCH_TEST_FOUNDATION_DIR")
	if dir == "" {
		return
	}
	err := Serve(context.Background(), Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true}, func(Info) {})
	fmt.Fprintln(os.Stderr, "serve:", err)
	os.Exit(1)
}

// groupMembers lists the processes of process group pgid.
func groupMembers(pgid int) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if st, err := procstat.Parse(b); err == nil && st.PGRP == pgid && st.State != 'Z' {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			out = append(out, pid)
		}
	}
	return out
}

// TestAStartAfterAKillStopsTheOrphans kills (-9) a foundation this test started in
// another process, whose app left a child in its instance: the instance's first
// process dies with the foundation, and the next start stops the child and says so.
// Then, on that foundation, an app cannot reach its secrets (appsCannotReachTheSecrets).
func TestAStartAfterAKillStopsTheOrphans(t *testing.T) {
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	t.Parallel()
	dir := testpg.Dir(t)
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CFBENCH_TEST_FOUNDATION_DIR="+dir)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if pid, ok := Running(dir); ok && pid == cmd.Process.Pid {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the foundation exited: %s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the foundation did not start: %s", stderr.String())
		}
	}
	info, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	bits := stubZip(t)
	pushBinary(t, info, bits, "leaver", "sleep 600 & exec ./cfbench-stub")
	records, err := os.ReadDir(filepath.Join(dir, "run"))
	if err != nil || len(records) != 1 {
		t.Fatalf("instance records %v, %v; want one", records, err)
	}
	var leader int
	fmt.Sscanf(records[0].Name(), "%d", &leader)
	members := groupMembers(leader)
	if len(members) != 2 {
		t.Fatalf("the instance's group %d has processes %v, want the stub and its sleep", leader, members)
	}
	t.Cleanup(func() {
		for _, pid := range members {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	cmd.Process.Kill()
	<-exited
	waitFor(t, "the instance's first process to die with the foundation", func() bool { return !procstat.Alive(leader) })
	if len(groupMembers(leader)) != 1 {
		t.Fatalf("the sleep the instance left is gone too: nothing for the next start to do")
	}

	var log testlog.Buffer
	f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitFor(t, "the orphan to be stopped", func() bool { return len(groupMembers(leader)) == 0 })
	if !strings.Contains(log.String(), "stopped 1 app instances that a killed foundation left running") {
		t.Errorf("the start did not say it stopped the orphan:\n%s", log.String())
	}
	t.Run("apps cannot reach the foundation's secrets", func(t *testing.T) { appsCannotReachTheSecrets(t, f, bits) })
}
