package foundation

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/operation"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// The foundation end to end: the real cf CLI and go-cfclient drive it, a binary, a
// Node.js and a Java app are pushed, staged and run as processes, reached through the
// router, scaled, stopped and started, bound to a postgres service, and all of it comes
// back after a restart of the foundation.

// moduleRoot is the repository root (for go build and the install script).
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// cfCLI is the real cf CLI with a private CF_HOME.
type cfCLI struct {
	bin, home string
}

func newCF(t *testing.T, root string) *cfCLI {
	t.Helper()
	testtier.External(t, "the real cf CLI")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "install-cf-cli.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("install the cf CLI: %v\n%s", err, stderr.String())
	}
	return &cfCLI{bin: strings.TrimSpace(string(out)), home: t.TempDir()}
}

// run runs cf and returns its combined output and whether it exited 0.
func (c *cfCLI) run(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = []string{"CF_HOME=" + c.home, "CF_COLOR=false", "CF_TRACE=false", "LANG=en_US.UTF-8", "PATH=" + os.Getenv("PATH"), "HOME=" + c.home}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func (c *cfCLI) must(t *testing.T, args ...string) string {
	t.Helper()
	out, ok := c.run(t, args...)
	if !ok {
		t.Fatalf("cf %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// zipDir zips dir (modes kept), as `cf push` uploads an app directory, each file
// compressed with method: zip.Deflate as the cf CLI does, or zip.Store where the bytes
// do not matter (a binary's megabytes deflated under the race detector cost seconds of
// CPU).
func zipDir(t *testing.T, dir string, method uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name, _ = filepath.Rel(dir, path)
		h.Method = method
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func build(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// fixtures builds the three apps: the stub target (binary), the Node.js and the Java
// hello apps of the staging tests.
func fixtures(t *testing.T, root string) (binary, node, java []byte) {
	t.Helper()
	bin := t.TempDir()
	build(t, root, "go", "build", "-o", filepath.Join(bin, "cfbench-stub"), "./cmd/cfbench-stub")
	classes := t.TempDir()
	build(t, root, "javac", "-d", classes, filepath.Join("foundation", "staging", "testdata", "java", "Hello.java"))
	jar := filepath.Join(t.TempDir(), "hello.jar")
	build(t, classes, "jar", "--create", "--file", jar, "--main-class", "Hello", ".")
	java, err := os.ReadFile(jar) // a jar is a zip: `cf push -p hello.jar` uploads it as is
	if err != nil {
		t.Fatal(err)
	}
	return zipDir(t, bin, zip.Store), zipDir(t, filepath.Join(root, "foundation", "staging", "testdata", "node"), zip.Deflate), java
}

func start(t *testing.T, dir string) *Foundation {
	t.Helper()
	f := New(Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second, Throwaway: true})
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// get sends a request through the router for host.
func get(t *testing.T, f *Foundation, host, path string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+f.Info().RouterAddr+path, nil)
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s through the router: %v", host, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestFoundationEndToEnd(t *testing.T) {
	testtier.External(t, "the real cf CLI, PostgreSQL, a JDK and Node.js")
	for _, tool := range []string{"javac", "jar", "java", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: the foundation stages Java and Node.js apps with the machine's toolchains", tool)
		}
	}
	root := moduleRoot(t)
	cf := newCF(t, root)
	binZip, nodeZip, javaJar := fixtures(t, root)
	dir := testpg.Dir(t)
	f := start(t, dir)
	defer func() { f.Close() }()
	info := f.Info()

	// The cf CLI logs in and looks around.
	cf.must(t, "api", info.APIURL)
	cf.must(t, "auth", info.User, info.Password)
	if out, ok := cf.run(t, "auth", info.User, "wrong"); ok || !strings.Contains(out, "Credentials were rejected") {
		t.Fatalf("cf auth with a wrong password:\n%s", out)
	}
	cf.must(t, "auth", info.User, info.Password)
	cf.must(t, "target", "-o", "cfbench", "-s", "apps")
	if out := cf.must(t, "orgs"); !regexp.MustCompile(`(?m)^cfbench$`).MatchString(out) {
		t.Fatalf("cf orgs:\n%s", out)
	}
	if out := cf.must(t, "spaces"); !strings.Contains(out, "apps") || !strings.Contains(out, "loadgen") {
		t.Fatalf("cf spaces:\n%s", out)
	}
	if out := cf.must(t, "isolation-segments"); !regexp.MustCompile(`(?m)^apps\s+cfbench`).MatchString(out) || !regexp.MustCompile(`(?m)^loadgen\s+cfbench`).MatchString(out) {
		t.Fatalf("cf isolation-segments:\n%s", out)
	}
	if out := cf.must(t, "marketplace"); !regexp.MustCompile(`(?m)^postgres\s+db\s`).MatchString(out) {
		t.Fatalf("cf marketplace:\n%s", out)
	}
	cf.must(t, "create-service", "postgres", "db", "results")
	if out := cf.must(t, "services"); !regexp.MustCompile(`(?m)^results\s+postgres\s+db\s.*create succeeded`).MatchString(out) {
		t.Fatalf("cf services:\n%s", out)
	}

	// go-cfclient pushes the three apps, as the run engine will.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := config.New(info.APIURL, config.UserPassword(info.User, info.Password))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	push := func(m *operation.AppManifest, bits []byte) string {
		t.Helper()
		app, err := operation.NewAppPushOperation(cl, "cfbench", "apps").Push(ctx, m, bytes.NewReader(bits))
		if err != nil {
			t.Fatalf("push %s: %v", m.Name, err)
		}
		return app.GUID
	}
	routes := func(host string) *operation.AppManifestRoutes {
		return &operation.AppManifestRoutes{{Route: host + ".apps.localhost"}}
	}
	one := uint(1)
	stub := push(&operation.AppManifest{Name: "stub", Buildpacks: []string{"binary_buildpack"}, Routes: routes("stub"),
		Services:           &operation.AppManifestServices{{Name: "results"}},
		AppManifestProcess: operation.AppManifestProcess{Command: "./cfbench-stub", Memory: "64M", Instances: &one}}, binZip)
	push(&operation.AppManifest{Name: "node-hello", Routes: routes("node-hello"),
		AppManifestProcess: operation.AppManifestProcess{Memory: "128M", Instances: &one}}, nodeZip)
	push(&operation.AppManifest{Name: "java-hello", Routes: routes("java-hello"),
		AppManifestProcess: operation.AppManifestProcess{Memory: "1G", Instances: &one}}, javaJar)

	// Each answers through the router, by Host header, once its instance runs (push
	// returns when the app is started, not when it is up).
	for host, want := range map[string]string{"stub.apps.localhost": "hello\n", "node-hello.apps.localhost": "hello from node", "java-hello.apps.localhost": "hello from java, max heap"} {
		path := map[bool]string{true: "/hello", false: "/"}[strings.HasPrefix(host, "stub")]
		waitFor(t, host+" to run", func() bool {
			code, _ := get(t, f, host, path, nil)
			return code != http.StatusServiceUnavailable
		})
		if code, body := get(t, f, host, path, nil); code != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("%s: %d %q, want 200 %q", host, code, body, want)
		}
	}

	// cf scale waits until the new instances run; the stats show all of them.
	cf.must(t, "scale", "stub", "-i", "3")
	// cf scale returns once one instance runs, as on CF; wait for all three.
	waitFor(t, "3 running instances of stub", func() bool {
		st, err := cl.Processes.GetStats(ctx, stub)
		running := 0
		for _, s := range st.Stats {
			if s.State == "RUNNING" {
				running++
			}
		}
		return err == nil && running == 3
	})
	out := cf.must(t, "app", "stub")
	if !regexp.MustCompile(`instances:\s+3/3`).MatchString(out) || !strings.Contains(out, "stub.apps.localhost") || !regexp.MustCompile(`#2\s+running`).MatchString(out) {
		t.Fatalf("cf app stub after scaling to 3:\n%s", out)
	}
	// The real cf CLI reads the Log Cache the root links: the cells' lines of each
	// instance, decoded by its own (strict) protojson.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, ok := cf.run(t, "logs", "stub", "--recent")
		if ok && strings.Contains(out, "[CELL/2] OUT Container became healthy") && strings.Contains(out, "[CELL/0] OUT Starting instance") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cf logs stub --recent shows no cell lines of instances 0 and 2:\n%s", out)
		}
	}
	stats, err := cl.Processes.GetStats(ctx, stub)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Stats) != 3 {
		t.Fatalf("%d stats entries, want 3", len(stats.Stats))
	}
	for _, s := range stats.Stats {
		if s.State != "RUNNING" || !strings.HasPrefix(s.Host, "127.0.") || s.MemoryQuota != 64<<20 || s.IsolationSegment == nil || *s.IsolationSegment != "apps" {
			t.Fatalf("stats %+v", s)
		}
	}
	// With cgroups, the apps space's cell and the loadgen space's cell are different
	// hosts; a generator pushed there shows it.
	if strings.HasPrefix(info.Isolation, "cgroups") {
		gen, err := operation.NewAppPushOperation(cl, "cfbench", "loadgen").Push(ctx, &operation.AppManifest{Name: "gen",
			Buildpacks: []string{"binary_buildpack"}, NoRoute: true,
			AppManifestProcess: operation.AppManifestProcess{Command: "./cfbench-stub", Memory: "64M", Instances: &one, HealthCheckType: "process"}}, bytes.NewReader(binZip))
		if err != nil {
			t.Fatal(err)
		}
		var genHost string
		waitFor(t, "the generator to run", func() bool {
			st, err := cl.Processes.GetStats(ctx, gen.GUID)
			if err != nil || len(st.Stats) != 1 || st.Stats[0].State != "RUNNING" {
				return false
			}
			genHost = st.Stats[0].Host
			return true
		})
		if genHost == stats.Stats[0].Host || *stats.Stats[0].IsolationSegment != "apps" {
			t.Fatalf("generator on host %s, app on %s (%s): want different cells", genHost, stats.Stats[0].Host, *stats.Stats[0].IsolationSegment)
		}
	} else {
		t.Logf("no cgroup isolation here (%s): cells not checked", info.Isolation)
	}

	// X-Cf-App-Instance reaches one instance, and the access log says which.
	for i := range 3 {
		if code, _ := get(t, f, "stub.apps.localhost", "/hello", http.Header{"X-Cf-App-Instance": {stub + ":" + string(rune('0'+i))}}); code != 200 {
			t.Fatalf("X-Cf-App-Instance %d: %d", i, code)
		}
	}
	// The router writes a line once the response is complete, possibly after the client
	// has read it.
	var log []byte
	waitFor(t, "the access log line of instance 2 of stub", func() bool {
		log, _ = os.ReadFile(info.AccessLog)
		return regexp.MustCompile(`(?m)^stub\.apps\.localhost - \[.*\] "GET /hello HTTP/1.1" 200 .*app_id:"` + stub + `" app_index:"2"`).Match(log)
	})

	// The binding is in VCAP_SERVICES.
	if out := cf.must(t, "env", "stub"); !strings.Contains(out, `"postgres": [`) || !strings.Contains(out, `"uri": "postgres://`) {
		t.Fatalf("cf env stub:\n%s", out)
	}
	syslogDrain(t, f, cf, stub)
	cf.must(t, "bind-service", "node-hello", "results")
	if out := cf.must(t, "services"); !regexp.MustCompile(`(?m)^results\s+postgres\s+db\s+stub, node-hello\s`).MatchString(out) {
		t.Fatalf("cf services after binding:\n%s", out)
	}

	cf.must(t, "stop", "node-hello")
	if code, _ := get(t, f, "node-hello.apps.localhost", "/", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("a stopped app answered %d through the router, want 503", code)
	}
	cf.must(t, "start", "node-hello")
	cf.must(t, "restart", "java-hello")
	if out := cf.must(t, "apps"); !regexp.MustCompile(`(?m)^java-hello\s+started\s+web:1/1`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^stub\s+started\s+web:3/3\s.*stub\.apps\.localhost`).MatchString(out) {
		t.Fatalf("cf apps:\n%s", out)
	}
	if out, ok := cf.run(t, "app", "nope"); ok || !strings.Contains(out, "App 'nope' not found") {
		t.Fatalf("cf app nope:\n%s", out)
	}
	cf.must(t, "delete", "java-hello", "-f")
	if code, _ := get(t, f, "java-hello.apps.localhost", "/", nil); code != http.StatusNotFound {
		t.Fatalf("a deleted app's route answered %d, want 404", code)
	}

	// A restart of the foundation keeps apps, scale and services, on the same ports.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = start(t, dir)
	if f.Info().APIURL != info.APIURL || f.Info().RouterAddr != info.RouterAddr {
		t.Fatalf("after a restart: %+v, before %+v", f.Info(), info)
	}
	out = cf.must(t, "apps")
	if !regexp.MustCompile(`(?m)^stub\s+started\s+web:\d/3`).MatchString(out) || strings.Contains(out, "java-hello") {
		t.Fatalf("cf apps after a restart of the foundation:\n%s", out)
	}
	waitFor(t, "stub to answer after the restart", func() bool {
		code, _ := get(t, f, "stub.apps.localhost", "/hello", nil)
		return code == 200
	})
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		lines++
	}
	if lines < 6 {
		t.Fatalf("%d access log lines", lines)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
