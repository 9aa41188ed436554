//go:build linux

package staging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/cells"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

func TestBinaryKeepsModes(t *testing.T) {
	t.Parallel()
	zip := writeZip(t, false,
		entry{name: "bin/", mode: fs.ModeDir | 0o755},
		entry{name: "bin/server", body: "#!/bin/sh\necho \"hi from $0\"\n", mode: 0o755},
		entry{name: "config/app.conf", body: "x=1\n", mode: 0o640},
		entry{name: "tool", body: "#!/bin/sh\n", mode: 0o4755}, // setuid must not survive
	)
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	res, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet,
		Buildpacks: []string{"binary_buildpack"}, Command: "./bin/server", Log: &log})
	if err != nil {
		t.Fatalf("Stage: %v\n%s", err, log.String())
	}
	if !reflect.DeepEqual(res, Result{Buildpack: "binary_buildpack", BuildpackVersion: BuildpackVersion, StartCommand: "./bin/server"}) {
		t.Errorf("result = %+v", res)
	}
	app := filepath.Join(droplet, "app")
	for name, want := range map[string]fs.FileMode{"bin/server": 0o755, "config/app.conf": 0o640, "tool": 0o755} {
		fi, err := os.Stat(filepath.Join(app, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeSetuid); got != want {
			t.Errorf("%s mode = %v, want %v", name, got, want)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", res.StartCommand)
	cmd.Dir = app
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "hi from") {
		t.Errorf("running the droplet: %q, %v", out, err)
	}
	if !strings.Contains(log.String(), "Binary Buildpack") || !strings.Contains(log.String(), "Staging complete") {
		t.Errorf("staging log:\n%s", log.String())
	}
}

// A zip whose start program has no execute bit (entries without Unix modes, as some
// Windows tools write them) stages, but the program does not start: the binary
// buildpack runs the command as given and nothing adds the bit, so the shell refuses
// with status 126, as an instance on Cloud Foundry does.
func TestBinaryWithoutModesDoesNotStart(t *testing.T) {
	t.Parallel()
	zip := writeZip(t, true,
		entry{name: "run.sh", body: "#!/bin/sh\necho \"ran with $GREETING $1\"\n"},
	)
	_, droplet := dropletDir(t)
	res, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet,
		Buildpacks: []string{"https://github.com/cloudfoundry/binary-buildpack.git#v1.1.0"},
		Command:    "GREETING=hello ./run.sh world"})
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(droplet, "app")
	if fi, _ := os.Stat(filepath.Join(app, "run.sh")); fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("run.sh mode = %v, want it as the zip gave it (no execute bit)", fi.Mode())
	}
	cmd := exec.Command("/bin/sh", "-c", res.StartCommand)
	cmd.Dir = app
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("running the droplet: %q, %v; want status 126, Permission denied", out, err)
	}
}

func TestBinaryCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   []entry
		command string
		want    string
		wantErr error
	}{
		{"manifest command", []entry{{name: "app", mode: 0o755}}, "./app --port $PORT", "./app --port $PORT", nil},
		{"Procfile", []entry{{name: "app", mode: 0o755}, {name: "Procfile", body: "worker: ./w\nweb: ./app serve\n", mode: 0o644}}, "", "./app serve", nil},
		{"manifest beats Procfile", []entry{{name: "Procfile", body: "web: ./app\n", mode: 0o644}}, "./other", "./other", nil},
		{"no command", []entry{{name: "app", mode: 0o755}}, "", "", ErrNoStartCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, droplet := dropletDir(t)
			res, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, tc.files...), DropletDir: droplet,
				Buildpacks: []string{"binary_buildpack"}, Command: tc.command})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if res.StartCommand != tc.want {
				t.Errorf("command = %q, want %q", res.StartCommand, tc.want)
			}
		})
	}
}

