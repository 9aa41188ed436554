//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
)

// cfEverydayCommands is what a newcomer types first, with the real cf CLI against the
// running local foundation (cf logged in with cf auth): cf push by flags and with a
// manifest of two apps, cf logs --recent with staging output and a crash's reason,
// cf routes, cf events and cf login; then a Staticfile app and rolling deployments
// (cfdeploy_test.go). It pushes the stub (bins/stub) into space apps.
func cfEverydayCommands(t *testing.T, cf *cfCLI, info foundation.Info, bins string) {
	stub := filepath.Join(bins, "stub")
	cf.mustRun(t, "target", "-o", "cfbench", "-s", "apps")

	// Pushed by flags.
	out := cf.mustRun(t, "push", "cli-flags", "-p", stub, "-b", "binary_buildpack", "-m", "64M", "-k", "64M", "--no-route", "-u", "process",
		"-c", "./cfbench-stub")
	if !regexp.MustCompile(`(?m)^name:\s+cli-flags$`).MatchString(out) || !regexp.MustCompile(`(?m)^#0\s+running\s`).MatchString(out) {
		t.Errorf("cf push by flags shows no running cli-flags:\n%s", out)
	}
	// An app that crashes at once: the push fails, and the logs and events say why. Its
	// health check is the default, the port, which a process that exits never passes.
	// With the process check an instance is RUNNING from its start until its exit is
	// seen, on Diego too, and a cf push polling in between succeeds: on a busy host that
	// was once the case here, the shell's exit waiting for a CPU.
	if res := cf.run(t, "push", "cli-crash", "-p", stub, "-b", "binary_buildpack", "-m", "64M", "-k", "64M", "--no-route",
		"-c", "echo crash reason follows; echo and this on stderr >&2; exit 3"); res.code == 0 {
		t.Errorf("cf push of an app that exits at once exits 0:\n%s", res.stdout)
	}

	manifest := filepath.Join(t.TempDir(), "two.yml")
	m := "applications:\n" +
		"- {name: cli-a, path: " + stub + ", buildpacks: [binary_buildpack], command: ./cfbench-stub, memory: 64M, disk_quota: 64M, routes: [{route: cli-a-home.apps.localhost}]}\n" +
		"- {name: cli-b, path: " + stub + ", buildpacks: [binary_buildpack], command: ./cfbench-stub, memory: 64M, disk_quota: 64M, no-route: true}\n"
	if err := os.WriteFile(manifest, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	out = cf.mustRun(t, "push", "-f", manifest)
	for _, want := range []string{"+ - name: cli-a", "+ - name: cli-b", "name:                cli-b"} {
		if !strings.Contains(out, want) {
			t.Errorf("cf push -f (two apps) lacks %q:\n%s", want, out)
		}
	}
	// The stub's files are in the resource cache since the first push.
	if !strings.Contains(out, "All files found in remote cache; nothing to upload.") {
		t.Errorf("cf push -f uploaded files the first push had uploaded:\n%s", out)
	}

	var logs string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		logs = cf.mustRun(t, "logs", "cli-crash", "--recent")
		if strings.Contains(logs, `"exit_description"=>"APP/PROC/WEB: Exited with status 3"`) {
			break
		}
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\[STG/0\]\s+OUT -----> Binary Buildpack`),
		regexp.MustCompile(`\[APP/PROC/WEB/0\]\s+OUT crash reason follows`),
		regexp.MustCompile(`\[APP/PROC/WEB/0\]\s+ERR and this on stderr`),
		regexp.MustCompile(`\[CELL/0\]\s+OUT Exited: APP/PROC/WEB: Exited with status 3`),
		regexp.MustCompile(`\[API/0\]\s+OUT App instance exited .*"reason"=>"CRASHED", "exit_description"=>"APP/PROC/WEB: Exited with status 3"`),
	} {
		if !want.MatchString(logs) {
			t.Errorf("cf logs --recent cli-crash has no line matching %s:\n%s", want, logs)
		}
	}

	routes := cf.mustRun(t, "routes")
	if !regexp.MustCompile(`(?m)^apps\s+cli-a-home\s+apps\.localhost\s+.*\scli-a\s`).MatchString(routes) {
		t.Errorf("cf routes lacks cli-a-home mapped to cli-a:\n%s", routes)
	}
	events := cf.mustRun(t, "events", "cli-crash")
	for _, want := range []string{"audit.app.create", "audit.app.process.crash", "exit_description: APP/PROC/WEB: Exited with status 3"} {
		if !strings.Contains(events, want) {
			t.Errorf("cf events cli-crash lacks %q:\n%s", want, events)
		}
	}

	out = cf.mustRun(t, "login", "-a", info.APIURL, "-u", info.User, "-p", info.Password, "-o", "cfbench", "-s", "apps")
	if !regexp.MustCompile(`(?m)^user:\s+` + regexp.QuoteMeta(info.User) + `$`).MatchString(out) {
		t.Errorf("cf login shows no user %s:\n%s", info.User, out)
	}
	if res := cf.run(t, "login", "-a", info.APIURL, "-u", info.User, "-p", "wrong", "-o", "cfbench", "-s", "apps"); res.code == 0 {
		t.Errorf("cf login with a wrong password exits 0:\n%s", res.stdout)
	}
	// A failed login logs cf out: log back in for what follows.
	cf.mustRun(t, "login", "-a", info.APIURL, "-u", info.User, "-p", info.Password, "-o", "cfbench", "-s", "apps")
	t.Run("a Staticfile app", func(t *testing.T) { cfStaticfileApp(t, cf, info) })
	t.Run("rolling deployments", func(t *testing.T) { cfRollingDeployments(t, cf, info, "cli-a", "cli-a-home.apps.localhost", stub) })
	// delete -r takes the app's routes with it.
	cf.mustRun(t, "delete", "-f", "-r", "cli-a")
	if routes := cf.mustRun(t, "routes"); strings.Contains(routes, "cli-a-home") {
		t.Errorf("cf routes after cf delete -r cli-a still lists its route:\n%s", routes)
	}
}
