package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/internal/testrace"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// testTunnel is a tunnel server and client on loopback in front of the database at dsn.
type testTunnel struct {
	cfg    tunnel.ServerConfig
	server *tunnel.Server
	client *tunnel.Client
	dsn    string // the database through the tunnel
}

func startTunnel(t testing.TB, dsn string, log *slog.Logger) *testTunnel {
	t.Helper()
	remote, err := tunnel.DBRemote(dsn)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := tunnel.NewAuth()
	if err != nil {
		t.Fatal(err)
	}
	key, err := tunnel.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	tt := &testTunnel{cfg: tunnel.ServerConfig{Addr: "127.0.0.1:0", Remote: remote, Auth: auth, Key: key, Logger: log}}
	tt.startServer(t)
	tt.cfg.Addr = tt.server.Addr().String() // restarts take the same port
	tt.client, err = tunnel.NewClient(tunnel.ClientConfig{Server: "http://" + tt.cfg.Addr, Auth: auth, Fingerprint: tt.server.Fingerprint(),
		Remote: remote, Logger: log, MinRetry: 50 * time.Millisecond, MaxRetry: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := tt.client.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); tt.client.Close(); tt.client.Wait() })
	if tt.dsn, err = tt.client.DSN(dsn); err != nil {
		t.Fatal(err)
	}
	return tt
}

func (tt *testTunnel) startServer(t testing.TB) {
	t.Helper()
	s, err := tunnel.NewServer(tt.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); s.Wait() })
	tt.server = s
}

// kill stops the server, dropping every tunnel, and starts it again on the same port
// with the same key, as a crashed and restarted tunnel app would be.
func (tt *testTunnel) kill(t testing.TB) {
	t.Helper()
	tt.server.Close()
	if err := tt.server.Wait(); err != nil {
		t.Error(err)
	}
	tt.startServer(t)
}

// TestExportThroughTunnelSurvivesThreeKills exports a million samples (a quarter of a
// million under the race detector, where this test took 41 CPU-seconds at a million)
// through a chisel tunnel on loopback whose server is killed three times mid-table;
// samples.csv must be byte for byte the file a direct export writes. No password may
// show in any log.
func TestExportThroughTunnelSurvivesThreeKills(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	samples := 1 << 20
	if testrace.Enabled {
		samples = 1 << 18
	}
	run := seedRun(t, store, samples/len(variants))

	direct := t.TempDir()
	want, err := Export(ctx, store, run.ID, direct, []string{"samples"})
	if err != nil {
		t.Fatal(err)
	}
	wantSamples := want.Files[1]
	if wantSamples.Rows != int64(samples) {
		t.Fatalf("direct export wrote %d samples, want %d", wantSamples.Rows, samples)
	}

	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s\nstandard error:\n%s", logs.String(), capturedStderr(t))
		}
	})
	tt := startTunnel(t, dsn, log)
	tstore, err := resultsdb.Open(ctx, tt.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer tstore.Close()

	kills := 0
	through := t.TempDir()
	got, err := ExportWith(ctx, tstore, run.ID, through, Options{Tables: []string{"samples"}, Logger: log, Backoff: 50 * time.Millisecond,
		Progress: func(table string, rows, bytes int64) {
			// Kill at a quarter, half and three quarters of the file.
			if table == "samples" && kills < 3 && bytes >= int64(kills+1)*wantSamples.Bytes/4 {
				kills++
				tt.kill(t)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	gotSamples := got.Files[1]
	if kills != 3 || gotSamples.Resumed < 3 {
		t.Fatalf("%d kills, %d resumptions: want 3 kills and a resumption after each", kills, gotSamples.Resumed)
	}
	for _, name := range []string{"runs.csv", "samples.csv"} {
		a, errA := os.ReadFile(filepath.Join(direct, name))
		b, errB := os.ReadFile(filepath.Join(through, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s through the tunnel (%d bytes) differs from the direct export (%d bytes)", name, len(b), len(a))
		}
	}
	body, _ := os.ReadFile(filepath.Join(through, "samples.csv"))
	sum := sha256.Sum256(body)
	if gotSamples.Rows != wantSamples.Rows || gotSamples.SHA256 != hex.EncodeToString(sum[:]) || gotSamples.SHA256 != wantSamples.SHA256 ||
		gotSamples.Bytes != int64(len(body)) {
		t.Fatalf("manifest %+v, direct %+v, file sha256 %x", gotSamples, wantSamples, sum)
	}
	if !strings.Contains(logs.String(), "resuming after the last whole row") {
		t.Fatalf("no resumption was logged:\n%s", logs.String())
	}

	// No credential anywhere: our logs, chisel's lines on standard error, the errors.
	_, tunnelPass, _ := strings.Cut(tt.cfg.Auth, ":")
	u, _ := url.Parse(dsn)
	dbPass, _ := u.User.Password()
	stderr := capturedStderr(t)
	if !strings.Contains(stderr, "chisel") && !strings.Contains(stderr, "session#") {
		t.Fatalf("captured none of chisel's output; the check below would prove nothing:\n%s", stderr)
	}
	for what, out := range map[string]string{"log": logs.String(), "standard error": stderr} {
		for name, secret := range map[string]string{"tunnel password": tunnelPass, "database password": dbPass} {
			if len(secret) < 8 || strings.Contains(out, secret) {
				t.Errorf("the %s appears in the %s (or is too short to check)", name, what)
			}
		}
	}
}
