package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testos"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testpg.Main(m, testes.Stop, testos.Stop) }

// specTemplate is the spec of the runs against an in-process target. Its users pause
// 5 ms between requests: the tests check the engine's bookkeeping, and unpaced each
// step kept both cores busy under the race detector.
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
  think_time: 5ms
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
	rep := &recorder{}
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, Reporter: rep})
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
	if rep.started != 1 || len(rep.steps) != 6 {
		t.Fatalf("reporter: %d starts and %d step reports, want 1 and one per step", rep.started, len(rep.steps))
	}
	for i, s := range rep.steps {
		// a then b, 3 steps of 1 s each: 5 s left after the first, none after the last.
		if want := time.Duration(5-i) * time.Second; s.Steps != 3 || s.Left != want || s.InstancesSeen != s.Instances || len(s.Apps) != 0 {
			t.Errorf("step report %d: %d steps, %s left, %d seen of %d, apps %v; want 3 steps, %s left, all seen, no container metrics in process",
				i, s.Steps, s.Left, s.InstancesSeen, s.Instances, s.Apps, want)
		}
		// The progress line and the final summary read the same stored figures.
		if f := res.Summaries[i]; !s.Stored || !f.Stored || s.Count != f.Count || s.Throughput != f.Throughput || s.P99 != f.P99 || s.Seconds != f.Seconds {
			t.Errorf("step %d: progress %d requests, %.3f req/s, p99 %s over %.3f s; final summary %d, %.3f, %s over %.3f s: they must agree",
				i+1, s.Count, s.Throughput, s.P99, s.Seconds, f.Count, f.Throughput, f.P99, f.Seconds)
		}
	}
}

