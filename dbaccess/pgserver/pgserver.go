// Package pgserver runs a private PostgreSQL server: the results store of local runs, the
// local foundation's postgres service, and the database of every test that needs one.
//
// A Server follows the lifecycle of package lifecycle. Start finds the server binaries,
// initialises a cluster in a state directory on first use (password auth, a generated
// password kept beside it; a Fast cluster is a copy of a template, template.go), listens on a free port of 127.0.0.1 only, and runs the server
// as an unprivileged user when the caller is root, since Postgres refuses to run as root.
// A server already running on the same state directory is reused instead of started
// twice; Close then leaves it running. A Cluster (cluster.go) runs such servers as the
// coordinator and workers of a Citus cluster.
package pgserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Superuser is the name of the cluster's superuser; the DSNs carry it.
const Superuser = "cfbench"

// Options configure Start. Only Dir is required.
type Options struct {
	// Dir is the state directory. The cluster lives in Dir/data, its log in
	// Dir/postgres.log, the superuser's password in Dir/password.
	Dir string
	// User is the OS user that runs the server when the caller is root. Default:
	// "postgres" when that user exists, else "nobody".
	User string
	// Port to listen on; 0 takes the port the server of Dir listened on last (kept in
	// Dir/port), so that a DSN given out before a restart still reaches it, and picks
	// a free one when there is none or another process holds it.
	Port int
	// Detach lets the server outlive this process (for scripts/pg-local.sh start).
	// Otherwise it gets SIGINT when this process dies, so a crashed test run leaves no
	// server behind.
	Detach bool
	// Fast trades crash safety for speed (fsync and synchronous commit off), for
	// throwaway test clusters, which are copies of one template cluster with one
	// password (template.go). Without it a commit is acknowledged only once its WAL
	// is on disk, so a writer that counted a batch stored never loses it to a killed
	// server.
	Fast bool
	// MaxConnections is the server's max_connections (default 200); a small one plays
	// a hosted plan's cap (the capacity simulation: 100).
	MaxConnections int
	// Citus preloads the Citus extension (a node of a Cluster, cluster.go); Start fails
	// with ErrNoCitus when it is not installed beside the server binaries.
	Citus bool
}

// Server is a PostgreSQL server on 127.0.0.1. Close and the end of Start's context stop
// it (fast shutdown) if this process started it. A server that exits on its own (killed,
// out of disk) is a failure Wait reports.
type Server struct {
	opts         Options
	dir, dataDir string
	port         int
	password     string
	pid          int
	owned        bool          // started by this process (not attached to a running one)
	exited       chan struct{} // closed when our child exits; nil when not our child
	exitErr      *error        // why our child exited; set before exited is closed
	logFile      string
	life         lifecycle.State
}

var _ lifecycle.Part = (*Server)(nil)

// New returns the server of opts.Dir, not started.
func New(opts Options) *Server { return &Server{opts: opts} }

// Start starts (or attaches to) the private server of Options.Dir and returns once it
// accepts connections, or with why it could not start. ctx bounds its life: to keep a
// server beyond a request, pass a context that outlives it.
func (s *Server) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("pgserver: %w", err)
	}
	if err := s.start(ctx); err != nil {
		s.life.Stopped(err)
		return err
	}
	go s.supervise(ctx)
	return nil
}

// Wait blocks until the server has stopped, or this process has let go of a server it
// attached to: nil after Close or the end of Start's context, else why the server ended.
func (s *Server) Wait() error { return s.life.Wait() }

// Close shuts the server down (fast shutdown: open sessions are ended, the cluster is
// consistent) if this process started it, and waits for it to exit. A server this
// process only attached to keeps running.
func (s *Server) Close() error { return s.life.Close() }

// Run is Start followed by Wait.
func (s *Server) Run(ctx context.Context) error { return lifecycle.Run(ctx, s) }

