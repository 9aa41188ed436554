package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
	"github.com/jackc/pgx/v5"
)

// TestBadEnvironmentGivesOneClearLine: a worker that cannot find its app or its results
// DB says so in one line and exits 1, before doing anything.
func TestWorkerBadEnvironmentGivesOneClearLine(t *testing.T) {
	app := `{"application_name":"cfbench-loadgen"}`
	pg := func(name string) string {
		return `{"name":"` + name + `","label":"postgres","tags":["postgresql"],"credentials":{"uri":"postgres://u:secret@db:5432/r"}}`
	}
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no app", map[string]string{"DATABASE_URL": "postgres://u:p@127.0.0.1:1/r"}, "no app name"},
		{"no binding", map[string]string{"VCAP_APPLICATION": app}, "neither DATABASE_URL nor VCAP_SERVICES"},
		{"broken VCAP_SERVICES", map[string]string{"VCAP_APPLICATION": app, "VCAP_SERVICES": `{"postgres": [`}, "VCAP_SERVICES"},
		{"two postgres bindings", map[string]string{"VCAP_APPLICATION": app, "VCAP_SERVICES": `{"postgres":[` + pg("a") + `,` + pg("b") + `]}`}, "a, b"},
		{"named binding missing", map[string]string{"VCAP_APPLICATION": app, "CFBENCH_DB_SERVICE": "c", "VCAP_SERVICES": `{"postgres":[` + pg("a") + `]}`}, `"c"`},
		{"bad instance index", map[string]string{"VCAP_APPLICATION": app, "CF_INSTANCE_INDEX": "x", "DATABASE_URL": "postgres://u:p@h/r"}, "CF_INSTANCE_INDEX"},
		{"relay without a token", map[string]string{"VCAP_APPLICATION": app, "CFBENCH_RELAY_URL": "http://relay.internal:8080"}, "no token"},
		{"relay url not http", map[string]string{"VCAP_APPLICATION": app, "CFBENCH_RELAY_URL": "relay.internal:8080", "CFBENCH_RELAY_TOKEN": "t"}, "want http(s)://host[:port]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := runWorker(context.Background(), nil, func(k string) string { return c.env[k] }, "host", &stderr, nil)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "cfbench worker: ") || !strings.Contains(lines[0], c.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and one line mentioning %q", code, stderr.String(), c.want)
			}
			if strings.Contains(stderr.String(), "secret") {
				t.Fatalf("the error shows a password: %s", stderr.String())
			}
		})
	}
}

// TestSIGTERMMidStepLosesNoSample runs the real binary, stops it with SIGTERM in the
// middle of a step as Cloud Foundry does, and finds every request it sent stored.
func TestWorkerSIGTERMMidStepLosesNoSample(t *testing.T) {
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "cfbench")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A slow target keeps requests in flight when the signal arrives.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()

	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(ctx, "sigterm", "t.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wl := worker.Workload{Model: spec.ModelClosed, Users: 8, KeepAlive: true, Timeout: 5 * time.Second,
		Requests: []worker.Request{{Method: "GET", Path: "/", Weight: 1}}}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "cfbench-loadgen", TargetURL: srv.URL, Workload: wl.Marshal()}); err != nil {
		t.Fatal(err)
	}

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "worker", "--poll", "100ms")
	cmd.Env = []string{"DATABASE_URL=" + dsn, "VCAP_APPLICATION={\"application_name\":\"cfbench-loadgen\"}", "CF_INSTANCE_INDEX=4", "TMPDIR=" + t.TempDir()}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func(sql string) int64 {
		var n int64
		if err := conn.QueryRow(ctx, sql, run.ID).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; worker log:\n%s", what, stderr.String())
			}
		}
	}
	waitFor("the worker to register", func() bool { return count(`SELECT count(*) FROM workers WHERE run_id = $1`) == 1 })
	now, err := store.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := now.Add(300 * time.Millisecond)
	if err := store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: "v", Index: 0, Instances: 1, Users: 8,
		Started: start, WarmupUntil: start, Ends: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	waitFor("requests to be sent", func() bool { return count(`SELECT sent FROM workers WHERE run_id = $1`) > 100 })

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("worker exited with %v after SIGTERM; log:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("worker still running 15 s after SIGTERM; log:\n%s", stderr.String())
	}
	sent := count(`SELECT sent FROM workers WHERE run_id = $1 AND stopped_at IS NOT NULL AND instance_index = 4 AND dropped = 0`)
	stored := count(`SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1`)
	if sent == 0 || sent != stored {
		t.Fatalf("the worker reports %d requests sent, %d samples are stored; log:\n%s", sent, stored, stderr.String())
	}
	if done := count(`SELECT count(*) FROM worker_steps ws JOIN workers w ON w.id = ws.worker_id WHERE w.run_id = $1 AND ws.done_at IS NOT NULL AND ws.sent > 0`); done != 1 {
		t.Fatalf("the interrupted step is not recorded as done for the worker")
	}
}
