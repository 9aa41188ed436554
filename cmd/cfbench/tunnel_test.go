package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/plugin/command"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func vcapServices(t *testing.T, dsn string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"postgres": []map[string]any{{"name": "cfbench-results", "label": "postgres",
		"credentials": map[string]any{"uri": dsn}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTunnelMissingConfigurationIsOneClearLine(t *testing.T) {
	const pw = "sup3r-secret-password-123"
	good := map[string]string{"PORT": "8080", "CFBENCH_TUNNEL_AUTH": "u:" + pw, "CFBENCH_TUNNEL_KEY": "seed",
		"DATABASE_URL": "postgres://u:db-" + pw + "@db.internal:5432/r"}
	for name, c := range map[string]struct {
		unset, set string
		value      string
		want       string
	}{
		"no port":         {unset: "PORT", want: "PORT"},
		"no auth":         {unset: "CFBENCH_TUNNEL_AUTH", want: "CFBENCH_TUNNEL_AUTH"},
		"no key":          {unset: "CFBENCH_TUNNEL_KEY", want: "CFBENCH_TUNNEL_KEY"},
		"no database":     {unset: "DATABASE_URL", want: "VCAP_SERVICES"},
		"short password":  {set: "CFBENCH_TUNNEL_AUTH", value: "u:short", want: "at least 16"},
		"bad database":    {set: "DATABASE_URL", value: "mysql://u:db-" + pw + "@db/r", want: "DATABASE_URL"},
		"bad vcap":        {unset: "DATABASE_URL", set: "VCAP_SERVICES", value: `{"postgres": [{"credentials": {"password": "` + pw + `"`, want: "VCAP_SERVICES"},
		"no auth user":    {set: "CFBENCH_TUNNEL_AUTH", value: ":" + pw, want: "user:password"},
		"port not a port": {set: "PORT", value: "http", want: "http"},
	} {
		t.Run(name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range good {
				e[k] = v
			}
			delete(e, c.unset)
			if c.set != "" {
				e[c.set] = c.value
			}
			var stderr bytes.Buffer
			code := runTunnel(context.Background(), nil, env(e), &stderr, nil)
			out := stderr.String()
			if code != 1 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "cfbench tunnel: ") || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, stderr %q: want exit 1 and one line about %s", code, out, c.want)
			}
			if strings.Contains(out, pw) {
				t.Fatalf("the error quotes a password: %q", out)
			}
		})
	}
}