// supervise waits for Close, the end of ctx or the server's exit, and stops it.
func (s *Server) supervise(ctx context.Context) {
	var failure error
	gone := s.exited
	if gone == nil { // attached: watch the pid
		g := make(chan struct{})
		gone = g
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for alive(s.pid) {
				select {
				case <-tick.C:
				case <-s.life.Stopping():
					return
				case <-ctx.Done():
					return
				}
			}
			close(g)
		}()
	}
	select {
	case <-s.life.Stopping():
	case <-ctx.Done():
	case <-gone:
		failure = fmt.Errorf("postgres (pid %d) exited", s.pid)
		if s.exitErr != nil && *s.exitErr != nil {
			failure = fmt.Errorf("postgres (pid %d) exited: %w", s.pid, *s.exitErr)
		}
	}
	var err error
	if failure == nil && s.owned {
		err = stopPID(s.pid, s.exited)
	}
	s.life.Stopped(errors.Join(failure, err))
}

func (s *Server) start(ctx context.Context) error {
	opts := s.opts
	if opts.Dir == "" {
		return errors.New("pgserver: a state directory is required")
	}
	if err := supported(); err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create postgres state dir: %w", err)
	}
	binDir, err := FindBinDir()
	if err != nil {
		return err
	}
	if opts.Citus {
		if err := citusInstalled(binDir); err != nil {
			return err
		}
	}
	cred, err := runAs(opts.User)
	if err != nil {
		return err
	}
	s.dir, s.dataDir, s.logFile = dir, dataDirFor(dir, cred), filepath.Join(dir, "postgres.log")
	if s.password, err = loadOrCreatePassword(filepath.Join(dir, "password")); err != nil {
		return err
	}
	if pid, port, ok := running(s.dataDir); ok {
		s.pid, s.port = pid, port
		err := s.waitReady(ctx)
		if err == nil {
			return nil
		}
		// A server whose owner was killed shuts down (Pdeathsig, on Linux): once it
		// has, start a new one.
		if alive(pid) {
			return fmt.Errorf("postgres already running in %s (pid %d) does not answer: %w", s.dataDir, pid, err)
		}
		s.pid, s.port = 0, 0
	}
	if err := s.initCluster(ctx, binDir, cred); err != nil {
		return err
	}
	portFile := filepath.Join(dir, "port")
	last := lastPort(portFile)
	for attempt := 0; ; attempt++ {
		port := opts.Port
		if port == 0 && attempt == 0 && last > 0 {
			port = last
		}
		if port == 0 {
			if port, err = freeport.Loopback(); err != nil {
				return err
			}
		}
		err := s.launch(ctx, binDir, cred, port, opts)
		if err == nil {
			if werr := os.WriteFile(portFile, []byte(strconv.Itoa(port)+"\n"), 0o644); werr != nil {
				return fmt.Errorf("record the postgres port: %w", werr)
			}
			return nil
		}
		// Another process may hold the last port, or take a free port between our
		// probe and the server's bind; only then is a retry on a new port worth it.
		if opts.Port != 0 || attempt == 4 || !strings.Contains(err.Error(), "could not bind") {
			return err
		}
	}
}

// lastPort is the port recorded in file, 0 when there is none.
func lastPort(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port <= 0 || port > 65535 {
		return 0
	}
	return port
}

// DSN is the URL of database db on this server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, s.password, s.port, db)
}

// Port is the TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// PID is the postmaster's process id.
func (s *Server) PID() int { return s.pid }

// DataDir is where the cluster lives: Dir/data, or a directory under /var/tmp when the
// caller is root and the server's user cannot reach Dir.
func (s *Server) DataDir() string { return s.dataDir }

// Owned reports whether this process started the server (Close stops only those).
func (s *Server) Owned() bool { return s.owned }

