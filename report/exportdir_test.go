package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export/exportdir"
)

// Both readers of a run's rows are Readers. (The assertions live here, not beside the
// implementations: resultsdb and exportdir cannot import report, which imports them.)
var (
	_ Reader = (*resultsdb.Store)(nil)
	_ Reader = exportdir.Reader{}
)

const (
	legacyRun = "20261123-080000-0005"
	bareRun   = "20261123-090000-0006"
)

// exportedFixture is the fixture store with a legacy and a bare run besides the run and
// its baseline, and every run exported into a directory of its own, by run id.
func exportedFixture(t *testing.T, perStep int) (*resultsdb.Store, map[string]string) {
	t.Helper()
	store := fixtureStore(t, perStep)
	fixture{id: legacyRun, epoch: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), tag: 0x5eed0005, speed: 0.9, perStep: perStep, legacy: true}.seed(t, store)
	fixture{id: bareRun, epoch: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), tag: 0x5eed0006, speed: 1.1, perStep: perStep, bare: true}.seed(t, store)
	root := t.TempDir()
	dirs := map[string]string{}
	for _, id := range []string{fixtureRun, fixtureBaseline, legacyRun, bareRun} {
		dirs[id] = filepath.Join(root, "results", id)
		if _, err := export.Export(context.Background(), store, id, dirs[id], nil); err != nil {
			t.Fatal(err)
		}
	}
	return store, dirs
}

// TestReportFromExportDirIsTheSame: a report made from a run's export directory is byte
// for byte the report made from the results database, in JSON and text, for a run with
// several variants and steps, router requests, app timings and findings, compared with
// a baseline under thresholds, for a run recorded before the per-second series and
// router metrics were stored (computed from the raw rows on both sides), a bare run, and
// series in intervals wider than a second.
func TestReportFromExportDirIsTheSame(t *testing.T) {
	store, dirs := exportedFixture(t, 500)
	for _, c := range reportCases(t) {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			fromDB, err := Build(ctx, store, c.ids, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, id := range c.ids {
				paths = append(paths, dirs[id])
			}
			opts := c.opts
			if opts.Baseline != "" {
				opts.Baseline = dirs[opts.Baseline]
			}
			fromDir, err := Build(ctx, exportdir.Reader{}, paths, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, form := range []struct {
				name  string
				write func(*Report, *bytes.Buffer) error
			}{
				{"json", func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
				{"text", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b) }},
			} {
				var a, b bytes.Buffer
				if err := form.write(fromDB, &a); err != nil {
					t.Fatal(err)
				}
				if err := form.write(fromDir, &b); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Errorf("%s from the export directory differs from the database's:\n%s", form.name, lineDiff(a.String(), b.String()))
				}
				if a.Len() < 1000 {
					t.Errorf("%s: a report of %d bytes; the fixture must give more to compare", form.name, a.Len())
				}
			}
			// Not a vacuous comparison: the figures the readers compute are there.
			run := fromDir.Runs[0]
			if len(run.Variants) != 2 || len(run.Variants[0].Steps) == 0 || len(run.Variants[0].Series.T) == 0 {
				t.Errorf("report from the directory lacks variants, steps or series: %+v", run.Variants)
			}
		})
	}
	// The decomposition, coverage, memory and findings are compared above: check the
	// full run has them, so their agreement means something.
	rep, err := Build(context.Background(), exportdir.Reader{}, []string{dirs[fixtureRun]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if len(r.Findings) == 0 || len(r.Coverage) == 0 || r.Variants[0].Memory == nil || r.Variants[0].Steps[3].Decomposition == nil || len(r.Flushes) == 0 {
		t.Errorf("the full run lacks findings, coverage, memory, a decomposition or flushes: %+v", r)
	}
}

// reportCase is a report of fixture runs that two readers of the same rows must give
// alike.
type reportCase struct {
	name string
	ids  []string
	opts Options
}

// reportCases are the reports of exportedFixture's runs that the comparisons build: a
// run against a baseline under thresholds, two runs side by side, a legacy run, a bare
// run, and series in intervals wider than a second.
func reportCases(t *testing.T) []reportCase {
	t.Helper()
	th, err := ParseThresholds("capacity=-10%,p99=+20%,throughput=-25%")
	if err != nil {
		t.Fatal(err)
	}
	return []reportCase{
		{"baseline and thresholds", []string{fixtureRun}, Options{Baseline: fixtureBaseline, FailOn: th}},
		{"two runs side by side", []string{fixtureRun, fixtureBaseline}, Options{}},
		{"legacy run", []string{legacyRun}, Options{}},
		{"bare run", []string{bareRun}, Options{}},
		{"wide intervals", []string{fixtureRun, legacyRun}, Options{MaxPoints: 17, Baseline: bareRun}},
	}
}

// lineDiff shows the first lines where a and b differ, with a little context.
func lineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(la), len(lb)) && shown < 10; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			fmt.Fprintf(&out, "line %d:\n- db:  %s\n+ dir: %s\n", i+1, x, y)
			shown++
		}
	}
	return out.String()
}

