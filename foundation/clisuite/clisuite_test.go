package clisuite

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// exclude.txt parses, every reason is given, and every selected file exists in the
// selection only once.
func TestExclusionsAndSelection(t *testing.T) {
	excl, err := Exclusions()
	if err != nil {
		t.Fatal(err)
	}
	if len(excl) == 0 {
		t.Fatal("no exclusions read")
	}
	if !excl[0].Pattern.MatchString("app command when the app is a Docker app displays the docker image") {
		t.Errorf("first exclusion %q does not match a Docker spec", excl[0].Pattern)
	}
	for _, bad := range []string{"no separator here", "( | unbalanced", " | no pattern", "pattern | "} {
		if _, err := parseExclusions("x.txt", "# comment\n"+bad); err == nil || !strings.HasPrefix(err.Error(), "x.txt:2:") {
			t.Errorf("%q: error %v, want one at x.txt:2", bad, err)
		}
	}
	seen := map[string]bool{}
	for _, s := range append(append([]Suite{}, Selection...), Quick...) {
		for _, f := range s.Files {
			if !strings.HasSuffix(f, "_test.go") {
				t.Errorf("%s: %s is not a spec file name", s.Name, f)
			}
		}
	}
	for _, s := range Selection {
		for _, f := range s.Files {
			if seen[s.Name+"/"+f] {
				t.Errorf("%s/%s selected twice", s.Name, f)
			}
			seen[s.Name+"/"+f] = true
		}
	}
	for _, s := range Quick {
		for _, f := range s.Files {
			if !seen[s.Name+"/"+f] {
				t.Errorf("quick subset's %s/%s is not in the selection", s.Name, f)
			}
		}
	}
}

// A Ginkgo report is counted per selected file: passed, failed (timeouts too), excluded
// (skipped and matching exclude.txt), skipped by the spec itself; suite nodes that
// fail are failures; files not selected are ignored.
func TestSummaryCountsAReport(t *testing.T) {
	reports, err := readReport(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	excl, err := parseExclusions("x", "Docker app | Docker images")
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	s.add(Suite{Name: "isolated", Files: []string{"orgs_command_test.go", "target_command_test.go"}}, reports, excl)
	want := []FileCount{
		{Suite: "isolated", File: "orgs_command_test.go", Passed: 1, Failed: 1, Excluded: 1, Skipped: 1},
		{Suite: "isolated", File: "target_command_test.go", Failed: 1},
	}
	if len(s.Files) != 2 || s.Files[0] != want[0] || s.Files[1] != want[1] {
		t.Fatalf("files %+v, want %+v", s.Files, want)
	}
	if tot := s.Totals(""); tot.Run() != 3 || tot.Passed != 1 {
		t.Errorf("totals %+v: want 1 of 3 run passed", tot)
	}
	if s.ByReason["Docker images"] != 1 {
		t.Errorf("by reason %v", s.ByReason)
	}
	if len(s.Failures) != 3 || s.Failures[0].Where != "orgs_command_test.go:83" || s.Failures[0].Message != "Got stuck at:" ||
		!strings.HasPrefix(s.Failures[2].Spec, "[SynchronizedAfterSuite]") {
		t.Errorf("failures %+v", s.Failures)
	}
	var text, js bytes.Buffer
	s.WriteText(&text)
	if !strings.Contains(text.String(), "1 of 3 specs run passed (33.3%); 1 excluded by exclude.txt, 1 skipped") {
		t.Errorf("text summary:\n%s", text.String())
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Total struct{ Passed, Run, Excluded int }
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil || out.Total.Passed != 1 || out.Total.Run != 3 || out.Total.Excluded != 1 {
		t.Errorf("json total %+v (%v):\n%s", out.Total, err, js.String())
	}
}

// The quick subset of the cf CLI's own specs passes against a fresh local foundation:
// the real cf CLI, driven by its maintainers' tests (`make test`; the full selection is
// scripts/cf-cli-suite.sh).
func TestCFCLISpecsQuickSubset(t *testing.T) {
	testtier.External(t, "the cf CLI's integration suites and the local foundation")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := BuildTools(ctx, root, os.Stderr, Quick)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := testfoundation.Start(t)
	info := f.Info()
	out := t.TempDir()
	sum, err := Run(ctx, Options{Tools: tools, Target: Target{info.APIURL, info.User, info.Password}, Suites: Quick,
		Procs: 2, Timeout: 5 * time.Minute, OutDir: out})
	var text bytes.Buffer
	sum.WriteText(&text)
	t.Logf("cf CLI specs, quick subset:\n%s", text.String())
	if err != nil {
		t.Fatal(err)
	}
	if tot := sum.Totals(""); tot.Run() < 10 || tot.Failed > 0 {
		logs, _ := os.ReadFile(filepath.Join(out, "isolated.log"))
		t.Fatalf("%d of %d specs passed, want all of at least 10; Ginkgo's output:\n%s", tot.Passed, tot.Run(), logs)
	}
}

func TestOnly(t *testing.T) {
	got, err := Only(Selection, []string{"routes_command", "env_command"})
	if err != nil || len(got) != 2 || got[0].Name != "isolated" || !slices.Equal(got[0].Files, []string{"routes_command_test.go"}) ||
		got[1].Name != "global" || !got[1].Serial {
		t.Errorf("Only(routes_command, env_command) = %+v, %v", got, err)
	}
	if _, err := Only(Selection, []string{"routes", "no_such_file"}); err == nil || !strings.Contains(err.Error(), "no_such_file") {
		t.Errorf("a word matching no file: %v, want an error naming it", err)
	}
}