var dbName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CreateDatabase creates database name unless it exists. Names are lowercase
// identifiers (letters, digits, underscores).
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	if !dbName.MatchString(name) {
		return fmt.Errorf("database name %q: want a lowercase identifier", name)
	}
	conn, err := pgconn.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	res := conn.ExecParams(ctx, `SELECT 1 FROM pg_database WHERE datname = $1`, [][]byte{[]byte(name)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("look up database %s: %w", name, res.Err)
	}
	if len(res.Rows) > 0 {
		return nil
	}
	err = conn.Exec(ctx, `CREATE DATABASE "`+name+`"`).Close()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created concurrently
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// ErrNotRunning is returned by Attach when no server runs on the state directory.
var ErrNotRunning = errors.New("no postgres server is running on this state directory")

// Attach finds the server running on state directory dir, whoever started it, without
// starting one. user is as in Options. The result does not own the server and is not
// started (its Start would attach again): use Kill to stop the server.
func Attach(dir, user string) (*Server, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cred, err := runAs(user)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: Options{Dir: dir, User: user}, dir: abs, dataDir: dataDirFor(abs, cred), logFile: filepath.Join(abs, "postgres.log")}
	pid, port, ok := running(s.dataDir)
	if !ok {
		return nil, fmt.Errorf("%s: %w", abs, ErrNotRunning)
	}
	s.pid, s.port = pid, port
	pw, err := os.ReadFile(filepath.Join(abs, "password"))
	if err != nil {
		return nil, fmt.Errorf("read postgres password: %w", err)
	}
	s.password = string(bytes.TrimSpace(pw))
	return s, nil
}

// Kill stops the server whether or not this process started it (scripts/pg-local.sh
// stop), and waits until it has exited.
func (s *Server) Kill() error { return stopPID(s.pid, s.exited) }

// stopPID sends SIGINT (fast shutdown) and waits up to 30 s, then SIGQUIT (immediate
// shutdown, recovered at next start). exited, when not nil, closes when the process is
// reaped; otherwise the process is polled.
func stopPID(pid int, exited <-chan struct{}) error {
	gone := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for {
			if exited != nil {
				select {
				case <-exited:
					return true
				case <-time.After(time.Until(deadline)):
					return false
				}
			}
			if !alive(pid) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := signal(pid, syscall.SIGINT); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return fmt.Errorf("stop postgres (pid %d): %w", pid, err)
	}
	if gone(30 * time.Second) {
		return nil
	}
	signal(pid, syscall.SIGQUIT)
	if gone(10 * time.Second) {
		return fmt.Errorf("postgres (pid %d) ignored a fast shutdown for 30 s; stopped it immediately", pid)
	}
	return fmt.Errorf("postgres (pid %d) did not stop", pid)
}

// fallbackRoot holds the clusters whose state dir the server's user cannot reach:
// under /var/tmp, which a reboot keeps (/tmp may be emptied, with the results in it),
// else under the temp dir.
func fallbackRoot() string {
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		return filepath.Join("/var/tmp", "cf-benchmark-pg")
	}
	return filepath.Join(os.TempDir(), "cf-benchmark-pg")
}

// dataDirFor returns dir/data unless cred's user cannot traverse dir's ancestors (a
// state dir under /root, say); then a directory under fallbackRoot keyed by dir.
func dataDirFor(dir string, cred *credential) string {
	if cred == nil || traversable(dir, cred) {
		return filepath.Join(dir, "data")
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(fallbackRoot(), hex.EncodeToString(sum[:6]), "data")
}

func loadOrCreatePassword(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read postgres password: %w", err)
	}
	var r [18]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	pw := hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write postgres password: %w", err)
	}
	return pw, nil
}

// initCluster makes the cluster unless the data directory holds one already: a copy
// of the template cluster with Fast (template.go), else an initdb of its own.
func (s *Server) initCluster(ctx context.Context, binDir string, cred *credential) error {
	major, err := serverMajor(binDir)
	if err != nil {
		return err
	}
	if v, err := os.ReadFile(filepath.Join(s.dataDir, "PG_VERSION")); err == nil {
		if have := strings.TrimSpace(string(v)); have != major {
			return fmt.Errorf("the cluster in %s is PostgreSQL %s but the server binaries in %s are %s: remove the directory or install PostgreSQL %s", s.dataDir, have, binDir, major, have)
		}
		return nil
	}
	if err := os.RemoveAll(s.dataDir); err != nil { // leftovers of an interrupted initdb
		return err
	}
	// The parents must be enterable by the server's user; the cluster itself is private.
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return fmt.Errorf("create postgres data dir: %w", err)
	}
	if fallback := fallbackRoot(); strings.HasPrefix(s.dataDir, fallback+"/") {
		for _, p := range []string{fallback, filepath.Dir(s.dataDir)} {
			if err := os.Chmod(p, 0o755); err != nil {
				return err
			}
		}
	}
	if s.opts.Fast {
		// Without a template (another user's directory in the way, say) the cluster
		// gets an initdb of its own, as without Fast.
		if data, pw, err := s.template(ctx, binDir, major, cred); err == nil {
			if err := os.WriteFile(filepath.Join(s.dir, "password"), []byte(pw+"\n"), 0o600); err != nil {
				return fmt.Errorf("write postgres password: %w", err)
			}
			s.password = pw
			return copyCluster(data, s.dataDir, cred)
		}
	}
	return runInitdb(ctx, binDir, s.dataDir, s.password, cred)
}