// TestReportFromDamagedExportDir: a missing file, a bad value, a cut file and a
// directory that is no export each fail with an error naming the file (and the line
// and column of a bad value), never a report.
func TestReportFromDamagedExportDir(t *testing.T) {
	_, dirs := exportedFixture(t, 50)
	src := dirs[fixtureRun]
	copyDir := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), fixtureRun)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			body, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	edit := func(t *testing.T, path string, f func(string) string) {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(f(string(body))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string
	}{
		{"missing file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "steps.csv")) },
			[]string{"steps.csv", "missing"}},
		{"bad value", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "step_metrics.csv"), func(s string) string {
				lines := strings.SplitN(s, "\n", 3)
				fields := strings.Split(lines[1], ",")
				fields[3] = "many" // count
				lines[1] = strings.Join(fields, ",")
				return strings.Join(lines, "\n")
			})
		}, []string{"step_metrics.csv line 2, column count", `"many" is not an integer`}},
		{"cut file", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "samples.csv"), func(s string) string { return s[:len(s)/2] })
		}, []string{"samples.csv"}},
		{"cut file, manifest edited to match", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "run_events.csv"), func(s string) string {
				lines := strings.SplitAfter(s, "\n")
				return strings.Join(append(lines[:1], lines[2:]...), "")
			})
			st, _ := os.Stat(filepath.Join(dir, "run_events.csv"))
			setManifestBytes(t, dir, "run_events", st.Size())
		}, []string{"run_events.csv", "rows, manifest.json says"}},
		{"changed value", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, "run_events.csv"), func(s string) string { return strings.Replace(s, "generators at", "generators @t", 1) })
		}, []string{"run_events.csv", "SHA-256"}},
		{"no manifest", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "manifest.json")) },
			[]string{"no manifest.json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t)
			c.damage(t, dir)
			rep, err := Build(context.Background(), exportdir.Reader{}, []string{dir}, Options{})
			if err == nil {
				t.Fatalf("a report from a damaged directory: %d runs", len(rep.Runs))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if c.name == "no manifest" && !errors.Is(err, resultsdb.ErrRunNotFound) {
				t.Errorf("error %v does not wrap ErrRunNotFound", err)
			}
		})
	}
}