// An app no lifecycle detects but whose Procfile names a web command (the cf CLI
// specs' Ruby app, a YAML document) is staged as binary, last; the Procfile's other
// types come with the droplet, whichever lifecycle staged it.
func TestProcfileApp(t *testing.T) {
	t.Parallel()
	procfile := entry{name: "Procfile", body: "---\nweb: ruby -run -e httpd . -p $PORT\nconsole: bundle exec irb", mode: 0o644}
	for _, tc := range []struct {
		name  string
		files []entry
		want  Result
	}{
		{"detected by its Procfile", []entry{procfile, {name: "Gemfile", body: "gem 'webrick'\n", mode: 0o644}},
			Result{Buildpack: buildpackBinary, StartCommand: "ruby -run -e httpd . -p $PORT", ProcessTypes: map[string]string{"console": "bundle exec irb"}}},
		{"staticfile first", []entry{procfile, {name: "Staticfile", mode: 0o644}, {name: "index.html", body: "hi", mode: 0o644}},
			Result{Buildpack: buildpackStatic, ProcessTypes: map[string]string{"console": "bundle exec irb"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, droplet := dropletDir(t)
			res, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, tc.files...), DropletDir: droplet})
			if err != nil {
				t.Fatal(err)
			}
			if res.Buildpack != tc.want.Buildpack || tc.want.StartCommand != "" && res.StartCommand != tc.want.StartCommand ||
				!maps.Equal(res.ProcessTypes, tc.want.ProcessTypes) {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
		})
	}
	// Without a web command, a Procfile detects nothing.
	_, droplet := dropletDir(t)
	_, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, entry{name: "Procfile", body: "worker: ./w\n", mode: 0o644}), DropletDir: droplet})
	if !errors.Is(err, ErrNotDetected) {
		t.Errorf("a Procfile without web: %v, want ErrNotDetected", err)
	}
}

func TestUnsupportedApps(t *testing.T) {
	t.Parallel()
	php := []entry{{name: "index.php", body: "<?php echo 'hi';", mode: 0o644}}
	for _, tc := range []struct {
		name       string
		buildpacks []string
		files      []entry
		command    string
	}{
		{"php app, detect", nil, php, "php index.php"},
		{"php buildpack named", []string{"php_buildpack"}, php, "php index.php"},
		{"two jars", nil, []entry{{name: "a.jar", mode: 0o644}, {name: "b.jar", mode: 0o644}}, ""},
		{"supply buildpacks", []string{"nodejs_buildpack", "binary_buildpack"}, php, "php index.php"},
		{"java named, nothing runnable", []string{"java_buildpack"}, php, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, droplet := dropletDir(t)
			_, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, tc.files...), DropletDir: droplet,
				Buildpacks: tc.buildpacks, Command: tc.command})
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
			for _, s := range []string{"binary_buildpack", "java_buildpack", "nodejs_buildpack", "*.jar", "Main-Class", "package.json"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message does not mention %q: %v", s, err)
				}
			}
		})
	}
}

