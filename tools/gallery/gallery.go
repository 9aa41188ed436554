// The docs' gallery (docs/gallery.md) and how each item is rendered: each result the report
// exists for, reproduced by a shortened spec on the local foundation (examples/gallery),
// shown as the report's own chart (a PNG taken in headless Chromium) and its table (the
// text form's section). scripts/gallery.sh runs the specs and saves each report's JSON
// form; this command turns those into docs/gallery/*.png and the tables in
// docs/gallery.md. Nothing is drawn by hand.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/headless"
)

// Item is one result of the gallery: a chart and a table of one report.
type Item struct {
	// Name names the item: its PNG is NAME.png, its place in the page the markers
	// <!-- gallery:NAME --> and <!-- /gallery:NAME -->.
	Name string
	// Report is the report it comes from: runs/REPORT.json, as scripts/gallery.sh
	// saves it.
	Report string
	// Chart is the kind of chart to show (figure.chart[data-kind] in the HTML form:
	// throughput-vs-load, percentiles-vs-load, cpu-vs-throughput, memory, time,
	// decomposition, coverage); "" for none.
	Chart string
	// Section is the first line of the text form's section to show, up to its first
	// "(" (e.g. "1. Capacity at the SLO"), or of a part of one, indented as printed
	// ("  memory of "): from there to the next line that is not indented; "" for none.
	Section string
}

// Items are the gallery's results, in the order of docs/gallery.md.
var Items = []Item{
	{Name: "capacity", Report: "java-vs-node", Chart: "throughput-vs-load", Section: "1. Capacity at the SLO"},
	{Name: "cpu", Report: "instances", Chart: "cpu-vs-throughput", Section: "3. Scaling"},
	{Name: "memory", Report: "java-vs-node", Chart: "memory", Section: "  memory of "},
	{Name: "decomposition", Report: "java-vs-node", Chart: "decomposition", Section: "4. Latency decomposition"},
	{Name: "pool-size", Report: "pool-size", Chart: "throughput-vs-load", Section: "2. Steps"},
	{Name: "per-run", Report: "stub-vs-baseline", Chart: "time", Section: "2. Steps"},
	{Name: "baseline", Report: "stub-vs-baseline", Section: "Changes against the baseline"},
	{Name: "proxy", Report: "proxy", Chart: "throughput-vs-load", Section: "3. Scaling"},
	{Name: "cc-api", Report: "cc-api", Chart: "percentiles-vs-load", Section: "2. Steps"},
	{Name: "fault", Report: "lose-one-of-three", Chart: "fault", Section: "5a. Faults injected"},
}

// Load reads a report's JSON form.
func Load(file string) (*report.Report, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if rep.Schema != report.Schema {
		return nil, fmt.Errorf("%s: schema %q, want %q", file, rep.Schema, report.Schema)
	}
	return &rep, nil
}

// Rendered is an item as the gallery shows it.
type Rendered struct {
	PNG   []byte // the chart; nil without one
	Table string // the text form's section; "" without one
}

// Render opens rep's HTML form in the browser of bctx (headless.Start), in dir, and
// takes the item's chart (the first of its kind) and section. It fails when either is
// missing or the chart drew nothing of its data.
func Render(bctx context.Context, rep *report.Report, it Item, dir string) (Rendered, error) {
	var out Rendered
	if it.Section != "" {
		var text bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			return out, err
		}
		sec, err := Section(text.String(), it.Section)
		if err != nil {
			return out, fmt.Errorf("gallery item %s: %w", it.Name, err)
		}
		out.Table = sec
	}
	if it.Chart == "" {
		return out, nil
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		return out, err
	}
	file, err := filepath.Abs(filepath.Join(dir, it.Name+".html"))
	if err != nil {
		return out, err
	}
	if err := os.WriteFile(file, html.Bytes(), 0o644); err != nil {
		return out, err
	}
	if err := headless.Open(bctx, file); err != nil {
		return out, err
	}
	charts, err := headless.Charts(bctx)
	if err != nil {
		return out, err
	}
	i := slices.IndexFunc(charts, func(c headless.Chart) bool { return c.Kind == it.Chart })
	if i < 0 {
		return out, fmt.Errorf("gallery item %s: the report drew no %s chart", it.Name, it.Chart)
	}
	if why := charts[i].Blank(); why != "" {
		return out, fmt.Errorf("gallery item %s: the %s chart %q is blank: %s", it.Name, it.Chart, charts[i].Title, why)
	}
	// The figure as wide as its chart, not the page: no blank band on the right.
	fit := `(function (e) { e.style.width = "fit-content"; return e; })(document.getElementById(%q))`
	png, err := headless.Shot(bctx, fmt.Sprintf(fit, charts[i].ID))
	if err != nil {
		return out, fmt.Errorf("gallery item %s: %w", it.Name, err)
	}
	out.PNG = png
	return out, nil
}

// Section cuts from text (the report's text form) the first section whose heading
// starts with heading: that line and the indented lines under it.
func Section(text, heading string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, heading) {
			continue
		}
		j := i + 1
		for j < len(lines) && (lines[j] == "" || strings.HasPrefix(lines[j], " ")) {
			j++
		}
		return strings.TrimRight(strings.Join(lines[i:j], "\n"), "\n") + "\n", nil
	}
	return "", fmt.Errorf("the report has no section %q", heading)
}

// Place puts block between the item's markers in the page md.
func Place(md []byte, name, block string) ([]byte, error) {
	open, end := "<!-- gallery:"+name+" -->\n", "<!-- /gallery:"+name+" -->"
	i := bytes.Index(md, []byte(open))
	j := bytes.Index(md, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("docs page: no markers %q … %q", strings.TrimSpace(open), end)
	}
	out := append([]byte{}, md[:i+len(open)]...)
	out = append(out, block...)
	return append(out, md[j:]...), nil
}

// Block is what the page shows of an item: its picture and its table.
func Block(it Item, r Rendered) string {
	var b strings.Builder
	if r.PNG != nil {
		fmt.Fprintf(&b, "![%s: %s chart](gallery/%s.png)\n\n", it.Name, it.Chart, it.Name)
	}
	if r.Table != "" {
		fmt.Fprintf(&b, "```text\n%s```\n", r.Table)
	}
	return b.String()
}