// TestExportThroughTheTunnelApp runs the tunnel app bound to a database, as Cloud Foundry
// would start it, and `cf-benchmark export --tunnel` against it; the files equal a direct
// export's, and neither side prints a password.
func TestExportThroughTheTunnelApp(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	runID := seed(t, store)

	auth, err := tunnel.NewAuth()
	if err != nil {
		t.Fatal(err)
	}
	key, err := tunnel.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	fp, err := tunnel.KeyFingerprint(key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var appLog testlog.Buffer
	appCtx, stopApp := context.WithCancel(ctx)
	up := make(chan *tunnel.Server, 1)
	exited := make(chan int, 1)
	go func() {
		exited <- runTunnel(appCtx, nil, env(map[string]string{"PORT": strconv.Itoa(port), "VCAP_SERVICES": vcapServices(t, dsn),
			"CFBENCH_TUNNEL_AUTH": auth, "CFBENCH_TUNNEL_KEY": key}), &appLog, func(s *tunnel.Server) { up <- s })
	}()
	select {
	case s := <-up:
		if s.Fingerprint() != fp {
			t.Fatalf("app fingerprint %s, want %s", s.Fingerprint(), fp)
		}
	case code := <-exited:
		t.Fatalf("tunnel app exited %d: %s", code, appLog.String())
	}
	defer func() {
		stopApp()
		if code := <-exited; code != 0 {
			t.Errorf("tunnel app exited %d on SIGTERM: %s", code, appLog.String())
		}
	}()
	if !strings.Contains(appLog.String(), fp) {
		t.Fatalf("the app does not log its fingerprint:\n%s", appLog.String())
	}

	cli := func(extra map[string]string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		e := map[string]string{"CFBENCH_TUNNEL_AUTH": auth}
		for k, v := range extra {
			e[k] = v
		}
		code := command.Main(ctx, &command.Env{Stdout: &stdout, Stderr: &stderr, Getenv: env(e)}, args)
		return code, stdout.String(), stderr.String()
	}
	server := "http://127.0.0.1:" + strconv.Itoa(port)
	direct, through := t.TempDir(), t.TempDir()
	if code, out, errOut := cli(nil, "export", runID, "--dir", direct, "--db", dsn); code != 0 {
		t.Fatalf("direct export: %d %s %s", code, out, errOut)
	}
	code, out, errOut := cli(nil, "export", runID, "--dir", through, "--db", dsn, "--tunnel", server, "--tunnel-fingerprint", fp)
	if code != 0 || !strings.HasPrefix(out, "exported run "+runID) {
		t.Fatalf("export through the tunnel: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	entries, _ := os.ReadDir(direct)
	if len(entries) < 9 {
		t.Fatalf("direct export wrote %d files", len(entries))
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(direct, e.Name()))
		b, _ := os.ReadFile(filepath.Join(through, e.Name()))
		if e.Name() != "manifest.json" && !bytes.Equal(a, b) {
			t.Errorf("%s through the tunnel differs from the direct export", e.Name())
		}
	}

	// Refusals: a wrong fingerprint, wrong credentials, a database other than the bound one.
	other, _ := tunnel.NewKey()
	wrongFP, _ := tunnel.KeyFingerprint(other)
	user, _, _ := strings.Cut(auth, ":")
	otherDB := strings.Replace(dsn, "127.0.0.1:", "localhost:", 1)
	for name, c := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"wrong fingerprint": {nil, []string{"--db", dsn, "--tunnel-fingerprint", wrongFP}, "pinned fingerprint"},
		"wrong password":    {map[string]string{"CFBENCH_TUNNEL_AUTH": user + ":wrong-password-000000"}, []string{"--db", dsn, "--tunnel-fingerprint", fp}, "refused the credentials"},
		"other database":    {nil, []string{"--db", otherDB, "--tunnel-fingerprint", fp}, "does not allow this remote"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := cli(c.env, append([]string{"export", runID, "--dir", t.TempDir(), "--tunnel", server}, c.args...)...)
			if code != command.ExitFailure || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "Try:") {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 and %q with a hint", code, out, errOut, c.want)
			}
		})
	}

	// No password in anything printed: the app's log, the CLI's output, chisel's lines.
	_, tunnelPass, _ := strings.Cut(auth, ":")
	u, _ := url.Parse(dsn)
	dbPass, _ := u.User.Password()
	stopApp()
	all := appLog.String() + errOut + out + stderrBarrier(t)
	if !strings.Contains(all, "session#") {
		t.Fatalf("chisel's own lines were not captured; the check below would prove nothing:\n%s", all)
	}
	for name, secret := range map[string]string{"tunnel password": tunnelPass, "database password": dbPass, "server key": key[3:]} {
		if len(secret) < 8 || strings.Contains(all, secret) {
			t.Errorf("the %s appears in the output (or is too short to check)", name)
		}
	}
}

// stderrBarrier returns what reached standard error so far.
func stderrBarrier(t *testing.T) string {
	t.Helper()
	marker := fmt.Sprintf("-- barrier %d --", time.Now().UnixNano())
	fmt.Fprintln(os.Stderr, marker)
	for range 1000 {
		if s := stderrCopy.String(); strings.Contains(s, marker) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("standard error capture is stuck")
	return ""
}

// seed stores a small run with samples in every step.
func seed(t *testing.T, store *resultsdb.Store) string {
	t.Helper()
	ctx := context.Background()
	run, err := store.CreateRun(ctx, "tunnel-e2e", "e2e.yml", "version: 1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: "v", Instances: 1, Users: 1, Started: run.Epoch, WarmupUntil: run.Epoch, Ends: run.Epoch}); err != nil {
		t.Fatal(err)
	}
	id, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "gen"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.NewSampleWriter(id, resultsdb.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 20000; i++ {
		w.Add(sample.Sample{Seq: uint32(i), IntendedUS: int64(i) * 100, LatencyUS: int32(i % 900), Status: 200})
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return run.ID
}
