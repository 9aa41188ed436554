//go:build unix

package pgserver

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

func query(t *testing.T, dsn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// stateDir is a fresh directory the server's user can enter when the tests run as root
// (t.TempDir is private to root).
func stateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgserver-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestStartCreateStopRestart(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	ctx := context.Background()
	dir := stateDir(t)
	srv, err := startServer(ctx, Options{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if !srv.Owned() || srv.Port() == 0 {
		t.Fatalf("owned %v port %d", srv.Owned(), srv.Port())
	}
	if err := srv.CreateDatabase(ctx, "results"); err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateDatabase(ctx, "results"); err != nil {
		t.Fatalf("second CreateDatabase: %v", err)
	}
	if err := srv.CreateDatabase(ctx, `x"; DROP`); err == nil {
		t.Fatal("CreateDatabase accepted a name that is not an identifier")
	}
	dsn := srv.DSN("results")
	if got := query(t, dsn, `SELECT current_user || ' ' || inet_server_addr()::text`); got != "cfbench 127.0.0.1/32" {
		t.Fatalf("connected as %q", got)
	}
	if os.Geteuid() == 0 {
		if got := query(t, dsn, `SELECT current_setting('data_directory')`); got != srv.DataDir() {
			t.Fatalf("data_directory %q, want %q", got, srv.DataDir())
		}
		var st syscall.Stat_t
		if err := syscall.Stat(srv.DataDir(), &st); err != nil || st.Uid == 0 {
			t.Fatalf("running as root, the data dir must belong to an unprivileged user: uid %d, %v", st.Uid, err)
		}
	}
	// A wrong password is refused: the server is not open to anyone on the machine.
	bad := strings.Replace(dsn, ":"+srv.password+"@", ":wrong@", 1)
	if c, err := pgx.Connect(ctx, bad); err == nil {
		c.Close(ctx)
		t.Fatal("connected with a wrong password")
	}

	// A second Start on the same dir attaches to the running server and does not own it.
	again, err := startServer(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if again.Owned() || again.PID() != srv.PID() || again.Port() != srv.Port() {
		t.Fatalf("second start: owned %v pid %d port %d; first pid %d port %d", again.Owned(), again.PID(), again.Port(), srv.PID(), srv.Port())
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	query(t, dsn, `SELECT 'still up'`)

	if c, err := pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	} else if _, err := c.Exec(ctx, `CREATE TABLE kept AS SELECT 'across restarts' AS v`); err != nil {
		t.Fatal(err)
	} else {
		c.Close(ctx)
	}
	pid := srv.PID()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("postgres pid %d still exists after Close: %v", pid, err)
	}
	if _, _, ok := running(srv.DataDir()); ok {
		t.Fatal("postmaster.pid left behind by a clean stop")
	}

	srv2, err := startServer(ctx, Options{Dir: dir, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv2.Close() })
	// On the same port: a DSN given out before the restart (an exported CFBENCH_DB)
	// reaches the server again.
	if srv2.Port() != srv.Port() || srv2.DSN("results") != dsn {
		t.Fatalf("restarted on port %d, was %d: the old DSN no longer reaches it", srv2.Port(), srv.Port())
	}
	if got := query(t, dsn, `SELECT v FROM kept`); got != "across restarts" {
		t.Fatalf("after restart: %q", got)
	}
}

func TestAttachAndKill(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	ctx := context.Background()
	dir := stateDir(t)
	if _, err := Attach(dir, ""); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Attach before start = %v", err)
	}
	srv, err := startServer(ctx, Options{Dir: dir, Fast: true, Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	att, err := Attach(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if att.Owned() || att.PID() != srv.PID() || att.DSN("postgres") != srv.DSN("postgres") {
		t.Fatalf("Attach: owned %v pid %d dsn %s; started pid %d dsn %s", att.Owned(), att.PID(), att.DSN("postgres"), srv.PID(), srv.DSN("postgres"))
	}
	query(t, att.DSN("postgres"), `SELECT 'ok'`)
	if err := att.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited // reaped by the process that started it
	if _, err := Attach(dir, ""); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Attach after Kill = %v", err)
	}
}

func TestClusterOfAnotherMajorVersion(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	dir := stateDir(t)
	bin, err := FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cred, err := runAs("")
	if err != nil {
		t.Fatal(err)
	}
	data := dataDirFor(dir, cred)
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = startServer(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "is PostgreSQL 9 but the server binaries in "+bin) {
		t.Fatalf("Start = %v", err)
	}
}

func TestNoBinaries(t *testing.T) {
	// An empty PATH hides initdb and pg_config; the Debian directory is pointed at an
	// empty one (not in parallel with other tests: they read libDirGlob).
	saved := libDirGlob
	libDirGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { libDirGlob = saved })
	t.Setenv("PATH", t.TempDir())
	_, err := startServer(context.Background(), Options{Dir: t.TempDir()})
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("Start = %v", err)
	}
}

func TestTraversable(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	if os.Geteuid() != 0 {
		t.Skip("ownership checks need root to create a directory another user cannot enter")
	}
	cred, err := runAs("")
	if err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(stateDir(t), "closed")
	inner := filepath.Join(closed, "state")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if traversable(inner, cred) {
		t.Fatal("a dir under a 0700 root-owned dir is traversable by the postgres user")
	}
	// The fallback root is the product's, shared with clusters this test did not make:
	// removed after the test only when the test made it and it is empty again.
	if _, err := os.Stat(fallbackRoot()); errors.Is(err, fs.ErrNotExist) {
		t.Cleanup(func() { os.Remove(fallbackRoot()) })
	}
	got := dataDirFor(inner, cred)
	if !strings.HasPrefix(got, "/var/tmp/cf-benchmark-pg/") || got != dataDirFor(inner, cred) { // kept across reboots
		t.Fatalf("dataDirFor = %q", got)
	}
	// And the server really starts there.
	srv, err := startServer(context.Background(), Options{Dir: inner, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(srv.DataDir()))
	defer srv.Close()
	query(t, srv.DSN("postgres"), `SELECT 'ok'`)
}

// startServer is New and Start.
func startServer(ctx context.Context, opts Options) (*Server, error) {
	s := New(opts)
	return s, s.Start(ctx)
}

// TestFastClustersAreCopiesOfOneTemplate: Fast clusters are copies of one template
// (one system identifier, one password), made on first use; a cluster without Fast gets
// an initdb and a password of its own.
func TestFastClustersAreCopiesOfOneTemplate(t *testing.T) {
	testtier.External(t, "PostgreSQL server binaries")
	t.Setenv("TMPDIR", stateDir(t)) // a template of this test's own
	ctx := context.Background()
	ident := func(opts Options) (id, password string) {
		t.Helper()
		srv, err := startServer(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		pw, err := os.ReadFile(filepath.Join(opts.Dir, "password"))
		if err != nil {
			t.Fatal(err)
		}
		return query(t, srv.DSN("postgres"), `SELECT system_identifier::text FROM pg_control_system()`), strings.TrimSpace(string(pw))
	}
	id1, pw1 := ident(Options{Dir: stateDir(t), Fast: true})
	id2, pw2 := ident(Options{Dir: stateDir(t), Fast: true})
	id3, pw3 := ident(Options{Dir: stateDir(t)})
	if id1 != id2 || pw1 != pw2 {
		t.Errorf("two Fast clusters: system identifiers %s and %s, passwords equal: %v; want copies of one template", id1, id2, pw1 == pw2)
	}
	if id3 == id1 || pw3 == pw1 {
		t.Errorf("a cluster without Fast shares the template's system identifier (%v) or password (%v)", id3 == id1, pw3 == pw1)
	}
	entries, err := os.ReadDir(filepath.Dir(templateDir("", nil)))
	if err != nil || len(entries) != 1 {
		t.Errorf("template dir holds %v (%v), want the one template and no leftovers", entries, err)
	}
}
