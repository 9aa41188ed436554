package report_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/plugin/command"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestRunReportInChromium runs a short benchmark for real (the CLI's run command, its
// generators in process, a target on loopback), then renders that run's report in
// headless Chromium: the figures the engine stores, not a fixture, must draw cleanly.
func TestRunReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not with -short")
	}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Microsecond)
		w.Write([]byte("hi"))
	}))
	defer target.Close()
	dir := t.TempDir()
	spec := filepath.Join(dir, "benchmark.yml")
	if err := os.WriteFile(spec, []byte(`version: 1
name: report-e2e
variants:
  - {name: a, url: "`+target.URL+`"}
  - {name: b, url: "`+target.URL+`"}
workload:
  model: closed
  users: 2
  requests: [{name: r, path: /}]
ramp: {start: 1, step: 1, max: 2, hold: 1s, warmup: 200ms}
slo: {latency: p99, max_latency: 1s, max_error_rate: 0.01}
export: {dir: `+filepath.Join(dir, "results")+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := testpg.DSN(t)
	var out, errb bytes.Buffer
	env := &command.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "CFBENCH_DB" {
			return dsn
		}
		return ""
	}}
	if code := command.Main(context.Background(), env, []string{"run", "-f", spec, "--state-dir", filepath.Join(dir, "state")}); code != command.ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	m := regexp.MustCompile(`(?m)^run (\d{8}-\d{6}-[0-9a-f]{4}) completed;`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("run output lacks its id:\n%s", out.String())
	}
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep, err := report.Build(context.Background(), store, []string{m[1]}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	if len(run.Variants) != 2 || len(run.Variants[0].Steps) != 2 || run.Variants[0].Capacity == nil || run.Variants[0].Series == nil {
		t.Fatalf("the report of the run lacks steps, capacity or series: %+v", run.Variants)
	}
	if c := run.Variants[0].Capacity; c.Status != "not_crossed" || !strings.HasPrefix(c.Text, "≥ ") {
		t.Errorf("a 0.5 ms target under an SLO of p99 ≤ 1 s: capacity %+v, want not crossed", c)
	}
	report.CheckInChromium(t, rep, "run")
}
