package export

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// variants name the workers of a seeded run: every one needs quoting or neutralising.
var variants = []string{"x plain", "=HYPERLINK(\"http://evil\",\"x\")", "two\nlines, \"quoted\"", "-v"}

// seedRun creates a run with len(variants) workers of perWorker samples each, plus rows in
// every other table, and returns it.
func seedRun(t testing.TB, store *resultsdb.Store, perWorker int) *resultsdb.Run {
	t.Helper()
	ctx := context.Background()
	epoch := time.Date(2026, 11, 22, 13, 5, 1, 123456000, time.UTC)
	run, err := store.CreateRun(ctx, "@demo", "demo.yml", "version: 1", epoch)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range variants {
		if err := store.StartStep(ctx, resultsdb.Step{RunID: run.ID, Variant: v, Index: 0, Instances: 1, Users: 4,
			Started: epoch, WarmupUntil: epoch.Add(time.Second), Ends: epoch.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if err := store.EndStep(ctx, run.ID, v, 0, epoch.Add(time.Minute), "'already quoted"); err != nil {
			t.Fatal(err)
		}
		id, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: v, AppName: "+gen", InstanceIndex: i, Host: "\thost"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := store.NewSampleWriter(id, resultsdb.WriterOptions{BatchSize: 1 << 16, MaxBuffered: perWorker + 1})
		if err != nil {
			t.Fatal(err)
		}
		for j := range perWorker {
			s := sample.Sample{Seq: uint32(j + 1), IntendedUS: int64(j) * 50, StartDelayUS: int32(j%7 - 3), LatencyUS: int32(800 + j%5000),
				Bytes: 100, Status: 200, Step: uint8(j >> 18), Request: uint8(j % 3)}
			if j%97 == 0 {
				s.Status, s.Err = 0, sample.ErrTimeout
			}
			if j < 1000 {
				s.Flags = sample.FlagWarmup
			}
			w.Add(s)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Pool().Exec(ctx, `INSERT INTO worker_steps (worker_id, step, joined_at, skew_us, late_join, sent, missed, done_at)
			VALUES ($1, 0, $2, -1500, $3, $4, 0, $2)`, id, epoch, i%2 == 1, perWorker); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range variants {
		wl := worker.Workload{Model: "closed", Users: 4, Timeout: time.Second, Requests: []worker.Request{
			{Name: "=list", Method: "GET", Path: "/posts?page=1", Weight: 3}, {Name: "show", Method: "GET", Path: "/posts/1", Weight: 1},
			{Name: "create", Method: "POST", Path: "/posts", Body: `{"a":1}`, Weight: 1}}}
		if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: v, GeneratorApp: "+gen", TargetURL: "http://=app",
			AppName: "=app", AppGUID: "guid", Workload: wl.Marshal()}); err != nil {
			t.Fatal(err)
		}
	}
	var rows []resultsdb.ContainerMetric
	cpu, mem := -0.25, int64(-1)     // impossible values: negative numbers must stay numbers
	used := int64(12345678901234567) // beyond float64's exact integers
	for i := range 50 {
		r := resultsdb.ContainerMetric{RunID: run.ID, At: epoch.Add(time.Duration(i) * time.Second), AppName: "=app",
			AppGUID: "guid", ProcessType: "web", InstanceIndex: i % 2, State: "RUNNING", CPU: &cpu, MemBytes: &mem, Host: "10.0.0.1"}
		if i%2 == 1 { // a Log Cache reading
			r.State, r.Host, r.CPU, r.CPUTimeNS, r.Source = "", "", nil, &used, resultsdb.SourceLogCache
		}
		rows = append(rows, r)
	}
	if err := store.InsertContainerMetrics(ctx, rows); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		if _, err := store.ComputeStepMetrics(ctx, run.ID, v, 0, []resultsdb.AppRole{{Name: "=app", Role: resultsdb.RoleApp}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		tid := sample.NewTraceID(run.TraceTag, 1, uint64(i+1)).String()
		// worker_id and seq decoded from the trace id, as the store's writers keep them.
		if _, err := store.Pool().Exec(ctx, `INSERT INTO router_requests (run_id, trace_id, at, app_guid, app_index, status, response_time_us, gorouter_time_us, worker_id, seq)
			VALUES ($1, $2::uuid, $3, '@guid', 0, 200, 1500, -2, 1, $4)`, run.ID, tid, epoch, i+1); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Pool().Exec(ctx, `INSERT INTO app_timings (run_id, trace_id, app_name, instance_index, at, pool_wait_us, query_us, total_us, worker_id, seq)
			VALUES ($1, $2::uuid, 'app', 0, $3, 5, 700, 900, 1, $4)`, run.ID, tid, epoch, i+1); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.FinishRun(ctx, run.ID, resultsdb.RunCompleted, "+reason"); err != nil {
		t.Fatal(err)
	}
	return run
}

// stderrCapture takes the process's standard error into memory: chisel's forked loggers
// write there, out of reach of a slog handler. It is not passed on: go test merges the
// test binary's standard error into the benchmark result lines, which chisel's lines
// would break.
var stderrCapture struct {
	buf testlog.Buffer
	w   *os.File
}

func captureStderr() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	os.Stderr, stderrCapture.w = w, w
	go io.Copy(&stderrCapture.buf, r)
}

// capturedStderr returns what was written to standard error so far.
func capturedStderr(t *testing.T) string {
	t.Helper()
	marker := fmt.Sprintf("-- stderr barrier %d --", time.Now().UnixNano())
	fmt.Fprintln(stderrCapture.w, marker)
	for range 1000 {
		if s := stderrCapture.buf.String(); strings.Contains(s, marker) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("standard error capture is stuck")
	return ""
}
