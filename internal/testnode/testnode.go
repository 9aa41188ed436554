// Package testnode starts a real search node for tests from an integ-test distribution
// (Elasticsearch's or OpenSearch's, which share a launcher layout): on 127.0.0.1 and a
// free port, single-node discovery, a small heap, the disk watermarks off, its config,
// data and logs in a temp dir it owns. Run as root, the node runs as an unprivileged
// user (both engines refuse root). It is the launcher behind internal/testes and
// internal/testos; tests use those, not this package.
//
// A test run may share one node of a flavor among all its test binaries: when the
// flavor's URLEnv names a running node, Shared.Server uses it instead of starting one
// (scripts/test.sh starts the nodes with tools/testnodes). Such a node is not the test
// binary's: Shared.Stop leaves it running, and tests on it must keep to their own
// indices (Index) and leave cluster-wide state alone; a test that needs a node of its
// own calls Start.
package testnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// StartTimeout bounds how long a node may take to become ready.
const StartTimeout = 3 * time.Minute

// DefaultUser is the unprivileged user a node runs as when the test runs as root; the
// install scripts create it.
const DefaultUser = "cfbench-es"

// Flavor describes one engine's integ-test distribution and how to launch it.
type Flavor struct {
	Name    string // in messages: "Elasticsearch"
	Command string // the launcher bin/<Command> and the config file <Command>.yml
	Script  string // the install script, relative to the module root; prints the home dir
	HomeEnv string // names an unpacked distribution, which skips Script
	URLEnv  string // names a running node Shared.Server uses instead of starting one
	// Product is the X-Elastic-Product header the node sends ("Elasticsearch";
	// OpenSearch sends none): a node named by URLEnv must send it.
	Product   string
	UserEnv   string // names the user to run as when root (default DefaultUser, else nobody)
	EnvPrefix string // the launcher reads <EnvPrefix>_JAVA_HOME, _PATH_CONF, _TMPDIR, _JAVA_OPTS
	Heap      string // the JVM heap: "256m"
	// Settings, if set, returns lines to append to <Command>.yml for the distribution
	// at home (settings an engine rejects when the plugin they belong to is absent
	// must depend on home).
	Settings func(home string) string
}

// Node is a running node started by this package.
type Node struct {
	URL     string        // http://127.0.0.1:PORT
	Home    string        // the distribution ("" when External)
	Dir     string        // temp dir with config, data, logs ("" when External)
	PID     int           // the launcher we started (OpenSearch's execs the server JVM); 0 when External
	Started time.Duration // how long it took to become ready
	// External marks a node another process started (Flavor.URLEnv): Stop leaves it
	// running.
	External bool
	name     string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// Shared is a test binary's one node of a flavor, started by the first Server call
// and stopped by Main. Its methods may be called concurrently.
type Shared struct {
	Flavor Flavor
	once   sync.Once
	node   *Node
	err    error
}

// Server returns the node, starting it on first use, or the running node that
// $URLEnv names if set (checked once: Attach). Under -short (`make check`) it
// skips t; otherwise it fails t (it does not skip) when the node cannot start, the
// message carrying the tail of the node's log, or when the named node does not
// answer as the flavor's, the message naming the variable.
func (s *Shared) Server(t testing.TB) *Node {
	t.Helper()
	testtier.External(t, "a real "+s.Flavor.Name+" node")
	s.once.Do(func() {
		if url := os.Getenv(s.Flavor.URLEnv); s.Flavor.URLEnv != "" && url != "" {
			s.node, s.err = Attach(context.Background(), s.Flavor, url)
			if s.err != nil {
				s.err = fmt.Errorf("%s=%s: %w", s.Flavor.URLEnv, url, s.err)
			}
			return
		}
		s.node, s.err = Start(context.Background(), s.Flavor)
	})
	if s.err != nil {
		t.Fatalf("test %s: %v", strings.ToLower(s.Flavor.Name), s.err)
	}
	return s.node
}

// Attach returns the running node of flavor f at url, once its GET /_cluster/health
// answers as f's does (Product) within AttachTimeout. The node is External: Stop
// leaves it running. (Not GET /: the integ-test Elasticsearch has no root endpoint.)
func Attach(ctx context.Context, f Flavor, url string) (*Node, error) {
	url = strings.TrimRight(url, "/")
	ctx, cancel := context.WithTimeout(ctx, AttachTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/_cluster/health", nil)
	if err != nil {
		return nil, err
	}
	res, err := testhttp.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no %s answers there: %w", f.Name, err)
	}
	defer res.Body.Close()
	var h struct{ Status string }
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil || res.StatusCode != http.StatusOK || h.Status == "" {
		return nil, fmt.Errorf("GET /_cluster/health answered HTTP %d (%v), not as %s does", res.StatusCode, err, f.Name)
	}
	if p := res.Header.Get("X-Elastic-Product"); p != f.Product {
		return nil, fmt.Errorf("it says X-Elastic-Product %q: not %s", p, f.Name)
	}
	if h.Status == "red" {
		return nil, fmt.Errorf("its cluster is red")
	}
	return &Node{URL: url, External: true, name: f.Name}, nil
}

// AttachTimeout bounds Attach's GET /_cluster/health.
const AttachTimeout = 10 * time.Second

// Main runs the tests, then stops the node (if one started) and removes its files,
// and exits with the tests' code.
func (s *Shared) Main(m *testing.M) {
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// Stop stops the node if one was started (an External one keeps running), for a
// TestMain that runs several shared servers (Main runs the tests and stops only this
// one).
func (s *Shared) Stop() {
	if s.node != nil {
		if err := s.node.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testnode:", err)
		}
		s.node = nil
	}
}

var indices atomic.Int64

// Index returns an index name unique within the test binary (and among test binaries
// running at once), starting with prefix.
func Index(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), indices.Add(1))
}