// With repeat: 2 the variants run a b a b, each repeat a variant of its own in the
// results, its generators (one generator app per variant, as on Cloud Foundry) joining
// each repeat afresh.
func TestRepeatsRunInterleaved(t *testing.T) {
	var served atomic.Int64
	_, text, store, dsn := setup(t, "repeat: 2\n", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write([]byte("ok"))
	}))
	text = strings.Replace(text, "  max: 5\n", "  max: 1\n", 1)
	sp, err := spec.Parse("test.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	rep := &recorder{}
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, Reporter: rep})
	if err != nil {
		t.Fatal(err)
	}
	order := query[[]string](t, dsn, `SELECT array_agg(variant ORDER BY started_at) FROM steps WHERE run_id = $1`, res.Run.ID)
	if want := []string{"a#1", "b#1", "a#2", "b#2"}; !slices.Equal(order, want) {
		t.Fatalf("steps ran in the order %v, want %v", order, want)
	}
	for _, leg := range order {
		n := query[int64](t, dsn, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1 AND w.variant = $2`,
			res.Run.ID, leg)
		cfg := query[string](t, dsn, `SELECT config || ' ' || repeat || ' ' || generator_app FROM run_variants WHERE run_id = $1 AND variant = $2`,
			res.Run.ID, leg)
		name, r, _ := strings.Cut(leg, "#")
		if want := name + " " + r + " cfbench-local-" + res.Run.ID + "-" + name; n == 0 || cfg != want {
			t.Errorf("%s: %d samples, recorded as %q; want samples, and %q", leg, n, cfg, want)
		}
	}
	if stored := query[int64](t, dsn, `SELECT count(*) FROM samples`); stored != served.Load() {
		t.Errorf("target served %d requests, %d samples stored", served.Load(), stored)
	}
	if len(rep.steps) != 4 || rep.steps[0].Left != 3*time.Second || rep.steps[3].Left != 0 {
		t.Errorf("step reports %d, time left after the first %s: want 4 and 3s (b#1, a#2, b#2)", len(rep.steps), rep.steps[0].Left)
	}
}

// recorder is a Reporter that keeps what it is told.
type recorder struct {
	started  int
	notes    []string
	steps    []StepReport
	findings []Finding
}

func (r *recorder) Started(*resultsdb.Run, *spec.Spec) { r.started++ }
func (r *recorder) Note(msg string)                    { r.notes = append(r.notes, msg) }
func (r *recorder) Step(s StepReport)                  { r.steps = append(r.steps, s) }
func (r *recorder) Finding(_ string, _ int, f Finding) { r.findings = append(r.findings, f) }

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
	const landscape = "\nlandscape:\n  org: o\n  apps: {space: a}\n  generators: {space: g}\n"
	const resultsDB = "results_db:\n  service_instance: r\n"
	manifest := strings.Replace(specTemplate, "url: URL/b", "manifest: m.yml", 1)
	cases := []struct {
		name, text  string
		onCF, works bool
	}{
		{"url variants in process", specTemplate, false, true},
		{"manifest variant without a Cloud Foundry", manifest + landscape, false, false},
		{"manifest variant on Cloud Foundry", manifest + landscape + resultsDB, true, true},
		{"url variants on Cloud Foundry", specTemplate + landscape + resultsDB, true, true},
		{"Cloud Foundry without a results_db", manifest + landscape, true, false},
		{"Cloud Foundry without a landscape", specTemplate, true, false},
		{"app CPU stop without a Cloud Foundry", strings.Replace(specTemplate, "STOP", "  stop: {app_cpu_above: 100}", 1), false, false},
		{"app CPU stop on Cloud Foundry", strings.Replace(specTemplate, "STOP", "  stop: {app_cpu_above: 100}", 1) + landscape + resultsDB, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spec.Parse("t.yml", []byte(strings.ReplaceAll(strings.Replace(c.text, "STOP", "", 1), "URL", "http://127.0.0.1:1")), ".")
			if err != nil {
				t.Fatal(err)
			}
			err = Check(sp, c.onCF)
			if c.works && err != nil || !c.works && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Check(onCF %t) = %v, want works %t", c.onCF, err, c.works)
			}
		})
	}
}

// freezer answers at once, except that it stops answering completely from 1.5 s into
// the step for 3 s: longer than what is left of the 4 s step. (With 2 s of a 3 s step,
// 1.5 s of it was measured, and the stall check's buckets, 400 ms here, left 1.2 s of
// that; a completion recorded late on a loaded host cost one more bucket, and CI found
// a stall of 800 ms, under the 1 s threshold.) It is the run's
// reporter too: the step's start is the planned one, read when the engine says the
// step starts. Timed from its first request instead, the freeze came as late as that
// request (on a loaded host, a second after the step's start: CI found no stall in the
// step), and left too little of itself in the step to count as a stall.
type freezer struct {
	discardReporter
	store *resultsdb.Store
	mu    sync.Mutex
	runID string
	start time.Time // the step's planned start; zero until it is planned
}

func (f *freezer) Started(run *resultsdb.Run, _ *spec.Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runID = run.ID
}

func (f *freezer) Note(msg string) {
	if !strings.Contains(msg, "step 1/1 starts") {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, err := f.store.PlannedStep(context.Background(), f.runID, "frozen", 0); err == nil {
		f.start = st.Started
	}
}

func (f *freezer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	start := f.start
	f.mu.Unlock()
	if start.IsZero() {
		return
	}
	if since := time.Since(start); since > 1500*time.Millisecond && since < 4500*time.Millisecond {
		time.Sleep(4500*time.Millisecond - since)
	}
}

const freezeSpec = `version: 1
name: freeze
variants:
  - name: frozen
    url: URL
workload:
  WORKLOAD
  requests:
    - name: r
      path: /
ramp: {max: 1, hold: 4s}
`

func runFreeze(t *testing.T, workload string) (resultsdb.StepSummary, []StepFinding) {
	t.Helper()
	store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	f := &freezer{store: store}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	text := strings.NewReplacer("URL", srv.URL, "WORKLOAD", workload).Replace(freezeSpec)
	sp, err := spec.Parse("freeze.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, Reporter: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Summaries) != 1 {
		t.Fatalf("%d summaries", len(res.Summaries))
	}
	return res.Summaries[0], res.Findings
}

// stallFinding is the stall finding among found, or nil.
func stallFinding(found []StepFinding) *Finding {
	for _, f := range found {
		if f.Check == StallCheck {
			return &f.Finding
		}
	}
	return nil
}

// TestAFreezeShowsInTheOpenLoopAndIsFlaggedInTheClosedLoop: the target answers nothing
// for the last 2.5 s of the step. The open loop measures every request from its slot,
// so the freeze lands in p99 and the sends it blocked are counted; the closed loop sends
// almost nothing during the freeze and its p99 stays low. Both steps record the stall,
// and the stall check says what it means for each.
func TestAFreezeShowsInTheOpenLoopAndIsFlaggedInTheClosedLoop(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		s, found := runFreeze(t, "model: open\n  rate: 100\n  max_in_flight: 50")
		// The 50 requests in flight when it froze waited 2.5 s or more: an eighth of
		// the step's requests.
		if s.P99 < 1500*time.Millisecond || s.Missed < 50 {
			t.Fatalf("p99 %v, missed %d: want the freeze in p99 and the blocked sends counted; %+v", s.P99, s.Missed, s)
		}
		if len(report.Caveats([]resultsdb.StepSummary{s})) != 1 {
			t.Fatalf("caveats %q: want the missed sends reported", report.Caveats([]resultsdb.StepSummary{s}))
		}
		if f := stallFinding(found); s.Stalled < time.Second || s.Omitted != 0 || f == nil || !strings.Contains(f.Message, "the open loop kept sending") {
			t.Fatalf("stalled %s, omitted %d, finding %+v: want the stall found, nothing omitted; %+v", s.Stalled, s.Omitted, f, s)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, found := runFreeze(t, "model: closed\n  users: 4")
		if s.P99 >= time.Second || s.Stalled < time.Second || s.OmissionShare() < 0.05 {
			t.Fatalf("p99 %v, stalled %s, omitted %d of %d: want a low p99, the stall found and the requests it kept from being sent; %+v",
				s.P99, s.Stalled, s.Omitted, s.Count, s)
		}
		if f := stallFinding(found); f == nil || !strings.Contains(f.Message, "percentiles understate") {
			t.Fatalf("findings %+v: want the stall flagged as hiding latency", found)
		}
	})
}

// TestHeaderVarsComeFromTheEnvironment: a ${NAME} in a header value reaches the target
// expanded from Options.LookupEnv while the stored spec keeps the reference; a name the
// environment lacks stops the run before it starts.
func TestHeaderVarsComeFromTheEnvironment(t *testing.T) {
	var wrong atomic.Int64
	sp, text, store, dsn := setup(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "bearer s3cret" {
			wrong.Add(1)
		}
	}))
	text = strings.Replace(text, "      path: /x\n", "      path: /x\n      headers: {Authorization: \"${CFBENCH_TEST_TOKEN}\"}\n", 1)
	sp, err := spec.Parse("test.yml", []byte(text), ".")
	if err != nil {
		t.Fatal(err)
	}
	sp.Ramp.Max = 1
	if _, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store,
		LookupEnv: func(string) (string, bool) { return "", false }}); err == nil || !strings.Contains(err.Error(), "${CFBENCH_TEST_TOKEN}") {
		t.Fatalf("run without the variable: %v", err)
	}
	lookup := func(name string) (string, bool) { return "bearer s3cret", name == "CFBENCH_TEST_TOKEN" }
	res, err := Run(context.Background(), sp, text, Options{PollEvery: 100 * time.Millisecond, Store: store, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summaries[0].Count == 0 || wrong.Load() != 0 {
		t.Fatalf("%d requests, %d without the expanded header", res.Summaries[0].Count, wrong.Load())
	}
	if stored := query[string](t, dsn, `SELECT spec FROM runs WHERE id = $1`, res.Run.ID); strings.Contains(stored, "s3cret") || !strings.Contains(stored, "${CFBENCH_TEST_TOKEN}") {
		t.Fatalf("stored spec: %s", stored)
	}
}
