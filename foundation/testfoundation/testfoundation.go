// Package testfoundation gives tests a running local foundation and a go-cfclient logged
// in to it, and pushes the stub target (a binary app) to it, as the run engine pushes
// apps and generators.
package testfoundation

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/operation"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// Start runs a throwaway foundation in a fresh state dir for the test (stats sampled
// every 200 ms, 2 s stop grace) and returns it with a logged-in client. Both end with
// the test. Each of opts may change the configuration before the start (e.g. a log
// quota). Under -short (`make check`) it skips t.
func Start(t testing.TB, opts ...func(*foundation.Config)) (*foundation.Foundation, *client.Client) {
	t.Helper()
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	dir := testpg.Dir(t)
	// The foundation lives until the test's cleanup closes it.
	fc := foundation.Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true}
	for _, o := range opts {
		o(&fc)
	}
	f := foundation.New(fc)
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	info := f.Info()
	cfg, err := config.New(info.APIURL, config.UserPassword(info.User, info.Password))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, cl
}

// PlatformOffApps keeps the foundation's own work off the apps' cell, as on a Cloud
// Foundry (foundation.Config.PlatformCPUs): for the measured runs, whose checks judge
// the apps' CPU. It pins this whole test process (and the cf CLI and plugin it starts)
// until the foundation stops: only for tests that run alone.
func PlatformOffApps(c *foundation.Config) {
	c.PlatformCPUs = foundation.AppsFreeCPUs(c.Cells, runtime.NumCPU())
}

// StubBinary builds cmd/cfbench-stub for linux/amd64, statically, as a binary app
// needs it, and returns its path (cfbench-stub in a temp dir of the test).
func StubBinary(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(t.TempDir(), "cfbench-stub")
	build := exec.Command("go", "build", "-o", bin, "./cmd/cfbench-stub")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stub: %v\n%s", err, out)
	}
	return bin
}

// StubZip builds cmd/cfbench-stub and zips it as a binary app's package, stored
// uncompressed: a package goes to the local foundation only, and deflating megabytes
// under the race detector cost seconds of CPU per test.
func StubZip(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(StubBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "cfbench-stub", Method: zip.Store}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write(b)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PushStub pushes the stub as app name into space of org cfbench with instances and
// returns the app's guid (also its web process's). It does not wait for it to run.
func PushStub(t testing.TB, cl *client.Client, bits []byte, space, name string, instances uint) string {
	t.Helper()
	return PushStubCommand(t, cl, bits, space, name, "./cfbench-stub", instances)
}

// PushStubCommand is PushStub with the app's start command, e.g. with the stub's flags.
func PushStubCommand(t testing.TB, cl *client.Client, bits []byte, space, name, command string, instances uint) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := &operation.AppManifest{Name: name, Buildpacks: []string{"binary_buildpack"},
		Routes:             &operation.AppManifestRoutes{{Route: name + ".apps.localhost"}},
		AppManifestProcess: operation.AppManifestProcess{Command: command, Memory: "64M", Instances: &instances}}
	app, err := operation.NewAppPushOperation(cl, "cfbench", space).Push(ctx, m, bytes.NewReader(bits))
	if err != nil {
		t.Fatalf("push %s: %v", name, err)
	}
	return app.GUID
}
