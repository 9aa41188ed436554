package command

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/engine"
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
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "Headline\n  ") || !strings.Contains(r.stdout, "\n\nrun "+cur+"  cmd-test") ||
		!strings.Contains(r.stdout, "the spec has no slo block") {
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

	// The same report from the runs' export directories, without any database.
	dirs := map[string]string{cur: filepath.Join(work, "exp", cur), base: filepath.Join(work, "exp", base)}
	for id, dir := range dirs {
		if r := run(t, env, "export", id, "--dir", dir, "--state-dir", state); r.code != ExitOK {
			t.Fatalf("export %s: %+v", id, r)
		}
	}
	noDB := map[string]string{} // no CFBENCH_DB, no cf CLI config
	empty := filepath.Join(work, "empty-state")
	fromDB := run(t, env, "report", cur, "--baseline", base, "--format", "json", "--state-dir", state)
	fromDir := run(t, noDB, "report", dirs[cur], "--baseline", dirs[base], "--format", "json", "--state-dir", empty)
	if fromDB.code != ExitOK || fromDir.code != ExitOK || fromDB.stdout != fromDir.stdout || !strings.Contains(fromDir.stdout, `"p99_us": 1300`) {
		t.Fatalf("report from export directories differs from the database's:\n%+v\n%+v", fromDB, fromDir)
	}
	if r := run(t, noDB, "report", dirs[cur], "--baseline", dirs[base], "--fail-on", "p99=+20%", "--state-dir", empty); r.code != ExitThresholds ||
		!strings.Contains(r.stderr, "threshold p99=+20% failed: p99 +30.0% in run "+cur) {
		t.Fatalf("report of export directories --fail-on p99=+20%%: %+v", r)
	}
	// A run id recorded nowhere here, no database given: not found, without creating
	// a Postgres to look in.
	if r := run(t, noDB, "report", "20200101-000000-dead", "--state-dir", empty); r.code != ExitFailure || !strings.Contains(r.stderr, "run not found") {
		t.Errorf("report of an unknown run without a database: %+v", r)
	}
	if r := run(t, noDB, "report", filepath.Join(work, "exp"), "--state-dir", empty); r.code != ExitUsage || !strings.Contains(r.stderr, "nor an export directory") {
		t.Errorf("report of a directory that is no export: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(empty, "pg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reports without a database created one in %s: %v", empty, err)
	}

	// status of a run whose database cannot be reached (recorded on Cloud Foundry, no cf
	// CLI config): where its results are and how to report them.
	cfState := filepath.Join(work, "cf-state")
	if err := engine.SaveRunRecord(cfState, engine.RunRecord{ID: cur, Name: "cmd-test", Spec: specPath, Started: time.Now(), DB: engine.StoreOnCF,
		Access: &engine.Access{API: "http://127.0.0.1:1", TunnelApp: "gone"}}); err != nil {
		t.Fatal(err)
	}
	exported := filepath.Join(work, "results", cur)
	if r := run(t, noDB, "status", "--state-dir", cfState); r.code != ExitOK || !strings.Contains(r.stdout, "its results are in "+exported) ||
		!strings.Contains(r.stdout, "Try: cf-benchmark report "+exported) {
		t.Errorf("status without its database: %+v", r)
	}
	if r := run(t, noDB, "status", "20200101-000000-dead", "--state-dir", cfState); r.code == ExitOK {
		t.Errorf("status of an unknown run without a database nor an export: %+v", r)
	}
}