// Start installs (if needed) and starts a node of flavor f and waits until its cluster
// is yellow or green. The caller stops it.
func Start(ctx context.Context, f Flavor) (*Node, error) {
	home, err := distribution(ctx, f)
	if err != nil {
		return nil, err
	}
	javaHome, err := javaHome(f)
	if err != nil {
		return nil, err
	}
	cred, err := runAs(f)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		n, err := launch(ctx, f, home, javaHome, cred)
		if err == nil {
			return n, nil
		}
		lastErr = err
		// Another process may take a port between our probe and the node's bind: then
		// a launch on new ports is the remedy. Anything else fails at once.
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// StartAll starts a node of each flavor at once (Start) and returns them in the same
// order. When one cannot start it stops the others and returns every failure.
func StartAll(ctx context.Context, flavors ...Flavor) ([]*Node, error) {
	nodes := make([]*Node, len(flavors))
	errs := make([]error, len(flavors))
	var wg sync.WaitGroup
	for i, f := range flavors {
		wg.Go(func() { nodes[i], errs[i] = Start(ctx, f) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, n := range nodes {
			if n != nil {
				n.Stop()
			}
		}
		return nil, err
	}
	return nodes, nil
}

func launch(ctx context.Context, f Flavor, home, javaHome string, cred *credential) (*Node, error) {
	dir, err := os.MkdirTemp("", "cfbench-test-"+f.Command+"-")
	if err != nil {
		return nil, err
	}
	n := &Node{Home: home, Dir: dir, name: f.Name}
	fail := func(err error) (*Node, error) {
		n.Stop()
		return nil, err
	}
	httpPort, err := freeport.Loopback()
	if err != nil {
		return fail(err)
	}
	transportPort, err := freeport.Loopback()
	if err != nil {
		return fail(err)
	}
	n.URL = "http://127.0.0.1:" + strconv.Itoa(httpPort)
	conf, data, logs, tmp := filepath.Join(dir, "config"), filepath.Join(dir, "data"), filepath.Join(dir, "logs"), filepath.Join(dir, "tmp")
	if err := writeConfig(f, home, conf, data, logs, httpPort, transportPort); err != nil {
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

	cmd := exec.Command(filepath.Join(home, "bin", f.Command))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = console, console
	p := f.EnvPrefix
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + dir,
		"LANG=C.UTF-8",
		p + "_JAVA_HOME=" + javaHome,
		p + "_PATH_CONF=" + conf,
		p + "_TMPDIR=" + tmp,
		// C1 only: a test node lives minutes, too short for C2's compilations to pay
		// (collectors/routerlogs/elastic's suite: 361 CPU-s with C2, 266 without).
		p + "_JAVA_OPTS=-Xms" + f.Heap + " -Xmx" + f.Heap + " -XX:TieredStopAtLevel=1",
	}
	// Its own process group, and SIGTERM should this process die first (on Linux): a
	// crashed test run leaves no node behind (a server JVM exits when its launcher does).
	cmd.SysProcAttr = nodeAttr(cred)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start %s: %w", cmd.Path, err))
	}
	n.cmd, n.PID, n.exited = cmd, cmd.Process.Pid, make(chan struct{})
	go func() { cmd.Wait(); close(n.exited) }()
	if err := n.waitReady(ctx); err != nil {
		if n.portTaken() {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		tail := n.logTail()
		return fail(fmt.Errorf("%s on %s: %w\n%s", strings.ToLower(f.Name), n.URL, err, tail))
	}
	n.Started = time.Since(begin)
	return n, nil
}

// writeConfig copies the distribution's config dir and points it at ours.
func writeConfig(f Flavor, home, conf, data, logs string, httpPort, transportPort int) error {
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
		return fmt.Errorf("copy %s config: %w", strings.ToLower(f.Name), err)
	}
	yml := fmt.Sprintf(`cluster.name: cfbench-test
node.name: cfbench-test
path.data: %s
path.logs: %s
network.host: 127.0.0.1
http.port: %d
transport.port: %d
discovery.type: single-node
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
`, data, logs, httpPort, transportPort)
	if f.Settings != nil {
		yml += f.Settings(home)
	}
	return os.WriteFile(filepath.Join(conf, f.Command+".yml"), []byte(yml), 0o644)
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
// group after 30 s) and removes its directory. An External node is left alone.
func (n *Node) Stop() error {
	if n.External {
		return nil
	}
	var err error
	if n.cmd != nil && n.cmd.Process != nil {
		select {
		case <-n.exited:
		default:
			_ = terminate(n.PID)
			select {
			case <-n.exited:
			case <-time.After(30 * time.Second):
				_ = killGroup(n.PID)
				<-n.exited
				err = fmt.Errorf("%s (pid %d) ignored SIGTERM for 30 s; killed it", strings.ToLower(n.name), n.PID)
			}
		}
	}
	if n.Dir != "" {
		os.RemoveAll(n.Dir)
	}
	return err
}

// errPortTaken marks a node that could not bind a port it was given.
var errPortTaken = errors.New("a port it was given was taken meanwhile")

// portTaken reports whether the node's logs say a bind failed: the whole logs, since
// the stack trace that follows the cause can push it out of logTail's tail.
func (n *Node) portTaken() bool {
	for _, f := range n.logFiles() {
		data, _ := os.ReadFile(f)
		if bytes.Contains(data, []byte("BindException")) || bytes.Contains(data, []byte("Address already in use")) {
			return true
		}
	}
	return false
}

// logFiles are the node's console output and server log.
func (n *Node) logFiles() []string {
	return []string{filepath.Join(n.Dir, "console.log"), filepath.Join(n.Dir, "logs", "cfbench-test.log")}
}

// logTail is the end of the node's console output and server log.
func (n *Node) logTail() string {
	var b strings.Builder
	for _, f := range n.logFiles() {
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

// distribution is $HomeEnv, or what the flavor's install script prints.
func distribution(ctx context.Context, f Flavor) (string, error) {
	if h := os.Getenv(f.HomeEnv); h != "" {
		return h, nil
	}
	root, err := moduleRoot(f)
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, f.Script)
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
	if _, err := os.Stat(filepath.Join(home, "bin", f.Command)); err != nil {
		return "", fmt.Errorf("%s printed %q, which holds no bin/%s", script, home, f.Command)
	}
	return home, nil
}

func moduleRoot(f Flavor) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, f.Script)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s above the working directory; set %s", f.Script, f.HomeEnv)
		}
		dir = parent
	}
}

// javaHome is $<EnvPrefix>_JAVA_HOME, or the JDK of the java on PATH (the integ-test
// distributions bundle none).
func javaHome(f Flavor) (string, error) {
	env := f.EnvPrefix + "_JAVA_HOME"
	if h := os.Getenv(env); h != "" {
		return h, nil
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("no java on PATH and no %s: install a JDK 17 (scripts/install-deps.sh)", env)
	}
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// runAs returns nil when not root, else the credentials of $UserEnv, DefaultUser or
// nobody, the first that exists.
func runAs(f Flavor) (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	names := []string{DefaultUser, "nobody"}
	if u := os.Getenv(f.UserEnv); u != "" {
		names = []string{u}
	}
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, fmt.Errorf("%s refuses to run as root and there is no user %s to run it as (%s creates %s)",
		strings.ToLower(f.Name), strings.Join(names, " or "), f.Script, DefaultUser)
}

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

func tailString(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
