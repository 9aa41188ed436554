package command

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// setStepMetrics replaces the stored figures of every step of run with fixed ones (1000
// req/s) and the given p99 (µs), so that comparisons of two real runs are deterministic.
func setStepMetrics(t *testing.T, dsn, run string, p99 int64) {
	t.Helper()
	store, err := resultsdb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Pool().Exec(context.Background(), `DELETE FROM step_metrics WHERE run_id = $1`, run); err != nil {
		t.Fatal(err)
	}
	_, err = store.Pool().Exec(context.Background(), `
INSERT INTO step_metrics (run_id, variant, step, seconds, count, errors, errors_by_class, bytes, throughput, mean_us,
    p50_us, p90_us, p99_us, p999_us, min_us, max_us, instances, instances_seen, users, missed, send_lag_mean_us, send_lag_p99_us, stalled_ms, omitted, app_timed)
SELECT run_id, variant, idx, 1, 1000, 0, '{}', 2000, 1000, $2 / 2, $2 / 2, $2 / 2, $2, $2, 1, $2, instances, instances, users, 0, 0, 0, 0, 0, 0
FROM steps WHERE run_id = $1`, run, p99)
	if err != nil {
		t.Fatal(err)
	}
}

func TestReport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer srv.Close()
	work := t.TempDir()
	specPath := writeSpec(t, strings.Replace(goodSpec, "http://127.0.0.1:18080", srv.URL, 1)+"export:\n  dir: "+filepath.Join(work, "results")+"\n")
	dsn := testpg.DSN(t)
	env := map[string]string{"CFBENCH_DB": dsn}
	state := filepath.Join(work, "state")
	var ids []string
	for range 2 {
		r := run(t, env, "run", "-f", specPath, "--state-dir", state)
		m := regexp.MustCompile(`(?m)^run (\d{8}-\d{6}-[0-9a-f]{4}) completed;`).FindStringSubmatch(r.stdout)
		if r.code != ExitOK || m == nil {
			t.Fatalf("run: %+v", r)
		}
		ids = append(ids, m[1])
	}
	base, cur := ids[0], ids[1]
	setStepMetrics(t, dsn, base, 1000)
	setStepMetrics(t, dsn, cur, 1300)

	r := run(t, env, "report", cur, "--format", "json", "--state-dir", state)
	var rep struct {
		Schema string `json:"schema"`
		Runs   []struct {
			ID       string `json:"id"`
			Variants []struct {
				Name  string `json:"name"`
				Steps []struct {
					Step  int   `json:"step"`
					P99US int64 `json:"p99_us"`
				} `json:"steps"`
			} `json:"variants"`
		} `json:"runs"`
	}
	if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Schema != "cf-benchmark/report" ||
		len(rep.Runs) != 1 || rep.Runs[0].ID != cur || len(rep.Runs[0].Variants) != 1 || len(rep.Runs[0].Variants[0].Steps) != 2 ||
		rep.Runs[0].Variants[0].Steps[1].Step != 2 || rep.Runs[0].Variants[0].Steps[1].P99US != 1300 {
		t.Fatalf("report --format json: %+v\n%+v", r, rep)
	}

	// Without a RUN_ID: the newest run recorded in the state dir.
	r = run(t, env, "report", "--state-dir", state)
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "run "+cur+"  cmd-test") || !strings.Contains(r.stdout, "the spec has no slo block") {
		t.Fatalf("report: %+v", r)
	}

	// p99 1.3 ms against 1.0 ms: +30%, beyond +20%.
	out := filepath.Join(work, "report.html")
	r = run(t, env, "report", cur, "--baseline", base, "--fail-on", "p99=+20%", "--format", "html", "-o", out, "--state-dir", state)
	if r.code != ExitThresholds || !strings.Contains(r.stderr, "threshold p99=+20% failed: p99 +30.0% in run "+cur) {
		t.Fatalf("report --fail-on p99=+20%%: %+v", r)
	}
	if html, err := os.ReadFile(out); err != nil || !strings.HasPrefix(string(html), "<!DOCTYPE html>") || !strings.Contains(string(html), base) {
		t.Fatalf("the HTML report: %v, %d bytes", err, len(html))
	}
	r = run(t, env, "report", cur, "--baseline", base, "--fail-on", "p99=+50%,throughput=-1%", "--state-dir", state)
	if r.code != ExitOK || !strings.Contains(r.stdout, "ok   p99=+50%: p99 +30.0%") {
		t.Fatalf("report --fail-on p99=+50%%: %+v", r)
	}

	for _, args := range [][]string{
		{"report", cur, "--format", "pdf"},
		{"report", cur, "--baseline", base, "--fail-on", "p99=20%"},
		{"report", cur, "--baseline", base, "--fail-on", "latency=+20%"},
		{"report", cur, "--fail-on", "p99=+20%"},
		{"report", "42"},
		{"report", cur, "--baseline", "yesterday"},
	} {
		if r := run(t, env, append(args, "--state-dir", state)...); r.code != ExitUsage || !strings.HasPrefix(r.stderr, "error: ") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := run(t, env, "report", "20200101-000000-dead", "--state-dir", state); r.code != ExitFailure || !strings.Contains(r.stderr, "run not found") {
		t.Errorf("report of a run that does not exist: %+v", r)
	}
}
