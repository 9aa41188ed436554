package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/file"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// stages records a session's progress and the stages it reports done.
type stages struct {
	recorder
	done []Stage
}

func (s *stages) Done(st Stage, _ *Outcome) { s.done = append(s.done, st) }

// sessionSpec is a one-step run against a target answering "ok", its router logs read
// from an empty file, exported into a fresh directory (exportDir replaces it when set).
func sessionSpec(t *testing.T, extra, exportDir string) (*spec.Spec, string, *resultsdb.Store) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if exportDir == "" {
		exportDir = filepath.Join(dir, "results")
	}
	text := "version: 1\nname: session-test\nvariants:\n  - name: a\n    url: " + srv.URL + "\n" +
		"workload:\n  model: closed\n  users: 1\n  requests:\n    - name: r\n      path: /\n" + extra +
		"ramp: {max: 1, hold: 1s, warmup: 100ms}\n" +
		"collectors:\n  router_logs: {source: file, path: " + logPath + ", delay: 10ms}\n" +
		"export:\n  dir: " + exportDir + "\n"
	sp, err := spec.Parse("session.yml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return sp, text, store
}

func fileLogs(rl *spec.RouterLogs, apps map[string]string) (routerlogs.Source, string, error) {
	src, err := file.New(rl.Path, apps)
	return src, "file:" + rl.Path, err
}

func TestRunSessionRunsEveryStageInOrder(t *testing.T) {
	sp, text, store := sessionSpec(t, "", "")
	rep := &stages{}
	o, err := RunSession(context.Background(), sp, text, SessionConfig{Store: store, StoreName: "the test db", LogSource: fileLogs,
		Reporter: rep, PollEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Stage{StageRun, StageRouterLogs, StageExport, StageReport}; !slices.Equal(rep.done, want) {
		t.Fatalf("stages done %v, want %v", rep.done, want)
	}
	// The plan first, then the results database, then the steps.
	if rep.started != 1 || len(rep.notes) < 2 || !strings.HasPrefix(rep.notes[0], "plan: ") || !strings.HasPrefix(rep.notes[1], "results db: the test db, ") {
		t.Fatalf("started %d, notes %q: want the run started once after the plan and the results db notes", rep.started, rep.notes)
	}
	if o.Run == nil || o.Run.Status != resultsdb.RunCompleted || len(o.Summaries) != 1 || o.Summaries[0].Count == 0 {
		t.Fatalf("outcome run %+v, summaries %+v: want a completed run with one step of requests", o.Run, o.Summaries)
	}
	if o.RouterLogs == nil || o.RouterLogsErr != nil || o.RouterLogs.Source != "file:"+sp.Collectors.RouterLogs.Path || len(o.RouterLogs.Coverage) != 1 {
		t.Fatalf("router logs %+v, %v: want a pull of the file with a coverage row for the step", o.RouterLogs, o.RouterLogsErr)
	}
	if o.Export == nil || o.Export.RunID != o.Run.ID || o.ExportDir != filepath.Join(sp.Export.Dir, o.Run.ID) {
		t.Fatalf("export %+v into %s", o.Export, o.ExportDir)
	}
	if _, err := os.Stat(filepath.Join(o.ExportDir, "samples.csv")); err != nil {
		t.Fatalf("no samples.csv: %v", err)
	}
	html, err := os.ReadFile(filepath.Join(o.ExportDir, "report.html"))
	if err != nil || o.ReportErr != nil || o.ReportFile != filepath.Join(o.ExportDir, "report.html") || !strings.Contains(string(html), o.Run.ID) {
		t.Fatalf("report %s (%v, %v): want report.html beside the CSV files, of this run", o.ReportFile, err, o.ReportErr)
	}
	if o.Report == nil || len(o.Report.Runs) != 1 || o.Report.Runs[0].ID != o.Run.ID {
		t.Fatalf("outcome report %+v: want the run's", o.Report)
	}
}

func TestRunSessionKeepsTheRunWhenTheExportFails(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, text, store := sessionSpec(t, "", blocker) // export.dir is a file: no directory can be made in it
	rep := &stages{}
	o, err := RunSession(context.Background(), sp, text, SessionConfig{Store: store, LogSource: fileLogs, Reporter: rep, PollEvery: 100 * time.Millisecond})
	var se *StageError
	if !errors.As(err, &se) || se.Stage != StageExport || !strings.HasPrefix(err.Error(), "export: ") {
		t.Fatalf("err %v, want a *StageError of the export", err)
	}
	if o == nil || o.Run == nil || o.Run.Status != resultsdb.RunCompleted || o.Export != nil {
		t.Fatalf("outcome %+v: want the completed run and no export", o)
	}
	if want := []Stage{StageRun, StageRouterLogs}; !slices.Equal(rep.done, want) {
		t.Fatalf("stages done %v, want %v", rep.done, want)
	}
}

func TestRunSessionStartsNothingWhenPreflightFails(t *testing.T) {
	sp, text, store := sessionSpec(t, "      headers: {X-Token: \"${CFBENCH_SESSION_TEST_UNSET}\"}\n", "")
	rep := &stages{}
	o, err := RunSession(context.Background(), sp, text, SessionConfig{Store: store, LogSource: fileLogs, Reporter: rep,
		LookupEnv: func(string) (string, bool) { return "", false }})
	var errs spec.Errors
	if o != nil || !errors.As(err, &errs) || len(errs) != 1 || errs[0].Path != "workload.requests[0].headers.X-Token" {
		t.Fatalf("outcome %+v, err %v: want only the header problem", o, err)
	}
	if rep.started != 0 || len(rep.notes) != 0 || len(rep.done) != 0 {
		t.Fatalf("reported %+v before refusing", rep)
	}
}
