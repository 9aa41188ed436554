package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/headless"
)

// TestGalleryRenders draws every gallery item again from the reports make gallery
// saved (docs/gallery/runs): each must still give its chart, a PNG of a sensible size,
// and its table, and docs/gallery.md must hold exactly the tables the report prints now
// (run make gallery, or tools/gallery on the saved reports, after a change to
// the text form). An item whose run was never saved is drawn from the report
// package's golden fixture report (two variants, an SLO, a baseline, router logs and
// app timings), which has every chart and section, so the pipeline is still proven.
func TestGalleryRenders(t *testing.T) {
	if testing.Short() {
		t.Skip("the gallery is drawn in headless Chromium: make test, not -short")
	}
	root := filepath.Join("..", "..", "docs")
	md, err := os.ReadFile(filepath.Join(root, "gallery.md"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bctx, stop, err := headless.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	for _, it := range Items {
		file, saved := filepath.Join(root, "gallery", "runs", it.Report+".json"), true
		if _, err := os.Stat(file); err != nil {
			file, saved = filepath.Join("..", "..", "report", "testdata", "report.json"), false
			t.Logf("%s: no saved run (make gallery): drawn from the fixture report", it.Name)
		}
		rep, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Render(bctx, rep, it, dir)
		if err != nil {
			t.Errorf("%s: %v", it.Name, err)
			continue
		}
		if it.Chart != "" {
			img, err := png.Decode(bytes.NewReader(r.PNG))
			if err != nil {
				t.Errorf("%s: the chart is no PNG: %v", it.Name, err)
			} else if b := img.Bounds(); b.Dx() < 200 || b.Dy() < 100 || len(r.PNG) > 150<<10 {
				t.Errorf("%s: chart of %dx%d pixels, %d bytes: want at least 200x100, at most 150 KiB", it.Name, b.Dx(), b.Dy(), len(r.PNG))
			}
		}
		if it.Section != "" && r.Table == "" {
			t.Errorf("%s: no table", it.Name)
		}
		if !saved {
			continue
		}
		again, err := Place(md, it.Name, Block(it, r))
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(again, md) {
			t.Errorf("%s: docs/gallery.md does not show what the saved report renders now: run make gallery (or go run ./tools/gallery)", it.Name)
		}
	}
	renderFails(t, bctx, dir)
}

// renderFails proves that Render fails, so that TestGalleryRenders does, when an
// item's chart is gone from the report or drew nothing of one of its series (a
// section gone fails in Section, TestSection).
func renderFails(t *testing.T, bctx context.Context, dir string) {
	fixture := filepath.Join("..", "..", "report", "testdata", "report.json")
	memory := Item{Name: "memory", Report: "fixture", Chart: "memory"}
	for _, c := range []struct {
		what   string
		it     Item
		change func(*report.Report)
		want   string
	}{
		{"no memory readings", memory, func(r *report.Report) {
			for _, run := range append(r.Runs, r.Baseline) {
				if run == nil {
					continue
				}
				for _, v := range run.Variants {
					v.Memory = nil
				}
			}
		}, "drew no memory chart"},
		{"a variant's readings lost", memory, func(r *report.Report) {
			for i := range r.Runs[0].Variants {
				if m := r.Runs[0].Variants[i].Memory; m != nil {
					m.MeanBytes = []float64{}
					return
				}
			}
			t.Fatal("the fixture report has no memory readings")
		}, "series drew"},
	} {
		rep, err := Load(fixture)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Render(bctx, rep, c.it, dir); err != nil {
			t.Errorf("%s: the fixture report does not render: %v", c.what, err)
			continue
		}
		c.change(rep)
		if _, err := Render(bctx, rep, c.it, dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Render gave %v, want an error saying %q", c.what, err, c.want)
		}
	}
}

func TestSection(t *testing.T) {
	text := "run x\n\n1. Capacity at the SLO\n  a: 1\n    limited\n\n2. Steps (ms)\n  t\nChanges against the baseline b\n  c\n"
	for heading, want := range map[string]string{
		"1. Capacity at the SLO":       "1. Capacity at the SLO\n  a: 1\n    limited\n",
		"2. Steps":                     "2. Steps (ms)\n  t\n",
		"Changes against the baseline": "Changes against the baseline b\n  c\n",
	} {
		if got, err := Section(text, heading); err != nil || got != want {
			t.Errorf("Section(%q) = %q, %v; want %q", heading, got, err, want)
		}
	}
	if _, err := Section(text, "4. Latency"); err == nil {
		t.Error("a missing section must fail")
	}
}
