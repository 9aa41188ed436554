package command

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/metrics"
	"github.com/cf-benchmark/cf-benchmark/report/metrics/metricstest"
)

// TestRunPushesItsReportsFiguresOverOTLP: run --metrics otlp=URL says where it pushes
// with the run's first lines, and the figures the receiver on 127.0.0.1 has once the
// run ended are the report's: each step's requests, errors, rate (requests over the
// step's seconds) and p99.
func TestRunPushesItsReportsFiguresOverOTLP(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer target.Close()
	recv := metricstest.NewReceiver(t)
	work := t.TempDir()
	specPath := writeSpec(t, strings.Replace(goodSpec, "http://127.0.0.1:18080", target.URL, 1)+"export:\n  dir: "+filepath.Join(work, "results")+"\n")
	env := map[string]string{"CFBENCH_DB": testpg.DSN(t)}
	state := filepath.Join(work, "state")
	r := run(t, env, "run", "-f", specPath, "--metrics", "otlp="+recv.URL, "--state-dir", state)
	if r.code != ExitOK {
		t.Fatalf("run: %+v", r)
	}
	if !regexp.MustCompile(`(?m)^metrics: pushed to ` + regexp.QuoteMeta(recv.URL+"/v1/metrics") + ` \(OTLP;`).MatchString(r.stdout) {
		t.Errorf("run --metrics otlp= does not say where it pushes:\n%s", r.stdout)
	}
	runID := regexp.MustCompile(`(?m)^run (\S+) completed;`).FindStringSubmatch(r.stdout)
	if runID == nil {
		t.Fatalf("no run id in:\n%s", r.stdout)
	}
	r = run(t, env, "report", runID[1], "--format", "json", "--state-dir", state)
	var rep report.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != ExitOK || err != nil {
		t.Fatalf("report: %v %+v", err, r)
	}
	pushes := recv.Pushes()
	if len(pushes) == 0 {
		t.Fatal("the receiver got nothing")
	}
	got := pushes[len(pushes)-1].Figures
	steps := 0
	for _, v := range rep.Runs[0].Variants {
		for _, st := range v.Steps {
			steps++
			key := func(m *metrics.Metric) metricstest.Key {
				return metricstest.Key{Metric: m.OTelName, Run: runID[1], Variant: v.Name, Step: strconv.Itoa(st.Step)}
			}
			requests, seconds, errs, latency := got[key(metrics.Requests)], got[key(metrics.StepTime)], got[key(metrics.Errors)], got[key(metrics.Duration)]
			if st.Count == 0 || requests.Value != float64(st.Count) || errs.Value != float64(st.Errors) || latency.Count != uint64(st.Count) {
				t.Errorf("%s step %d: pushed %v requests, %v errors, %v latencies; the report has %d, %d", v.Name, st.Step, requests.Value, errs.Value, latency.Count, st.Count, st.Errors)
			}
			if rate := requests.Value / seconds.Value; math.Abs(rate-st.Throughput) > 1e-6*st.Throughput {
				t.Errorf("%s step %d: pushed rate %v req/s, the report's %v", v.Name, st.Step, rate, st.Throughput)
			}
			if p99 := latency.Quantiles[0.99]; p99 != float64(st.P99US)/1e6 {
				t.Errorf("%s step %d: pushed p99 %v s, the report's %d µs", v.Name, st.Step, p99, st.P99US)
			}
		}
	}
	if steps != 2 {
		t.Errorf("the report has %d steps, want the spec's 2", steps)
	}
}