// setManifestBytes rewrites the size manifest.json gives table's file.
func setManifestBytes(t *testing.T, dir, table string, n int64) {
	t.Helper()
	m, err := exportdir.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Files {
		if m.Files[i].Table == table {
			m.Files[i].Bytes = n
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An export of schema v14 or older has step_app_metrics.cores_available (one instance's
// cell cores, only ever from the local foundation, whose one cell per segment ran all
// instances) instead of cells and cpu_available_cores: its report reads it as one cell of
// those cores, as migration 0015 reads the stored rows, and is the report of the same run
// exported now.
func TestReportFromAnOlderExportDir(t *testing.T) {
	_, dirs := exportedFixture(t, 50)
	old := filepath.Join(t.TempDir(), fixtureRun)
	if err := os.CopyFS(old, os.DirFS(dirs[fixtureRun])); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(old, "step_app_metrics.csv")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	header := strings.Split(lines[0], ",")
	cells := slices.Index(header, "cells")
	if cells < 0 || header[cells+1] != "cpu_available_cores" {
		t.Fatalf("step_app_metrics.csv header %v lacks cells, cpu_available_cores", header)
	}
	for i, l := range lines {
		f := strings.Split(l, ",") // the fixture's app names need no quoting
		if i == 0 {
			f[cells+1] = "cores_available"
		}
		lines[i] = strings.Join(slices.Delete(f, cells, cells+1), ",")
	}
	replaceFile(t, old, "step_app_metrics", []byte(strings.Join(lines, "\n")+"\n"))
	ctx := context.Background()
	now, err := Build(ctx, exportdir.Reader{}, []string{dirs[fixtureRun]}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := Build(ctx, exportdir.Reader{}, []string{old}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := now.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := before.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.String(), `"cells": 1`) || a.String() != b.String() {
		t.Errorf("the report of an older export differs from the same run's now (or has no cells):\n%s", lineDiff(a.String(), b.String()))
	}
}

// replaceFile writes table's file in the export directory dir with body, and its size
// and SHA-256 into manifest.json, as an export that wrote body would have; a nil body
// removes the file and its entry.
func replaceFile(t *testing.T, dir, table string, body []byte) {
	t.Helper()
	path := filepath.Join(dir, table+".csv")
	if body == nil {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := exportdir.Manifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	m.Files = slices.DeleteFunc(m.Files, func(f export.File) bool { return body == nil && f.Table == table })
	for i := range m.Files {
		if m.Files[i].Table == table {
			m.Files[i].Bytes, m.Files[i].SHA256 = int64(len(body)), hex.EncodeToString(sum[:])
		}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An export made before the series stored their p50 (schema v15 or older) has no
// step_series.p50_us: its report computes each variant's series from samples.csv, as
// the database computes a step's stored without p50, and is the report of the same run
// exported now; without samples.csv it shows the stored series without a p50.
func TestReportFromAnExportWithoutP50(t *testing.T) {
	_, dirs := exportedFixture(t, 50)
	ctx := context.Background()
	report := func(dir string, noP50 bool) string {
		t.Helper()
		rep, err := Build(ctx, exportdir.Reader{}, []string{dir}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range rep.Runs[0].Variants {
			if v.Series == nil || len(v.Series.T) == 0 {
				t.Fatalf("%s: variant %s has no series", dir, v.Name)
			}
			if noP50 {
				v.Series.P50US = nil
			}
		}
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	now := report(dirs[fixtureRun], false)
	if !strings.Contains(now, `"p50_us": [`) {
		t.Fatal("the report of the export made now has no series p50")
	}
	for _, c := range []struct {
		name    string
		samples bool
	}{{"with samples.csv", true}, {"without samples.csv", false}} {
		t.Run(c.name, func(t *testing.T) {
			old := filepath.Join(t.TempDir(), fixtureRun)
			if err := os.CopyFS(old, os.DirFS(dirs[fixtureRun])); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(old, "step_series.csv"))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			col := slices.Index(recs[0], "p50_us")
			if col < 0 || len(recs) < 2 {
				t.Fatalf("step_series.csv: header %v, %d rows; want p50_us and rows", recs[0], len(recs)-1)
			}
			var body bytes.Buffer
			w := csv.NewWriter(&body)
			for _, r := range recs {
				if err := w.Write(slices.Delete(r, col, col+1)); err != nil {
					t.Fatal(err)
				}
			}
			w.Flush()
			replaceFile(t, old, "step_series", body.Bytes())
			want := now
			if !c.samples {
				replaceFile(t, old, "samples", nil)
				want = report(dirs[fixtureRun], true)
			}
			if got := report(old, false); got != want {
				t.Errorf("the report of an export without p50_us differs from the one wanted:\n%s", lineDiff(want, got))
			}
		})
	}
}
