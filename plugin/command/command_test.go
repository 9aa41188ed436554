package command

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestMain(m *testing.M) { testpg.Main(m) }

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Now: time.Now}, args)
	return result{code, out.String(), errb.String()}
}

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "benchmark.yml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const goodSpec = `version: 1
name: cmd-test
variants:
  - name: stub
    url: http://127.0.0.1:18080
workload:
  model: closed
  users: 2
  requests:
    - name: r
      path: /
ramp:
  max: 2
  hold: 1s
  warmup: 200ms
`

func TestValidate(t *testing.T) {
	good := writeSpec(t, goodSpec)
	r := run(t, nil, "validate", "-f", good)
	if r.code != ExitOK || r.stdout != good+": valid: 1 variant(s), 2 step(s) each (generator instances 1 to 2), about 2s of load\n"+
		"plan: 1 variant(s) × 2 level(s), at least 2s under load; levels: generator instances 1 to 2\n" {
		t.Fatalf("validate good: %+v", r)
	}

	bad := writeSpec(t, strings.Replace(strings.Replace(goodSpec, "hold: 1s", "hold: soon", 1), "users: 2", "users: many", 1))
	r = run(t, nil, "validate", "-f", bad)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != ExitUsage || len(lines) != 3 || r.stdout != "" {
		t.Fatalf("validate bad: code %d, stderr:\n%s", r.code, r.stderr)
	}
	for i, want := range []string{bad + ":8:3: workload.users: ", bad + ":14:3: ramp.hold: ", "2 problem(s) in the spec"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want prefix %q", i+1, lines[i], want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "error: give the spec with -f FILE\nUsage: cf-benchmark validate -f FILE [--landscape FILE] [--bin-dir DIR] [--cf-home DIR]\n"},
		{[]string{"export"}, "error: give exactly one RUN_ID\n"},
		{[]string{"export", "42"}, "error: \"42\" is not a run id (they look like 20261122-130501-3f9a)\n"},
		{[]string{"frobnicate"}, "error: unknown command \"frobnicate\"\n"},
		{[]string{"run", "--nope"}, "flag provided but not defined: -nope\n"},
		{[]string{"run", "-f", "/does/not/exist.yml"}, "error: read spec: open /does/not/exist.yml: no such file or directory\n"},
		{[]string{"run", "-f", "x.yml", "--dashboard", "a:b:c"}, "error: --dashboard: dashboard address \"a:b:c\": want HOST:PORT, :PORT or PORT\n"},
		{[]string{"run", "-f", "x.yml", "--dashboard=127.0.0.1:p9x"}, "error: --dashboard: dashboard address \"127.0.0.1:p9x\": bad port \"p9x\"\n"},
		{[]string{"status", "20261122-130501-3f9a", "--dashboard", "somewhere"}, "error: --dashboard: dashboard address \"somewhere\": want HOST:PORT, :PORT or PORT\n"},
		{[]string{"run", "-f", "x.yml", "--metrics", "statsd"}, "error: --metrics: \"statsd\": want prometheus[:ADDR] or otlp=URL\n"},
		{[]string{"run", "-f", "x.yml", "--metrics=prometheus:a:b:c"}, "error: --metrics: prometheus address \"a:b:c\": want HOST:PORT, :PORT or PORT\n"},
		{[]string{"run", "-f", "x.yml", "--metrics", "otlp=localhost:4318"}, "error: --metrics: otlp URL \"localhost:4318\": want http://HOST:PORT[/PATH] or https://…\n"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := run(t, nil, c.args...)
			if r.code != ExitUsage || !strings.HasPrefix(r.stderr, c.want) {
				t.Fatalf("code %d stderr %q, want %d and prefix %q", r.code, r.stderr, ExitUsage, c.want)
			}
		})
	}
}

func TestVersionFlagPrintsTheBuildsVersion(t *testing.T) {
	for _, flag := range []string{"--version", "-version"} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Version: "v1.2.3-4-gabcdef0-dirty"}, []string{flag})
		if code != ExitOK || out.String() != "cf-benchmark v1.2.3-4-gabcdef0-dirty\n" || errb.Len() != 0 {
			t.Errorf("%s: code %d, stdout %q, stderr %q", flag, code, out.String(), errb.String())
		}
	}
}

func TestHelpHasAnExampleForEveryCommand(t *testing.T) {
	for _, c := range Commands {
		r := run(t, nil, "help", c.Name)
		if r.code != ExitOK || !strings.Contains(r.stderr, "Example:\n  cf-benchmark "+c.ExampleArgs+"\n") {
			t.Fatalf("help %s: %+v", c.Name, r)
		}
	}
}

func TestRunThenExport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer srv.Close()
	work := t.TempDir()
	// export.dir is relative to the spec's folder, not to the working directory.
	specPath := filepath.Join(work, "specs", "benchmark.yml")
	if err := os.MkdirAll(filepath.Dir(specPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(specPath, []byte(strings.Replace(goodSpec, "http://127.0.0.1:18080", srv.URL, 1)+"export:\n  dir: ../results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CFBENCH_DB": testpg.DSN(t)}

	state := filepath.Join(work, "state")
	// --dashboard ADDR: the address as the next argument.
	r := run(t, env, "run", "-f", specPath, "--state-dir", state, "--dashboard", "127.0.0.1:0")
	if r.code != ExitOK {
		t.Fatalf("run: %+v", r)
	}
	if !regexp.MustCompile(`(?m)^dashboard: http://127\.0\.0\.1:[1-9]\d*/ `).MatchString(r.stdout) {
		t.Errorf("run --dashboard does not say where the page is:\n%s", r.stdout)
	}
	m := regexp.MustCompile(`(?m)^run (\d{8}-\d{6}-[0-9a-f]{4}) completed;`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "variant  step  instances") {
		t.Fatalf("run output lacks the final line or the summary table:\n%s", r.stdout)
	}
	runID := m[1]
	exported := filepath.Join(work, "results", runID)
	if !strings.Contains(r.stdout, "\nexport to "+exported+"\n") || !strings.Contains(r.stdout, "exported run "+runID+" to "+exported+" (") {
		t.Errorf("run does not say where its export goes (%s) at its start and its end:\n%s", exported, r.stdout)
	}
	for _, f := range []string{"samples.csv", "steps.csv", "workers.csv", "runs.csv", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(work, "results", runID, f)); err != nil {
			t.Errorf("run did not export %s: %v", f, err)
		}
	}

	// status finds the newest run from the record the run left in the state dir.
	r = run(t, env, "status", "--state-dir", state)
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "run "+runID+" (") || !strings.Contains(r.stdout, ": completed\n") ||
		!strings.Contains(r.stdout, "Try: cf-benchmark export "+runID) {
		t.Fatalf("status: %+v", r)
	}
	if r := run(t, env, "status", runID, "--dashboard", "--state-dir", state); r.code != ExitOK || !strings.Contains(r.stdout, "nothing live to show") {
		t.Fatalf("status --dashboard of a finished run: %+v", r)
	}
	if r := run(t, nil, "status", "--state-dir", state); r.code != ExitUsage || !strings.Contains(r.stderr, "give it again") {
		t.Fatalf("status without the database the run was given: %+v", r)
	}

	out := filepath.Join(work, "again")
	r = run(t, env, "export", runID, "--dir", out, "--tables", "samples", "--state-dir", state)
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "exported run "+runID+" to "+out+" (rows: runs 1, samples ") {
		t.Fatalf("export: %+v", r)
	}
	a, _ := os.ReadFile(filepath.Join(work, "results", runID, "samples.csv"))
	b, _ := os.ReadFile(filepath.Join(out, "samples.csv"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("re-export differs from the export at the end of the run (%d vs %d bytes)", len(a), len(b))
	}
}

func TestRunJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer srv.Close()
	work := t.TempDir()
	specPath := writeSpec(t, strings.Replace(goodSpec, "http://127.0.0.1:18080", srv.URL, 1)+"export:\n  dir: "+filepath.Join(work, "results")+"\n")
	r := run(t, map[string]string{"CFBENCH_DB": testpg.DSN(t)}, "run", "-f", specPath, "--json", "--dashboard", "--state-dir", filepath.Join(work, "state"))
	if r.code != ExitOK {
		t.Fatalf("run --json: %+v", r)
	}
	events := map[string]int{}
	dashboard := ""
	for i, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, line)
		}
		name, _ := ev["event"].(string)
		events[name]++
		if name == "started" {
			dashboard, _ = ev["dashboard"].(string)
		}
		if name == "step" {
			if _, ok := ev["p99_ms"].(float64); !ok || ev["variant"] == nil {
				t.Errorf("step event without figures: %v", ev)
			}
		}
	}
	sp, err := spec.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	steps := len(sp.Ramp.Steps()) * len(sp.Variants)
	if events["started"] != 1 || events["step"] != steps || events["summary"] != 1 || events["export"] != 1 {
		t.Fatalf("events %v, want 1 started, %d step, 1 summary, 1 export", events, steps)
	}
	// The dashboard was on 127.0.0.1, and stopped with the run.
	if !regexp.MustCompile(`^http://127\.0\.0\.1:[1-9]\d*/$`).MatchString(dashboard) {
		t.Fatalf("started event: dashboard %q, want the page's URL on 127.0.0.1", dashboard)
	}
	if resp, err := testhttp.Client.Get(dashboard); err == nil {
		resp.Body.Close()
		t.Errorf("the dashboard still answers after the run: %s", resp.Status)
	}
}
