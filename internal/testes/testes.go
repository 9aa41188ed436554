// Package testes gives tests a real Elasticsearch 8: one private node per test binary,
// started on first use from Elasticsearch's integ-test distribution (installed by
// scripts/install-es.sh, which this package runs when needed), on 127.0.0.1 and a free
// port, with security off, single-node discovery, a 256 MB heap and the disk
// watermarks disabled, its data and logs in a temp dir it owns. Run as root, the node
// runs as an unprivileged user (Elasticsearch refuses root). Tests fail (they do not
// skip) when it cannot start; the error carries the tail of its log.
//
// Environment: CFBENCH_ES_HOME (an unpacked distribution; skips the install script),
// CFBENCH_ES_USER (the user to run as when root; default cfbench-es, else nobody),
// ES_JAVA_HOME (default: the JDK of the java on PATH).
package testes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long a node may take to become ready.
const StartTimeout = 3 * time.Minute

var (
	once     sync.Once
	node     *Node
	startErr error
	indices  atomic.Int64
)

// Node is a running Elasticsearch started by this package.
type Node struct {
	URL     string        // http://127.0.0.1:PORT
	Home    string        // the distribution
	Dir     string        // temp dir with config, data, logs
	PID     int           // the Elasticsearch launcher we started
	Started time.Duration // how long it took to become ready
	cmd     *exec.Cmd
	exited  chan struct{}
}

// URL returns the base URL of the test binary's Elasticsearch, starting it on first
// use. It fails t when the node cannot start.
func URL(t testing.TB) string {
	t.Helper()
	return Server(t).URL
}

// Server returns the test binary's node, starting it on first use.
func Server(t testing.TB) *Node {
	t.Helper()
	once.Do(func() { node, startErr = Start(context.Background()) })
	if startErr != nil {
		t.Fatalf("start test elasticsearch: %v", startErr)
	}
	return node
}

// Index returns an index name unique within the test binary, starting with prefix.
func Index(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), indices.Add(1))
}

// Main runs the tests and then stops the node and removes its files. Use it from
// TestMain: func TestMain(m *testing.M) { testes.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if node != nil {
		if err := node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testes:", err)
		}
	}
	os.Exit(code)
}

