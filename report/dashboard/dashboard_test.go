package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const liveSpec = `version: 1
name: live
variants:
  - {name: v, url: "http://127.0.0.1:18080"}
workload:
  model: closed
  users: 2
  requests: [{name: list, path: /}]
ramp: {start: 1, step: 1, max: 3, hold: 10s, warmup: 2s}
`

// liveRun is a run under way: step 1 ended with its figures stored, step 2 running
// (planned to end an hour from now) with samples written so far by add.
type liveRun struct {
	t     *testing.T
	store *resultsdb.Store
	run   *resultsdb.Run
	w     *resultsdb.SampleWriter
	seq   uint32
}

func newLiveRun(t *testing.T) *liveRun {
	t.Helper()
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	epoch := time.Now().Add(-time.Minute).Truncate(time.Second)
	run, err := store.CreateRun(ctx, "live", "live.yml", liveSpec, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "live-gen-v", TargetURL: "http://127.0.0.1:18080",
		Workload: []byte(`{"model": "closed", "users": 2}`)}); err != nil {
		t.Fatal(err)
	}
	worker, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "live-gen-v", Host: "10.0.1.1"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.NewSampleWriter(worker, resultsdb.WriterOptions{BatchSize: 1 << 16, MaxBuffered: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	r := &liveRun{t: t, store: store, run: run, w: w}
	r.step(0, epoch, epoch.Add(10*time.Second))
	r.add(0, 0, 10)
	if err := store.EndStep(ctx, run.ID, "v", 0, epoch.Add(10*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ComputeStepMetrics(ctx, run.ID, "v", 0, nil); err != nil {
		t.Fatal(err)
	}
	r.step(1, epoch.Add(10*time.Second), epoch.Add(time.Hour))
	r.add(1, 10, 20)
	return r
}

func (r *liveRun) step(idx int, start, end time.Time) {
	r.t.Helper()
	if err := r.store.StartStep(context.Background(), resultsdb.Step{RunID: r.run.ID, Variant: "v", Index: idx, Instances: idx + 1, Users: 2,
		Started: start, WarmupUntil: start.Add(2 * time.Second), Ends: end}); err != nil {
		r.t.Fatal(err)
	}
}

// add stores 100 samples per second of step idx from second from to second to of the
// run, the first two seconds of a step being its warm-up.
func (r *liveRun) add(idx int, from, to int) {
	r.t.Helper()
	for sec := from; sec < to; sec++ {
		for j := range 100 {
			r.seq++
			s := sample.Sample{Seq: r.seq, IntendedUS: int64(sec)*1e6 + int64(j)*10_000 + 1, LatencyUS: int32(1000 + 10*j + sec), Bytes: 100,
				Status: 200, Step: uint8(idx)}
			if sec-10*idx < 2 {
				s.Flags = sample.FlagWarmup
			}
			if j == 0 {
				s.Status = 503
			}
			r.w.Add(s)
		}
	}
	if err := r.w.Flush(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// stream reads server-sent events.
type stream struct {
	t    *testing.T
	body io.ReadCloser
	r    *bufio.Reader
}

func subscribe(t *testing.T, url string) *stream {
	t.Helper()
	resp, err := testhttp.Client.Get(url + "events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET events: %s, %s", resp.Status, ct)
	}
	return &stream{t: t, body: resp.Body, r: bufio.NewReader(resp.Body)}
}

// next returns the next event's name and data; io.EOF when the stream ended.
func (s *stream) next() (string, []byte, error) {
	var name string
	var data []byte
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", nil, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data, nil
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = []byte(strings.TrimPrefix(line, "data: "))
		}
	}
}

// report waits for the next report event for which ok holds, skipping others, and
// fails on a stream that ends or errors first.
func (s *stream) report(ok func(*report.Report) bool) *report.Report {
	s.t.Helper()
	for {
		name, data, err := s.next()
		if err != nil {
			s.t.Fatalf("the stream ended before the report wanted: %v", err)
		}
		switch name {
		case "problem":
			s.t.Fatalf("problem: %s", data)
		case "report":
			var u Update
			if err := json.Unmarshal(data, &u); err != nil {
				s.t.Fatal(err)
			}
			if u.Report == nil || u.ReadS <= 0 || u.EveryS < u.ReadS/MaxDBShare*0.999 || u.EveryS < 0.05 {
				s.t.Fatalf("report event: read in %v s, every %v s, report %v", u.ReadS, u.EveryS, u.Report != nil)
			}
			if ok(u.Report) {
				return u.Report
			}
		}
	}
}

func startServer(t *testing.T) *Server {
	t.Helper()
	s := New(Config{Every: 50 * time.Millisecond})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLiveFiguresAreTheReportsAndFinal: the page's stream carries the report so far,
// whose running step has the figures StepSummaries computes for it and whose series
// has its seconds; it grows as samples and findings arrive; Finish sends the final
// report and ends the stream.
func TestLiveFiguresAreTheReportsAndFinal(t *testing.T) {
	ctx := context.Background()
	r := newLiveRun(t)
	s := startServer(t)
	s.Watch(report.NewLiveRun(r.store, r.run.ID))
	es := subscribe(t, s.URL())

	first := es.report(func(*report.Report) bool { return true })
	v := first.Runs[0].Variants[0]
	if len(v.Steps) != 2 || v.Steps[0].Live || !v.Steps[1].Live {
		t.Fatalf("steps %+v: want step 1 stored and step 2 live", v.Steps)
	}
	sums, err := r.store.StepSummaries(ctx, r.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range sums {
		got := v.Steps[i]
		if got.Count != want.Count || got.Errors != want.Errors || got.P99US != want.P99.Microseconds() || got.P50US != want.P50.Microseconds() {
			t.Errorf("step %d: count %d errors %d p50 %d p99 %d µs, StepSummaries says %d %d %s %s", i+1, got.Count, got.Errors, got.P50US, got.P99US,
				want.Count, want.Errors, want.P50, want.P99)
		}
	}
	if v.Steps[1].Count != 800 || v.Steps[1].Errors != 8 {
		t.Errorf("running step: %d requests, %d errors; want 800 and 8 (seconds 12-20, warm-up excluded)", v.Steps[1].Count, v.Steps[1].Errors)
	}
	if n := len(v.Series.T); n != 20 {
		t.Errorf("series: %d points, want 20 (one per second, both steps)", n)
	}
	if len(v.Series.Steps) != 2 || v.Series.Steps[1].EndS != nil {
		t.Errorf("step windows %+v: want 2, the second without an end", v.Series.Steps)
	}

	r.add(1, 20, 25)
	if err := r.store.AddEvent(ctx, resultsdb.Event{RunID: r.run.ID, Variant: "v", Step: 1, Kind: "check", Level: "warn",
		Check: "generator-cpu", Message: "the generators were busy"}); err != nil {
		t.Fatal(err)
	}
	grown := es.report(func(rep *report.Report) bool { return len(rep.Runs[0].Findings) > 0 })
	v = grown.Runs[0].Variants[0]
	if v.Steps[1].Count != 1300 || len(v.Series.T) != 25 {
		t.Errorf("after 5 more seconds: running step %d requests and %d points, want 1300 and 25", v.Steps[1].Count, len(v.Series.T))
	}
	if f := grown.Runs[0].Findings[0]; f.Check != "generator-cpu" || f.Step != 2 {
		t.Errorf("finding %+v", f)
	}

	final, err := report.Build(ctx, r.store, []string{r.run.ID}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Finish(final, nil)
	for {
		name, data, err := es.next()
		if err != nil {
			t.Fatalf("no final event: %v", err)
		}
		if name != "final" {
			continue
		}
		var f struct {
			Report  *report.Report `json:"report"`
			Message string         `json:"message"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		if f.Report == nil || f.Report.Runs[0].ID != r.run.ID || len(f.Report.Runs[0].Variants[0].Steps) != 1 {
			t.Errorf("final event: %s", data)
		}
		break
	}
	if _, _, err := es.next(); err != io.EOF {
		t.Errorf("after the final event: %v, want the end of the stream", err)
	}
}

// TestPage: the page is the report's page with the live script, allowed to reach only
// its own server.
func TestPage(t *testing.T) {
	s := startServer(t)
	resp, err := testhttp.Client.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	page := string(body)
	for _, want := range []string{"connect-src 'self'", "window.cfbRender = function", `new EventSource("events")`, "uPlot"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "https://github.com/leeoniya/uPlot") {
		t.Error("the page names a server")
	}
	if resp, err := testhttp.Client.Get(s.URL() + "nothing"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GET /nothing: %v %v", resp.Status, err)
	}
	// On loopback, a request naming another host (DNS rebinding) is refused;
	// localhost is served.
	for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "localhost": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, s.URL(), nil)
		req.Host = host + ":" + req.URL.Port()
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET / with Host %s: %s, want %d", req.Host, resp.Status, want)
		}
	}
}

// TestCloseEndsStreams: a page listening when the dashboard closes gets a final event
// saying there is no report, and its stream ends.
func TestCloseEndsStreams(t *testing.T) {
	s := startServer(t)
	es := subscribe(t, s.URL())
	if name, _, err := es.next(); err != nil || name != "waiting" {
		t.Fatalf("first event %q, %v; want waiting", name, err)
	}
	go s.Close()
	name, data, err := es.next()
	if err != nil || name != "final" || !strings.Contains(string(data), `"report":null`) {
		t.Fatalf("after Close: %q %s %v", name, data, err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycle(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		return lifecycletest.Subject{Part: New(Config{}), NoFailure: "a failed read of the run is shown on the page and tried again"}
	})
}

// TestLiveIsWhatIsStored: what the live page shows of a running step (its figures and
// its series, computed from its samples) is what the run stores for it when it ends.
func TestLiveIsWhatIsStored(t *testing.T) {
	ctx := context.Background()
	r := newLiveRun(t)
	// The generators' cumulative CPU time every 2 s up to now, at 0.2 cores.
	var cms []resultsdb.ContainerMetric
	for at := -4; at <= 58; at += 2 {
		ns, mem := int64(0.2*float64(at+4)*1e9), int64(64<<20)
		cms = append(cms, resultsdb.ContainerMetric{RunID: r.run.ID, At: r.run.Epoch.Add(time.Duration(at) * time.Second), AppName: "live-gen-v",
			AppGUID: "live-gen-v-guid", ProcessType: "web", State: "RUNNING", CPUTimeNS: &ns, MemBytes: &mem, Source: resultsdb.SourceLogCache})
	}
	if err := r.store.InsertContainerMetrics(ctx, cms); err != nil {
		t.Fatal(err)
	}
	live, err := report.BuildLive(ctx, r.store, r.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The step ends where its samples end, so its window is the one the live read used
	// up to its last sample.
	if err := r.store.EndStep(ctx, r.run.ID, "v", 1, r.run.Epoch.Add(20*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ComputeStepMetrics(ctx, r.run.ID, "v", 1, []resultsdb.AppRole{{Name: "live-gen-v", Role: resultsdb.RoleGenerator}}); err != nil {
		t.Fatal(err)
	}
	stored, err := report.Build(ctx, r.store, []string{r.run.ID}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lv, sv := live.Runs[0].Variants[0], stored.Runs[0].Variants[0]
	ls, ss := lv.Steps[1], sv.Steps[1]
	if !ls.Live || ss.Live || ls.Count != ss.Count || ls.Errors != ss.Errors || ls.MeanUS != ss.MeanUS || ls.P50US != ss.P50US ||
		ls.P99US != ss.P99US || ls.P999US != ss.P999US || ls.MaxUS != ss.MaxUS {
		t.Errorf("running step live %+v, stored %+v", *ls, *ss)
	}
	// The generators' CPU over the window so far (to now) and over the step's window
	// when it ended: the same rate.
	if lg, sg := ls.Generator, ss.Generator; lg == nil || sg == nil || lg.CPUTotalCores == nil || sg.CPUTotalCores == nil ||
		math.Abs(*lg.CPUTotalCores-0.2) > 1e-9 || math.Abs(*sg.CPUTotalCores-0.2) > 1e-9 {
		t.Errorf("generator CPU of the running step %+v, stored %+v; want 0.2 cores both", lg, sg)
	}
	lj, _ := json.Marshal(struct{ T, Thr, P50, P99, E any }{lv.Series.T, lv.Series.Throughput, lv.Series.P50US, lv.Series.P99US, lv.Series.Errors})
	sj, _ := json.Marshal(struct{ T, Thr, P50, P99, E any }{sv.Series.T, sv.Series.Throughput, sv.Series.P50US, sv.Series.P99US, sv.Series.Errors})
	if string(lj) != string(sj) || len(lv.Series.P50US) != len(lv.Series.T) {
		t.Errorf("series live %s\nstored %s", lj, sj)
	}
}

// TestFollow: a dashboard following a run another process runs (cf benchmark-status
// RUN --dashboard) shows it live, and once the run's row says it ended sends its report
// and returns.
func TestFollow(t *testing.T) {
	ctx := context.Background()
	r := newLiveRun(t)
	s := startServer(t)
	followed := make(chan error, 1)
	go func() { followed <- s.Follow(ctx, r.store, r.run.ID) }()
	es := subscribe(t, s.URL())
	if rep := es.report(func(*report.Report) bool { return true }); rep.Runs[0].Status != "running" {
		t.Fatalf("live: run status %s", rep.Runs[0].Status)
	}
	if err := r.store.FinishRun(ctx, r.run.ID, resultsdb.RunCompleted, ""); err != nil {
		t.Fatal(err)
	}
	for {
		name, data, err := es.next()
		if err != nil {
			t.Fatalf("no final event: %v", err)
		}
		if name == "final" {
			if !strings.Contains(string(data), `"status":"completed"`) {
				t.Errorf("final event without the completed run's report: %.300s", data)
			}
			break
		}
	}
	if err := <-followed; err != nil {
		t.Errorf("Follow: %v", err)
	}
}
