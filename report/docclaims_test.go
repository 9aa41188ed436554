package report

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReportDocClaimsHold keeps REPORT.md's statements of how figures are counted in
// step with the code: each claim is a sentence the page must hold word for word and a
// check of what the code does, on the fixture run (whose steps have warm-up samples)
// and its export. Rewording a claim fails here until its check is looked at again; a
// change of the code that breaks a claim fails its check. TestEveryJSONFieldIsDocumented
// keeps the page complete; export's TestFilesHaveTheDocumentedColumns does the same for
// COLUMNS.md.
func TestReportDocClaimsHold(t *testing.T) {
	store, dirs := exportedFixture(t, 100)
	doc, err := os.ReadFile("REPORT.md")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(context.Background(), store, []string{fixtureRun}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	samples := readCSVRows(t, filepath.Join(dirs[fixtureRun], "samples.csv"))
	type key struct {
		variant string
		step    int
	}
	measured, all := map[key]int64{}, map[key]int64{}
	minStep := -1
	for _, s := range samples {
		step, err := strconv.Atoi(s["step"])
		if err != nil {
			t.Fatalf("samples.csv step %q: %v", s["step"], err)
		}
		if minStep < 0 || step < minStep {
			minStep = step
		}
		k := key{s["variant"], step}
		all[k]++
		if s["warmup"] == "false" {
			measured[k]++
		}
	}
	claims := []struct {
		name, text string
		holds      func(t *testing.T)
	}{
		{"steps from 1", "**Steps are numbered from 1** everywhere in the report, as in the CSV files and every\n  printed line", func(t *testing.T) {
			if minStep != 1 {
				t.Errorf("samples.csv's first step is %d", minStep)
			}
			for _, v := range run.Variants {
				if len(v.Steps) == 0 || v.Steps[0].Step != 1 {
					t.Errorf("variant %s: the report's first step is not 1: %+v", v.Name, v.Steps)
				}
			}
		}},
		{"coverage sent", "| `sent` | integer | the step's requests in its measured window (warm-up excluded, as in every figure of the step) |", func(t *testing.T) {
			if len(run.Coverage) == 0 {
				t.Fatal("the fixture report has no coverage rows")
			}
			for _, c := range run.Coverage {
				k := key{c.Variant, c.Step}
				if c.Sent != measured[k] || all[k] == measured[k] {
					t.Errorf("coverage %s step %d: sent %d; samples.csv has %d after the warm-up, %d in all", c.Variant, c.Step, c.Sent, measured[k], all[k])
				}
			}
		}},
	}
	for _, c := range claims {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(string(doc), c.text) {
				t.Fatalf("REPORT.md no longer says %q: check what it says now against the code, then update this claim", c.text)
			}
			c.holds(t)
		})
	}
}

// readCSVRows reads a CSV file with a header row into one map per row.
func readCSVRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %d records, %v", path, len(recs), err)
	}
	out := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}
