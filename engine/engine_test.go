package engine

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const specTemplate = `version: 1
name: engine-test
variants:
  - name: a
    url: URL
  - name: b
    url: URL/b
workload:
  model: closed
  users: 2
  requests:
    - name: r
      path: /x
ramp:
  start: 1
  step: 2
  max: 5
  hold: 1s
  warmup: 200ms
STOP`

func setup(t *testing.T, stop string, handler http.Handler) (*spec.Spec, string, *resultsdb.Store, string) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	text := strings.ReplaceAll(strings.Replace(specTemplate, "STOP", stop, 1), "URL", srv.URL)
	sp, err := spec.Parse("test.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return sp, text, store, dsn
}

func query[T any](t *testing.T, dsn, sql string, args ...any) T {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v T
	if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestRunWalksTheRampAndStoresEveryRequest(t *testing.T) {
	var served atomic.Int64
	sp, text, store, dsn := setup(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write([]byte("ok"))
	}))
	var progress bytes.Buffer
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != resultsdb.RunCompleted || len(res.Stops) != 0 {
		t.Fatalf("run %s (%s), stops %v", res.Run.Status, res.Run.Reason, res.Stops)
	}
	// Two variants x steps of 1, 3, 5 instances.
	if len(res.Summaries) != 6 {
		t.Fatalf("%d step summaries, want 6", len(res.Summaries))
	}
	for i, s := range res.Summaries {
		wantVariant, wantInst := []string{"a", "b"}[i/3], []int{1, 3, 5}[i%3]
		if s.Variant != wantVariant || s.Instances != wantInst || s.Users != 2 || s.Count == 0 || s.Errors != 0 {
			t.Fatalf("summary %d: %+v, want variant %s with %d instances and requests without errors", i, s, wantVariant, wantInst)
		}
	}
	stored := query[int64](t, dsn, `SELECT count(*) FROM samples`)
	if stored != served.Load() {
		t.Fatalf("target served %d requests, %d samples stored: every request must be stored", served.Load(), stored)
	}
	if n := query[int64](t, dsn, `SELECT count(*) FROM workers WHERE run_id = $1 AND stopped_at IS NOT NULL`, res.Run.ID); n != 10 {
		t.Fatalf("%d stopped workers, want 5 per variant", n)
	}
	if text := query[string](t, dsn, `SELECT spec FROM runs WHERE id = $1`, res.Run.ID); !strings.Contains(text, "engine-test") {
		t.Fatalf("the run does not keep its spec: %q", text)
	}
	if lines := strings.Count(progress.String(), " left\n"); lines != 6 {
		t.Fatalf("%d progress lines, want one per step:\n%s", lines, progress.String())
	}
}

func TestStopConditionEndsTheRampEarly(t *testing.T) {
	sp, text, store, dsn := setup(t, "  stop:\n    error_rate_above: 0.5", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/b") {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != resultsdb.RunStopped || !strings.HasPrefix(res.Stops["b"], "error rate 100.00% over 50.00%") || res.Stops["a"] != "" {
		t.Fatalf("status %s, stops %v: want b stopped by its error rate, a not", res.Run.Status, res.Stops)
	}
	if n := query[int64](t, dsn, `SELECT count(*) FROM steps WHERE run_id = $1 AND variant = 'b'`, res.Run.ID); n != 1 {
		t.Fatalf("variant b ran %d steps, want 1", n)
	}
	if r := query[string](t, dsn, `SELECT stop_reason FROM steps WHERE run_id = $1 AND variant = 'b'`, res.Run.ID); r != res.Stops["b"] {
		t.Fatalf("step stop_reason %q, want %q", r, res.Stops["b"])
	}
}

func TestCancelMarksTheRunAbortedAndKeepsItsSamples(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var served atomic.Int64
	sp, text, store, dsn := setup(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) == 20 {
			cancel() // interrupt mid-step, as Ctrl-C does
		}
		w.Write([]byte("ok"))
	}))
	res, err := Run(ctx, sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store})
	if !errors.Is(err, ErrAborted) || res == nil || res.Run.Status != resultsdb.RunAborted {
		t.Fatalf("err %v, result %+v: want ErrAborted and an aborted run", err, res)
	}
	if st := query[string](t, dsn, `SELECT status FROM runs WHERE id = $1`, res.Run.ID); st != "aborted" {
		t.Fatalf("stored status %q", st)
	}
	// Every request the target answered is stored (a request cancelled in flight is
	// stored too, with error class canceled).
	if stored := query[int64](t, dsn, `SELECT count(*) FROM samples WHERE error <> 7`); stored < served.Load()-int64(sp.Workload.Users) {
		t.Fatalf("%d samples stored, target served %d", stored, served.Load())
	}
}

func TestCheckRefusesWhatItCannotRun(t *testing.T) {
	cases := map[string]string{
		"manifest variant": strings.Replace(specTemplate, "url: URL/b", "manifest: m.yml", 1) + "\nlandscape:\n  org: o\n  apps: {space: a}\n  generators: {space: g}\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			sp, err := spec.Parse("t.yml", []byte(strings.ReplaceAll(strings.Replace(text, "STOP", "", 1), "URL", "http://127.0.0.1:1")), ".")
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(sp); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Check = %v, want ErrUnsupported", err)
			}
		})
	}
}