func TestStageRejectsUnusableDroplet(t *testing.T) {
	t.Parallel()
	zip := writeZip(t, false, entry{name: "app", mode: 0o755})
	droplet := t.TempDir()
	if err := os.WriteFile(filepath.Join(droplet, "leftover"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Stage(context.Background(), Request{PackageZip: zip, DropletDir: droplet, Buildpacks: []string{"binary_buildpack"}, Command: "./app"}); err == nil {
		t.Error("staged into a non-empty droplet dir")
	}
	if _, err := Stage(context.Background(), Request{PackageZip: filepath.Join(t.TempDir(), "missing.zip"), DropletDir: t.TempDir()}); err == nil {
		t.Error("staged a missing package")
	}
}

// runDroplet runs a staged droplet through cells and returns its answer to GET /.
func runDroplet(t *testing.T, droplet string, res Result, memoryMB int, hc cells.HealthCheck) string {
	t.Helper()
	logDir := t.TempDir()
	c := cells.New(cells.Config{LogDir: logDir, TmpDir: t.TempDir(), StopGrace: 5 * time.Second, HealthCheckInterval: 50 * time.Millisecond})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Desire(cells.ProcessSpec{ProcessGUID: "proc", AppGUID: "app", AppName: "app", ProcessType: "web",
		Dir: filepath.Join(droplet, "app"), Command: res.StartCommand, Instances: 1, MemoryMB: memoryMB,
		Env: map[string]string{"npm_config_update_notifier": "false"}, HealthCheck: hc})
	deadline := time.Now().Add(60 * time.Second)
	var in cells.Instance
	for {
		if insts := c.Instances("proc"); len(insts) == 1 {
			in = insts[0]
		}
		if in.State == cells.StateRunning {
			break
		}
		if in.State == cells.StateCrashed || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(logDir, "proc", "0.log"))
			t.Fatalf("instance %s (%s); log:\n%s", in.State, in.Details, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := testhttp.Client.Get(fmt.Sprintf("http://%s:%d/", in.Host, in.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// buildJar compiles testdata/java into an executable jar.
func buildJar(t *testing.T) string {
	t.Helper()
	testtier.External(t, "a JDK")
	for _, tool := range []string{"javac", "jar", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install a JDK (17) to run the Java staging tests (scripts/install-deps.sh)", tool)
		}
	}
	work := t.TempDir()
	classes := filepath.Join(work, "classes")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("javac", "-d", classes, filepath.Join("testdata", "java", "Hello.java"))
	jar := filepath.Join(work, "hello.jar")
	run("jar", "--create", "--file", jar, "--main-class", "Hello", "-C", classes, ".")
	return jar
}

var maxHeapRE = regexp.MustCompile(`max heap (\d+)`)

// checkHeap asserts the JVM ran with the calculated -Xmx.
func checkHeap(t *testing.T, body, command string) {
	t.Helper()
	m := regexp.MustCompile(`-Xmx(\d+)K`).FindStringSubmatch(command)
	h := maxHeapRE.FindStringSubmatch(body)
	if m == nil || h == nil {
		t.Fatalf("no -Xmx in %q or no heap in %q", command, body)
	}
	xmx, _ := strconv.ParseInt(m[1], 10, 64)
	heap, _ := strconv.ParseInt(h[1], 10, 64)
	// The JVM rounds the heap up to its region size (1-4M with G1).
	if heap > xmx<<10+4<<20 || heap < xmx<<10/2 {
		t.Errorf("JVM max heap %d, want about -Xmx %dK", heap, xmx)
	}
}

func TestJavaRunnableJar(t *testing.T) {
	t.Parallel()
	jar := buildJar(t)
	src := t.TempDir()
	b, err := os.ReadFile(jar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "hello.jar"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	res, err := Stage(context.Background(), Request{PackageZip: zipDir(t, src), DropletDir: droplet, MemoryMB: 1024, Log: &log})
	if err != nil {
		t.Fatalf("Stage: %v\n%s", err, log.String())
	}
	// Hello.class is the only class: ceil(0.35 × (1 + 42215)) = 14776 loaded classes.
	want := "java -XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx439211K -jar hello.jar"
	if res.Buildpack != "java_buildpack" || res.StartCommand != want {
		t.Fatalf("result = %+v, want command %q", res, want)
	}
	if !strings.Contains(log.String(), "Loaded Classes: 14776, Threads: 250") {
		t.Errorf("staging log:\n%s", log.String())
	}
	body := runDroplet(t, droplet, res, 1024, cells.HealthCheck{})
	checkHeap(t, body, res.StartCommand)
}

func TestJavaExplodedJar(t *testing.T) {
	t.Parallel()
	jar := buildJar(t) // `cf push -p hello.jar` uploads the jar's contents: the jar is the package
	_, droplet := dropletDir(t)
	res, err := Stage(context.Background(), Request{PackageZip: jar, DropletDir: droplet, MemoryMB: 800,
		Buildpacks: []string{"java_buildpack_offline"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "java -XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx209835K -cp . Hello"
	if res.StartCommand != want {
		t.Fatalf("command = %q, want %q", res.StartCommand, want)
	}
	body := runDroplet(t, droplet, res, 800, cells.HealthCheck{Type: "http"})
	checkHeap(t, body, res.StartCommand)
}

func TestJavaStagingChoices(t *testing.T) {
	t.Parallel()
	jar := buildJar(t)
	for _, tc := range []struct {
		name     string
		memoryMB int
		command  string
		env      map[string]string
		want     string
		wantErr  error
	}{
		{"too small", 256, "", nil, "", ErrMemoryTooSmall},
		{"manifest command overrides", 256, "java -Xmx100m -cp . Hello", nil, "java -Xmx100m -cp . Hello", nil},
		{"JAVA_OPTS sizes are kept", 1024, "", map[string]string{"JAVA_OPTS": "-Xss256K -Dfoo=bar"},
			"java $JAVA_OPTS -XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xmx631211K -cp . Hello", nil},
		{"default memory is 1G", 0, "", nil,
			"java -XX:MaxDirectMemorySize=10M -XX:MaxMetaspaceSize=97364K -XX:ReservedCodeCacheSize=240M -Xss1M -Xmx439211K -cp . Hello", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, droplet := dropletDir(t)
			res, err := Stage(context.Background(), Request{PackageZip: jar, DropletDir: droplet, MemoryMB: tc.memoryMB,
				Command: tc.command, Env: tc.env})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "256M") {
				t.Errorf("error does not name the limit: %v", err)
			}
			if res.StartCommand != tc.want {
				t.Errorf("command = %q, want %q", res.StartCommand, tc.want)
			}
		})
	}
}

func TestJavaJarWithoutMainClass(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	lib := writeZip(t, false, entry{name: "META-INF/MANIFEST.MF", body: "Manifest-Version: 1.0\r\n\r\n", mode: 0o644},
		entry{name: "lib/A.class", body: "x", mode: 0o644})
	b, _ := os.ReadFile(lib)
	if err := os.WriteFile(filepath.Join(src, "lib.jar"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, droplet := dropletDir(t)
	_, err := Stage(context.Background(), Request{PackageZip: zipDir(t, src), DropletDir: droplet, MemoryMB: 1024})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "lib.jar has no Main-Class") {
		t.Errorf("err = %v", err)
	}
}

func nodeTools(t *testing.T) {
	t.Helper()
	testtier.External(t, "Node.js")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install Node.js (20) to run the Node.js staging tests (scripts/install-deps.sh)", tool)
		}
	}
}

func TestNodeApp(t *testing.T) {
	t.Parallel()
	nodeTools(t)
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	res, err := Stage(context.Background(), Request{PackageZip: zipDir(t, copyDir(t, "testdata/node")), DropletDir: droplet,
		MemoryMB: 256, Env: map[string]string{"npm_config_update_notifier": "false"}, Log: &log})
	if err != nil {
		t.Fatalf("Stage: %v\n%s", err, log.String())
	}
	if !reflect.DeepEqual(res, Result{Buildpack: "nodejs_buildpack", BuildpackVersion: BuildpackVersion, StartCommand: "npm start"}) {
		t.Errorf("result = %+v", res)
	}
	if !strings.Contains(log.String(), "npm install") {
		t.Errorf("staging log:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(droplet, ".staging")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("npm's cache was left in the droplet: %v", err)
	}
	body := runDroplet(t, droplet, res, 256, cells.HealthCheck{Type: "http", Endpoint: "/"})
	if !strings.HasPrefix(body, "hello from node") {
		t.Errorf("GET / = %q", body)
	}
}

func TestNodeStartCommand(t *testing.T) {
	t.Parallel()
	nodeTools(t)
	server := entry{name: "server.js", body: "require('http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)", mode: 0o644}
	lock := entry{name: "package-lock.json", mode: 0o644,
		body: `{"name":"x","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"x","version":"1.0.0"}}}`}
	for _, tc := range []struct {
		name    string
		files   []entry
		command string
		want    string
		wantLog string
		wantErr error
	}{
		{"server.js fallback", []entry{{name: "package.json", body: `{"name":"x","version":"1.0.0"}`, mode: 0o644}, server}, "", "node server.js", "npm install", nil},
		{"lockfile uses npm ci", []entry{{name: "package.json", body: `{"name":"x","version":"1.0.0"}`, mode: 0o644}, lock, server}, "", "node server.js", "npm ci", nil},
		{"manifest command", []entry{{name: "package.json", body: `{"scripts":{"start":"node a.js"}}`, mode: 0o644}}, "node b.js", "node b.js", "npm install", nil},
		{"named without package.json", []entry{server}, "", "node server.js", "", nil},
		{"nothing to run", []entry{{name: "package.json", body: `{"name":"x"}`, mode: 0o644}}, "", "", "", ErrNoStartCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, droplet := dropletDir(t)
			var log bytes.Buffer
			res, err := Stage(context.Background(), Request{PackageZip: writeZip(t, false, tc.files...), DropletDir: droplet,
				Buildpacks: []string{"nodejs_buildpack"}, Command: tc.command, Log: &log,
				Env: map[string]string{"npm_config_update_notifier": "false"}})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v\n%s", err, tc.wantErr, log.String())
			}
			if res.StartCommand != tc.want || !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("command = %q, want %q; log:\n%s", res.StartCommand, tc.want, log.String())
			}
		})
	}
}

func TestNodeInstallFailureIsReported(t *testing.T) {
	t.Parallel()
	nodeTools(t)
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	_, err := Stage(context.Background(), Request{
		PackageZip: writeZip(t, false, entry{name: "package.json", mode: 0o644,
			body: `{"name":"x","version":"1.0.0","scripts":{"start":"node s.js","preinstall":"echo boom >&2; exit 7"}}`}),
		DropletDir: droplet, Log: &log, Env: map[string]string{"npm_config_update_notifier": "false"}})
	if err == nil || !strings.Contains(err.Error(), "npm install failed") || !strings.Contains(log.String(), "boom") {
		t.Errorf("err = %v; log:\n%s", err, log.String())
	}
}

// With Request.User, npm and the app's install scripts run as that user, in a scratch
// copy: they cannot read what only the foundation may (a root-only file here), and the
// droplet they leave is the foundation's again.
func TestNodeInstallRunsAsTheInstancesUser(t *testing.T) {
	t.Parallel()
	nodeTools(t)
	if os.Geteuid() != 0 {
		t.Skip("staging as another user needs root (the foundation runs as root to sandbox its apps)")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the foundation's"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Not under t.TempDir(), whose parent only root may enter.
	scratch, err := os.MkdirTemp("", "cfbench-staging-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(scratch) })
	if err := os.Chmod(scratch, 0o711); err != nil {
		t.Fatal(err)
	}
	script := "id -u > uid.txt; (cat " + secret + " || echo refused) > leak.txt"
	_, droplet := dropletDir(t)
	var log bytes.Buffer
	_, err = Stage(context.Background(), Request{
		PackageZip: writeZip(t, false, entry{name: "package.json", mode: 0o644,
			body: `{"name":"x","version":"1.0.0","scripts":{"start":"node s.js","preinstall":"` + script + `"}}`}),
		DropletDir: droplet, Log: &log, Env: map[string]string{"npm_config_update_notifier": "false"},
		User: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, ScratchDir: scratch})
	if err != nil {
		t.Fatalf("Stage: %v\n%s", err, log.String())
	}
	app := filepath.Join(droplet, "app")
	if b, err := os.ReadFile(filepath.Join(app, "uid.txt")); err != nil || strings.TrimSpace(string(b)) != nobody.Uid {
		t.Errorf("the install script ran as uid %q (%v), want nobody's %s", b, err, nobody.Uid)
	}
	if b, err := os.ReadFile(filepath.Join(app, "leak.txt")); err != nil || strings.TrimSpace(string(b)) != "refused" {
		t.Errorf("the install script read a root-only file: %q (%v)", b, err)
	}
	filepath.WalkDir(droplet, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		if info, err := d.Info(); err == nil && info.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s is uid %d's, want the foundation's (root)", path, info.Sys().(*syscall.Stat_t).Uid)
		}
		return nil
	})
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("the scratch copy was left: %v", left)
	}
}
