package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/elastic"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation/logship"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testos"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// A run of 4,000 requests: one generator instance, 4 steps of 5 s at 200 req/s, and
// 200 documents of another client. Four pages and a bit of 1,000 documents, so a pull
// is interrupted after three and a quota of a quarter ends on a step boundary. What is
// proved here is the join and the coverage, not volume: the source's own suite
// (collectors/routerlogs/elastic) pulls a larger data set in many more ways, and the
// source's default page size (5,000) is its own tests'.
const (
	logRequests  = 4_000
	logForeign   = 200
	logPageSize  = 1_000
	logSteps     = 4
	logPerSecond = 200
	logTag       = 0x5eed1e55
	logAppGUID   = "5e0b8f5e-0000-4000-8000-00000000abcd"
)

var logEpoch = time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)

// logRun stores the run in a fresh database: its samples, and the trace tag and window
// the router log documents were made for.
func logRun(t *testing.T) (*resultsdb.Store, *resultsdb.Run) {
	t.Helper()
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	run, err := store.CreateRun(ctx, "logs", "logs.yml", "version: 1", logEpoch)
	if err != nil {
		t.Fatal(err)
	}
	ended := logEpoch.Add(logRequests / logPerSecond * time.Second)
	if _, err := store.Pool().Exec(ctx, `UPDATE runs SET trace_tag = $2, started_at = $3, ended_at = $4, status = 'completed' WHERE id = $1`,
		run.ID, logTag, logEpoch, ended); err != nil {
		t.Fatal(err)
	}
	if run, err = store.GetRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "stub", GeneratorApp: "gen", AppName: "stub",
		AppGUID: logAppGUID, TargetURL: "http://stub.apps.localhost", Workload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	worker, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: "stub", AppName: "gen"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.NewSampleWriter(worker, resultsdb.WriterOptions{MaxBuffered: logRequests})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	for i := range logRequests {
		w.Add(sample.Sample{Seq: uint32(i + 1), IntendedUS: int64(i) * 1e6 / logPerSecond, LatencyUS: 2000, Status: 200,
			Step: uint8(i * logSteps / logRequests)})
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if worker != 1 {
		t.Fatalf("worker id %d: the documents are made for worker 1 of a fresh database", worker)
	}
	return store, run
}

// loadRouterLogs indexes one router log document per request of logRun, shaped as CF's
// Logstash pipeline shapes them, plus logForeign of another client (no trace id of the
// run).
func loadRouterLogs(t *testing.T, baseURL, index string) {
	t.Helper()
	var body bytes.Buffer
	flush := func() {
		if body.Len() == 0 {
			return
		}
		resp, err := testhttp.Client.Post(baseURL+"/_bulk?filter_path=errors", "application/x-ndjson", &body)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(b.String(), `"errors":false`) {
			t.Fatalf("bulk: %s %s", resp.Status, b.String())
		}
		body.Reset()
	}
	app := logship.AppInfo{Name: "stub", SpaceName: "apps", OrgName: "cfbench"}
	for i := range logRequests + logForeign {
		id := sample.NewTraceID(logTag, 1, uint64(i+1))
		if i >= logRequests {
			id = sample.NewTraceID(logTag+1, 1, uint64(i+1))
		}
		at := logEpoch.Add(time.Duration(i) * time.Second / logPerSecond)
		line := fmt.Sprintf(`stub.apps.localhost - [%s] "GET /hello HTTP/1.1" 200 0 6 "-" "cfbench" "127.0.0.1:5000" "127.0.0.1:6000" `+
			`x_forwarded_for:"127.0.0.1" x_forwarded_proto:"http" vcap_request_id:"%s" response_time:0.002000 gorouter_time:0.000100 `+
			`app_id:"%s" app_index:"0" instance_id:"i-0" x_cf_routererror:"-" x_b3_traceid:"%s" x_b3_spanid:"%s" x_b3_parentspanid:"-" b3:"%s-%s"`,
			at.Format("2006-01-02T15:04:05.000000000Z"), id.UUID(), logAppGUID, id, id.SpanID(), id, id.SpanID())
		doc, _, err := logship.Document(line, app)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&body, "{\"index\":{\"_index\":%q}}\n%s\n", index, doc)
		if (i+1)%5_000 == 0 { // about 9 MB: under the 10% of a 256 MB heap a bulk may take
			flush()
		}
	}
	flush()
	resp, err := testhttp.Client.Post(baseURL+"/"+index+"/_refresh", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// coverageTotal sums the steps' coverage.
func coverageTotal(t *testing.T, store *resultsdb.Store, run *resultsdb.Run) (sent, found int64, verdicts []string, budget bool) {
	t.Helper()
	cov, err := store.RouterCoverage(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cov) != logSteps {
		t.Fatalf("coverage of %d steps, want %d", len(cov), logSteps)
	}
	p, _ := store.LogPull(context.Background(), run.ID, "es")
	for _, c := range cov {
		sent, found = sent+c.Sent, found+c.Found
		verdicts = append(verdicts, report.CoverageVerdict(c, p.BudgetExhausted))
	}
	return sent, found, verdicts, p.BudgetExhausted
}

// errStop interrupts a pull from inside.
var errStop = errors.New("stop")

// stoppingSource fails the pull after n batches, as a lost connection or Ctrl-C would.
type stoppingSource struct {
	routerlogs.Source
	n int
}

func (s stoppingSource) Pull(ctx context.Context, q routerlogs.Query, from routerlogs.Cursor, b routerlogs.Budget, emit func(routerlogs.Batch) error) (routerlogs.Result, error) {
	seen := 0
	return s.Source.Pull(ctx, q, from, b, func(batch routerlogs.Batch) error {
		if seen++; seen > s.n {
			return errStop
		}
		return emit(batch)
	})
}

func TestCollectRouterLogsJoinsEveryRequestAndReportsCoverage(t *testing.T) {
	// Beside the package's other parallel tests: alone, its node starts, loads and
	// pulls held up every test after it.
	t.Parallel()
	for _, backend := range []struct {
		name   string
		url    func(testing.TB) string
		resume bool
	}{{"elasticsearch 8", testes.URL, true}, {"opensearch 2", testos.URL, false}} {
		t.Run(backend.name, func(t *testing.T) {
			// The two nodes start and load at once: their start-ups wait on the disk and
			// on readiness polls as much as on the CPU.
			t.Parallel()
			base := backend.url(t)
			index := testes.Index("logs-app-cfbench")
			loadRouterLogs(t, base, index)
			src, err := elastic.New(elastic.Config{URLs: []string{base}, Index: index, PageSize: logPageSize})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()

			t.Run("complete", func(t *testing.T) {
				store, run := logRun(t)
				lc, err := CollectRouterLogs(ctx, store, run, "es", src, routerlogs.Budget{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				// Every request of the run (and the other client's, the window and app
				// match) read once; the run's stored once.
				if p := lc.Pull; p.Retrieved != logRequests+logForeign || p.Stored != logRequests || p.Foreign != logForeign || p.BudgetExhausted {
					t.Fatalf("pull %+v, want %d read, %d stored, %d foreign", p, logRequests+logForeign, logRequests, logForeign)
				}
				sent, found, verdicts, _ := coverageTotal(t, store, run)
				if sent != logRequests || found != logRequests || verdicts[0] != "complete" {
					t.Fatalf("coverage %d of %d (%v), want all", found, sent, verdicts)
				}
			})

			t.Run("a quota of a quarter of the documents covers 25%", func(t *testing.T) {
				store, run := logRun(t)
				const quota = logRequests / 4
				lc, err := CollectRouterLogs(ctx, store, run, "es", src, routerlogs.Budget{MaxDocuments: quota}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if p := lc.Pull; p.Retrieved != quota || p.Stored != quota || !p.BudgetExhausted {
					t.Fatalf("pull %+v, want exactly %d read and stored, budget spent", p, quota)
				}
				sent, found, verdicts, _ := coverageTotal(t, store, run)
				if sent != logRequests || float64(found)/float64(sent) != 0.25 {
					t.Fatalf("coverage %d of %d, want 25%%", found, sent)
				}
				// The documents come in time order: the budget covers the first step.
				if verdicts[0] != "complete" || !strings.HasPrefix(verdicts[1], "none: the document budget was spent") {
					t.Fatalf("verdicts %q", verdicts)
				}
				// Pulling again spends nothing more: the budget counts over attempts.
				lc, err = CollectRouterLogs(ctx, store, run, "es", src, routerlogs.Budget{MaxDocuments: quota}, nil)
				if err != nil || lc.Pull.Retrieved != quota || lc.Result.Requests != 0 {
					t.Fatalf("second pull: %+v %+v, %v", lc.Pull, lc.Result, err)
				}
			})

			if !backend.resume {
				return // the same code on both; the source's own suite resumes on both
			}
			t.Run("an interrupted pull resumes without duplicates", func(t *testing.T) {
				store, run := logRun(t)
				_, err := CollectRouterLogs(ctx, store, run, "es", stoppingSource{src, 3}, routerlogs.Budget{}, nil)
				if !errors.Is(err, errStop) {
					t.Fatalf("interrupted pull: %v", err)
				}
				lc, err := CollectRouterLogs(ctx, store, run, "es", src, routerlogs.Budget{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if p := lc.Pull; !lc.Resumed || p.Retrieved != logRequests+logForeign || p.Stored != logRequests {
					t.Fatalf("resumed pull %+v (resumed %t), want %d read in all, %d stored", p, lc.Resumed, logRequests+logForeign, logRequests)
				}
				if sent, found, _, _ := coverageTotal(t, store, run); found != sent {
					t.Fatalf("coverage %d of %d after resuming", found, sent)
				}
			})
		})
	}
}
