//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
	"github.com/cf-benchmark/cf-benchmark/report"
)

// TestPrometheusScrapesARun: a real Prometheus server (Debian's package) scrapes a run
// of examples/stub-on-cf.yml (2 steps of one variant) started with --metrics
// prometheus, every second, and PromQL over its HTTP API finds each step's request
// count and rate (requests over the step's measured seconds) within 1% of the report's,
// and saw each step's counter below its final value, that is, while the step ran.
func TestPrometheusScrapesARun(t *testing.T) {
	testtier.External(t, "the real cf CLI, the local foundation and Prometheus")
	t.Parallel()
	root := moduleRoot(t)
	bins := buildPushed(t, root)
	cf, info, _ := loggedIn(t, root, bins)
	specFile := writeExample(t, root, bins, "stub-on-cf.yml", map[string]string{
		"  max: 3\n  hold: 5s\n": "  max: 2\n  hold: 8s\n", "  users: 4\n": pacedUser, "app: stub-cpu-fast\n": "app: stub-fast\n",
		"  - name: slow\n    manifest: ../manifests/stub.yml\n    app: stub-cpu-slow\n": "",
		"path: ../.cfbench/foundation/access.log":                                       "path: " + info.AccessLog})
	p := startCF(t, cf, "run-benchmark", "-f", specFile, "--metrics", "prometheus")
	target := p.waitFor(t, regexp.MustCompile(`^metrics: http://(127\.0\.0\.1:\d+)/metrics \(Prometheus;`))[1]
	prom := startPrometheus(t, target)
	runID := p.waitFor(t, regexp.MustCompile(`^run (\S+): stub-on-cf, 1 variant\(s\), 2 step\(s\) each`))[1]
	out, code := p.wait(t)
	if code != 0 {
		t.Fatalf("cf run-benchmark: exit %d\n%s", code, out)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(cf.mustRun(t, "benchmark-report", runID, "--format", "json")), &rep); err != nil || len(rep.Runs) != 1 || len(rep.Runs[0].Variants) != 1 {
		t.Fatalf("benchmark-report --format json: %v", err)
	}
	v := rep.Runs[0].Variants[0]
	if len(v.Steps) != 2 {
		t.Fatalf("the report has %d steps, want 2", len(v.Steps))
	}
	for _, st := range v.Steps {
		sel := fmt.Sprintf(`{run=%q,variant=%q,step="%d"}`, runID, v.Name, st.Step)
		count := prom.query(t, "last_over_time(cfbench_requests_total"+sel+"[1h])")
		rate := prom.query(t, "last_over_time(cfbench_requests_total"+sel+"[1h]) / last_over_time(cfbench_step_seconds_total"+sel+"[1h])")
		least := prom.query(t, "min_over_time(cfbench_requests_total"+sel+"[1h])")
		t.Logf("step %d: report %d requests, %.1f req/s; Prometheus %v, %.1f req/s, least %v", st.Step, st.Count, st.Throughput, count, rate, least)
		if st.Count == 0 || math.Abs(count-float64(st.Count)) > 0.01*float64(st.Count) {
			t.Errorf("step %d: Prometheus has %v requests, the report %d", st.Step, count, st.Count)
		}
		if math.Abs(rate-st.Throughput) > 0.01*st.Throughput {
			t.Errorf("step %d: Prometheus has %.2f req/s, the report %.2f", st.Step, rate, st.Throughput)
		}
		if least >= count {
			t.Errorf("step %d: Prometheus never saw fewer than the final %v requests: the step was not published while it ran", st.Step, count)
		}
	}
}

// prometheus is a Prometheus server started by the test.
type prometheus struct{ url string }

// startPrometheus runs Prometheus on 127.0.0.1, scraping target (host:port) every
// second, until the test ends (stopped by its PID).
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("no prometheus on PATH: scripts/install-deps.sh test installs the Debian package")
	}
	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: cfbench\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	})
	p := &prometheus{url: "http://" + addr}
	deadline := time.Now().Add(liveGuard)
	for {
		resp, err := testhttp.Client.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("prometheus exited: %v", cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s within %s", addr, liveGuard)
		}
	}
}

// query evaluates q now with Prometheus's HTTP API and returns its one value.
func (p *prometheus) query(t *testing.T, q string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/query?query="+url.QueryEscape(q), nil)
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("PromQL %s: %v %s %s", q, err, body.Status, body.Error)
	}
	if len(body.Data.Result) != 1 {
		t.Fatalf("PromQL %s: %d series, want 1", q, len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("PromQL %s: value %v", q, body.Data.Result[0].Value)
	}
	return v
}