// runInitdb makes a cluster in dataDir (which must not exist) whose superuser has
// password, owned by cred's user.
func runInitdb(ctx context.Context, binDir, dataDir, password string, cred *credential) error {
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		return fmt.Errorf("create postgres data dir: %w", err)
	}
	pwFile, err := os.CreateTemp("", "cfbench-pw-")
	if err != nil {
		return err
	}
	defer os.Remove(pwFile.Name())
	_, err = pwFile.WriteString(password + "\n")
	if cerr := pwFile.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if cred != nil {
		for _, p := range []string{dataDir, pwFile.Name()} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("hand %s to the postgres user: %w", p, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", dataDir, "-U", Superuser,
		"--pwfile", pwFile.Name(), "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C", "--no-instructions")
	cmd.SysProcAttr = procAttr(cred)
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dataDir)
		return fmt.Errorf("initdb %s: %w\n%s", dataDir, err, tail(out, 2000))
	}
	return nil
}

// launch starts the postmaster on port and waits until it accepts connections.
func (s *Server) launch(ctx context.Context, binDir string, cred *credential, port int, opts Options) error {
	args := []string{"-D", s.dataDir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "logging_collector=off", "-c", "max_connections=" + strconv.Itoa(cmp.Or(opts.MaxConnections, 200))}
	if opts.Fast {
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off")
	}
	if opts.Citus {
		args = append(args, citusSettings...)
	}
	log, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	defer log.Close()
	logStart, _ := log.Seek(0, io.SeekEnd)
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = os.TempDir()
	// The server's libpq (Citus' connections to the other nodes) reads ~/.postgresql:
	// the caller's may be root's, closed to the server's user, or hold another
	// server's certificates.
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(s.dataDir))
	// Its own process group: a Ctrl-C at the terminal reaches us, not the server, so
	// the run can still record that it was interrupted before we stop the server.
	cmd.SysProcAttr = serverAttr(cred, opts.Detach)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.pid, s.port, s.owned = cmd.Process.Pid, port, true
	// Reaped while we live; a detached server is inherited by init when we exit.
	exited, exitErr := make(chan struct{}), new(error)
	s.exited, s.exitErr = exited, exitErr
	go func() {
		*exitErr = cmd.Wait()
		close(exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		stopPID(s.pid, s.exited)
		return fmt.Errorf("start postgres on 127.0.0.1:%d: %w\n%s", port, err, s.logSince(logStart))
	}
	return nil
}

// waitReady polls until the server accepts an authenticated connection.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last error
	for {
		if s.exited != nil {
			select {
			case <-s.exited:
				return errors.New("the server exited")
			default:
			}
		} else if !alive(s.pid) {
			return errors.New("the server exited")
		}
		c, err := pgconn.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			return c.Close(ctx)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) logSince(offset int64) string {
	f, err := os.Open(s.logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	f.Seek(offset, io.SeekStart)
	b, _ := io.ReadAll(f)
	return tail(b, 2000)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// running reads dataDir/postmaster.pid and reports the pid and port of a live server.
func running(dataDir string) (pid, port int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	// Line 1 is the pid, line 4 the port (see PostgreSQL's pidfile.h).
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err1 != nil || err2 != nil || pid <= 0 || !alive(pid) {
		return 0, 0, false
	}
	// A stale pid file after a crash may name a pid since reused by another program.
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !bytes.Contains(cmd, []byte("postgres")) {
		return 0, 0, false
	}
	return pid, port, true
}