// Start installs (if needed) and starts a node and waits until its cluster is yellow
// or green.
func Start(ctx context.Context) (*Node, error) {
	home, err := esHome(ctx)
	if err != nil {
		return nil, err
	}
	javaHome, err := javaHome()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		n, err := launch(ctx, home, javaHome, cred)
		if err == nil {
			return n, nil
		}
		lastErr = err
		// Another process may take the port between our probe and the node's bind.
		if !strings.Contains(err.Error(), "BindException") && !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func launch(ctx context.Context, home, javaHome string, cred *syscall.Credential) (*Node, error) {
	dir, err := os.MkdirTemp("", "cfbench-testes-")
	if err != nil {
		return nil, err
	}
	n := &Node{Home: home, Dir: dir}
	fail := func(err error) (*Node, error) {
		n.Stop()
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return fail(err)
	}
	transportPort, err := freePort()
	if err != nil {
		return fail(err)
	}
	n.URL = "http://127.0.0.1:" + strconv.Itoa(httpPort)
	conf, data, logs, tmp := filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "logs"), filepath.Join(dir, "tmp")
	if err := writeConfig(home, conf, data, logs, httpPort, transportPort); err != nil {
		return fail(err)
	}
	for _, d := range []string{data, logs, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	if cred != nil {
		// The node writes its keystore into config and owns data, logs and tmp.
		if err := chownTree(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	console, err := os.Create(filepath.Join(dir, "console.log"))
	if err != nil {
		return fail(err)
	}
	defer console.Close()

	cmd := exec.Command(filepath.Join(home, "bin", "elasticsearch"))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = console, console
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + dir,
		"LANG=C.UTF-8",
		"ES_JAVA_HOME=" + javaHome,
		"ES_PATH_CONF=" + conf,
		"ES_TMPDIR=" + tmp,
		"ES_JAVA_OPTS=-Xms256m -Xmx256m",
	}
	// Its own process group, and SIGTERM should this process die first: a crashed
	// test run leaves no node behind (the server JVM exits when its launcher does).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGTERM}
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start %s: %w", cmd.Path, err))
	}
	n.cmd, n.PID, n.exited = cmd, cmd.Process.Pid, make(chan struct{})
	go func() { cmd.Wait(); close(n.exited) }()
	if err := n.waitReady(ctx); err != nil {
		tail := n.logTail()
		return fail(fmt.Errorf("elasticsearch on %s: %w\n%s", n.URL, err, tail))
	}
	n.Started = time.Since(begin)
	return n, nil
}

// writeConfig copies the distribution's config dir and points it at ours.
func writeConfig(home, conf, data, logs string, httpPort, transportPort int) error {
	src := filepath.Join(home, "config")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(conf, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "jvm.options" {
			// The shipped options log GC and dump heaps relative to the home dir,
			// which the node's user may not write.
			s := strings.ReplaceAll(string(b), "HeapDumpPath=data", "HeapDumpPath="+data)
			s = strings.ReplaceAll(s, "logs/", logs+"/")
			b = []byte(s)
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copy elasticsearch config: %w", err)
	}
	yml := fmt.Sprintf(`cluster.name: cfbench-test
node.name: cfbench-test
path.data: %s
path.logs: %s
network.host: 127.0.0.1
http.port: %d
transport.port: %d
discovery.type: single-node
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
`, data, logs, httpPort, transportPort)
	return os.WriteFile(filepath.Join(conf, "elasticsearch.yml"), []byte(yml), 0o644)
}

func (n *Node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	var last error = errors.New("no answer yet")
	for {
		select {
		case <-n.exited:
			return fmt.Errorf("the node exited (%v)", n.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", StartTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
		res, err := client.Get(n.URL + "/_cluster/health?wait_for_status=yellow&timeout=1s")
		if err != nil {
			last = err
			continue
		}
		var h struct{ Status string }
		err = json.NewDecoder(res.Body).Decode(&h)
		res.Body.Close()
		if err == nil && res.StatusCode == http.StatusOK && (h.Status == "green" || h.Status == "yellow") {
			return nil
		}
		last = fmt.Errorf("cluster health: HTTP %d, status %q, %v", res.StatusCode, h.Status, err)
	}
}

// Stop stops the node (SIGTERM to the launcher we started, SIGKILL to its process
// group after 30 s) and removes its directory.
func (n *Node) Stop() error {
	var err error
	if n.cmd != nil && n.cmd.Process != nil {
		select {
		case <-n.exited:
		default:
			_ = syscall.Kill(n.PID, syscall.SIGTERM)
			select {
			case <-n.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-n.PID, syscall.SIGKILL)
				<-n.exited
				err = fmt.Errorf("elasticsearch (pid %d) ignored SIGTERM for 30 s; killed it", n.PID)
			}
		}
	}
	if n.Dir != "" {
		os.RemoveAll(n.Dir)
	}
	return err
}

// logTail is the end of the node's console output and server log.
func (n *Node) logTail() string {
	var b strings.Builder
	for _, f := range []string{filepath.Join(n.Dir, "console.log"), filepath.Join(n.Dir, "logs", "cfbench-test.log")} {
		data, err := os.ReadFile(f)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s (tail)\n%s\n", filepath.Base(f), bytes.TrimSpace(data))
	}
	return b.String()
}

// esHome is CFBENCH_ES_HOME, or what scripts/install-es.sh prints.
func esHome(ctx context.Context) (string, error) {
	if h := os.Getenv("CFBENCH_ES_HOME"); h != "" {
		return h, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "scripts", "install-es.sh")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, tailString(errOut.String(), 3000))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	home := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(filepath.Join(home, "bin", "elasticsearch")); err != nil {
		return "", fmt.Errorf("%s printed %q, which holds no bin/elasticsearch", script, home)
	}
	return home, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "install-es.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no scripts/install-es.sh above the working directory; set CFBENCH_ES_HOME")
		}
		dir = parent
	}
}

// javaHome is ES_JAVA_HOME, or the JDK of the java on PATH (the integ-test
// distribution bundles none).
func javaHome() (string, error) {
	if h := os.Getenv("ES_JAVA_HOME"); h != "" {
		return h, nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("no java on PATH and no ES_JAVA_HOME: install a JDK 17+ (scripts/install-deps.sh)")
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// runAs returns nil when not root, else the credentials of CFBENCH_ES_USER, cfbench-es
// or nobody, the first that exists.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	names := []string{"cfbench-es", "nobody"}
	if u := os.Getenv("CFBENCH_ES_USER"); u != "" {
		names = []string{u}
	}
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, fmt.Errorf("elasticsearch refuses to run as root and there is no user %s to run it as (scripts/install-es.sh creates cfbench-es)", strings.Join(names, " or "))
}

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
