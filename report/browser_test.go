package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cf-benchmark/cf-benchmark/report/headless"
)

// artifactDir is where the browser test keeps its screenshots and PDF (git-ignored).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("CFBENCH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", ".artifacts")
	}
	dir = filepath.Join(dir, "report")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantChart is a chart the page must draw: its kind and how many series.
type wantChart struct {
	Kind   string
	Series int
}

// expectedCharts lists the charts of the report in page order, worked out from the
// report itself rather than from the page's script.
func expectedCharts(rep *Report) []wantChart {
	var out []wantChart
	runs := rep.Runs
	if rep.Baseline != nil {
		runs = append(runs[:len(runs):len(runs)], rep.Baseline)
	}
	for _, r := range runs {
		var steps, cpu, mem int
		for _, v := range r.Variants {
			if len(v.Steps) > 0 {
				steps++
			}
			for _, s := range v.Steps {
				if s.App != nil && s.App.CPUTotalCores != nil {
					cpu++
					break
				}
			}
			if v.Memory != nil {
				mem++
			}
		}
		if steps > 0 {
			out = append(out, wantChart{"throughput-vs-load", steps}, wantChart{"percentiles-vs-load", 3 * steps})
		}
		if cpu > 0 {
			out = append(out, wantChart{"cpu-vs-throughput", cpu})
		}
		if mem > 0 {
			out = append(out, wantChart{"memory", mem})
		}
		for _, v := range r.Variants {
			if v.Series != nil && len(v.Series.T) > 0 {
				n := 2 // req/s, p99
				if len(v.Series.P50US) > 0 {
					n++
				}
				out = append(out, wantChart{"time", n})
			}
		}
		for _, v := range r.Variants {
			for _, s := range v.Steps {
				if s.Decomposition != nil {
					out = append(out, wantChart{"decomposition", len(LayerNames)})
					break
				}
			}
		}
		if len(r.Coverage) > 0 {
			seen := map[string]bool{}
			for _, c := range r.Coverage {
				seen[c.Variant] = true
			}
			out = append(out, wantChart{"coverage", len(seen)})
		}
	}
	return out
}

// expectedMarkers counts, per kind of chart, the findings it marks on their step: on
// throughput-vs-load those of a step with figures, on a variant's time chart those of
// a step whose window it shows.
func expectedMarkers(rep *Report) map[string]int {
	out := map[string]int{"throughput-vs-load": 0, "time": 0}
	runs := rep.Runs
	if rep.Baseline != nil {
		runs = append(runs[:len(runs):len(runs)], rep.Baseline)
	}
	for _, r := range runs {
		for _, f := range r.Findings {
			v := variantNamed(r.Variants, f.Variant)
			if v == nil || f.Step == 0 {
				continue
			}
			if slices.ContainsFunc(v.Steps, func(s *Step) bool { return s.Step == f.Step }) {
				out["throughput-vs-load"]++
			}
			if v.Series != nil && len(v.Series.T) > 0 && slices.ContainsFunc(v.Series.Steps, func(w StepWindow) bool { return w.Step == f.Step }) {
				out["time"]++
			}
		}
	}
	return out
}

// browser is a headless Chromium with a fresh profile and what its pages logged.
type browser struct {
	ctx      context.Context
	dir      string
	mu       sync.Mutex
	problems []string
	requests []string
}

// newBrowser starts Chromium (headless.Start) and listens to what its pages log and
// request. It is stopped at the end of t. Under -short it skips t.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("the browser test runs in make test, not with -short")
	}
	b := &browser{dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	bctx, stop, err := headless.Start(ctx, b.dir)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); cancel() })
	b.ctx = bctx
	listen := func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, fmt.Sprintf("exception: %s (line %d)", e.ExceptionDetails.Text, e.ExceptionDetails.LineNumber+1))
		case *runtime.EventConsoleAPICalled:
			switch e.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	}
	if err := chromedp.Listen(bctx, listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	for what, call := range map[string]func() error{
		"network": func() error { _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); return err },
		"runtime": func() error { _, err := chromedp.Call(bctx, runtime.Enable, cdp.Empty{}); return err },
		"log":     func() error { _, err := chromedp.Call(bctx, log.Enable, cdp.Empty{}); return err },
	} {
		if err := call(); err != nil {
			t.Fatalf("chromium: enable %s events: %v", what, err)
		}
	}
	return b
}

// TestHTMLInChromium opens the fixture's HTML report, and that of a bare run, in
// headless Chromium and checks that each logs no error, draws every chart with all its
// series, and requests nothing but the file itself. It keeps screenshots and a PDF.
func TestHTMLInChromium(t *testing.T) {
	b := newBrowser(t)
	store := fixtureStore(t, 200)
	full := fixtureReport(t, store)
	fixture{id: "20261123-080000-0003", epoch: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), tag: 0x5eed0005, speed: 1, perStep: 100, bare: true}.seed(t, store)
	bare, err := Build(context.Background(), store, []string{"20261123-080000-0003"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seedRepeats(t, store, "20261123-100000-0003")
	repeats, err := Build(context.Background(), store, []string{"20261123-100000-0003"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rep  *Report
	}{{"fixture", full}, {"bare", bare}, {"repeats", repeats}} {
		t.Run(c.name, func(t *testing.T) { b.check(t, c.rep, c.name, true) })
	}
	t.Run("repeats say which differences are inside the spread", func(t *testing.T) {
		text, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Spread over the repeats", "98.0 / 100 / 104", "1.27× (apart)", "1.00× (inside)"} {
			if !strings.Contains(text, want) {
				t.Errorf("the repeats report's page lacks %q", want)
			}
		}
	})
	t.Run("the first screen shows the headline", func(t *testing.T) { b.firstScreen(t) })
}

// check writes rep's HTML, opens it in the browser and checks it; screenshots and the
// PDF go to the artifact directory under name.
func (b *browser) check(t *testing.T, rep *Report, name string, allVisible bool) {
	b.mu.Lock()
	b.problems, b.requests = nil, nil
	b.mu.Unlock()
	bctx, dir := b.ctx, b.dir
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".html")
	if err := os.WriteFile(file, html.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fileURL := "file://" + file
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	step("open the report", chromedp.Do(bctx, chromedp.Navigate(fileURL), chromedp.WaitVisible(chromedp.CSS(`body[data-rendered]`))))
	charts, err := headless.Charts(bctx)
	step("read the charts", err)
	// Read before the screenshot and the PDF: an evaluation in a document after it was
	// printed hangs in headless Chromium in about half the runs (seen here).
	marked, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`window.cfbCharts.reduce(function (m, c) {
  m[c.kind] = (m[c.kind] || 0) + (c.plot.cfbMarkers || []).length; return m; }, {})`))
	step("read the finding markers", err)
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	step("screenshot", err)
	pdf, err := chromedp.Run(bctx, chromedp.PrintToPDF(chromedp.PDFPrintBackground()))
	step("print to PDF", err)
	art := artifactDir(t)
	for file, b := range map[string][]byte{name + ".jpg": shot, name + ".pdf": pdf} {
		if err := os.WriteFile(filepath.Join(art, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// One PNG per chart, for a look and for the gallery.
	for i, c := range charts {
		png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID(c.ID)))
		step("screenshot of a chart", err)
		if err := os.WriteFile(filepath.Join(art, fmt.Sprintf("%s-chart-%02d-%s.png", name, i+1, c.Kind)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots and PDF in %s", art)

	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("the page logged: %s", p)
	}
	for _, u := range b.requests {
		if u != fileURL {
			t.Errorf("the page requested %s: it must fetch nothing", u)
		}
	}
	if len(b.requests) == 0 {
		t.Errorf("no request seen at all, not even the file: the network listener is not working")
	}
	want := expectedCharts(rep)
	for _, c := range charts {
		t.Logf("chart %q: %s, %d series, %d drawn, %d visible, %d pixels", c.Title, c.Kind, c.Series, c.Drawn, c.Visible, c.Opaque)
	}
	if len(charts) != len(want) {
		t.Fatalf("%d charts drawn, want %d: %+v", len(charts), len(want), charts)
	}
	for i, c := range charts {
		w := want[i]
		visible := c.Visible >= 1
		if allVisible {
			visible = c.Visible == w.Series
		}
		if c.Kind != w.Kind || c.Series != w.Series || c.Drawn != w.Series || !visible || c.Opaque == 0 {
			t.Errorf("chart %d %q: kind %s with %d series, %d drawn, %d visible (%d pixels); want %s with %d series, all drawn, visible: all %v",
				i+1, c.Title, c.Kind, c.Series, c.Drawn, c.Visible, c.Opaque, w.Kind, w.Series, allVisible)
		}
	}
	for kind, want := range expectedMarkers(rep) {
		if marked[kind] != want {
			t.Errorf("%d finding markers on the %s charts, want %d", marked[kind], kind, want)
		}
	}
	if len(pdf) < 1000 || !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Errorf("printing to PDF gave %d bytes", len(pdf))
	}
}

// firstScreenPage is what firstScreen reads of the page.
type firstScreenPage struct {
	Width, Height, ScrollY float64
	Lines                  []struct {
		Variant, Text       string
		Top, Bottom, Height float64
		OnTop               bool
		Links               []string
	}
	Ticks   map[string][]float64
	Markers []struct {
		Variant, Check string
		Step           int
	}
	Capacity   string
	Open, Shut int
	Links      []string
}

// firstScreen opens the study's report (headline_test.go: studyRun), with loads of 1, 2
// and 3 users, in a 1400×900 window and checks what a person sees before scrolling:
// every variant's headline, whole. It checks the charts read right too: whole-number
// ticks on the load axes, a marker for each finding on its step, the capacity table
// with figures and links instead of finding paragraphs, the paragraphs folded.
func (b *browser) firstScreen(t *testing.T) {
	run := studyRun("20261127-160000-0001", 1)
	for _, v := range run.Variants {
		for _, s := range v.Steps {
			s.Load = float64(s.Step)
		}
	}
	run.Name, run.Status = "study", "completed"
	rep := &Report{Schema: Schema, Version: Version, Runs: []*Run{run}}
	rep.Headline = headlines(rep)
	b.check(t, rep, "study", true)

	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(1400, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`body[data-rendered]`))); err != nil {
		t.Fatalf("chromium: reopen at 1400×900: %v", err)
	}
	js := `(function () {
  var out = {width: window.innerWidth, height: window.innerHeight, scrollY: window.scrollY, ticks: {}, markers: []};
  out.lines = Array.prototype.map.call(document.querySelectorAll("p.headline-line"), function (p) {
    var r = p.getBoundingClientRect(), hit = document.elementFromPoint(r.left + 5, r.top + r.height / 2);
    return {variant: p.dataset.variant, text: p.innerText, top: r.top, bottom: r.bottom, height: r.height, onTop: !!hit && p.contains(hit),
      links: Array.prototype.map.call(p.querySelectorAll("a"), function (a) { return a.getAttribute("href"); })};
  });
  window.cfbCharts.forEach(function (c) {
    if (c.kind === "throughput-vs-load" || c.kind === "percentiles-vs-load") out.ticks[c.kind] = c.plot.axes[0]._splits;
    if (c.kind === "throughput-vs-load") out.markers = c.plot.cfbMarkers;
  });
  var cap = document.querySelector("table.capacity");
  out.capacity = cap ? cap.innerText : "";
  out.links = cap ? Array.prototype.map.call(cap.querySelectorAll("a"), function (a) { return a.getAttribute("href"); }) : [];
  out.open = document.querySelectorAll("ul.findings details[open]").length;
  out.shut = document.querySelectorAll("ul.findings details:not([open])").length;
  return out;
})()`
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[firstScreenPage](js))
	if err != nil {
		t.Fatalf("chromium: read the page: %v", err)
	}
	if got.Width != 1400 || got.Height != 900 || got.ScrollY != 0 {
		t.Fatalf("window %vx%v scrolled to %v, want 1400x900 at the top", got.Width, got.Height, got.ScrollY)
	}
	if len(got.Lines) != len(rep.Headline) {
		t.Fatalf("%d headline lines on the page, want %d: %+v", len(got.Lines), len(rep.Headline), got.Lines)
	}
	for i, h := range rep.Headline {
		l := got.Lines[i]
		if l.Variant != h.Variant || strings.TrimSpace(l.Text) != h.Text {
			t.Errorf("headline line %d reads %q (%s), want %q (%s)", i+1, l.Text, l.Variant, h.Text, h.Variant)
		}
		if l.Top < 0 || l.Bottom > got.Height || l.Height == 0 || !l.OnTop {
			t.Errorf("the headline of %s is not on the first screen: %+v", h.Variant, l)
		}
		var links []string
		for _, i := range h.Findings {
			links = append(links, fmt.Sprintf("#finding-%s-%d", run.ID, i))
		}
		if fmt.Sprint(l.Links) != fmt.Sprint(links) {
			t.Errorf("the headline of %s links %v, want its findings %v", h.Variant, l.Links, links)
		}
	}
	for kind, ticks := range got.Ticks {
		if len(ticks) < 2 {
			t.Errorf("%s: %d ticks on the load axis", kind, len(ticks))
		}
		for _, x := range ticks {
			if x != math.Round(x) {
				t.Errorf("%s: a tick at %v on an axis of whole users: %v", kind, x, ticks)
				break
			}
		}
	}
	if len(got.Ticks) != 2 {
		t.Errorf("ticks read of %d load charts, want 2", len(got.Ticks))
	}
	var want []string
	for _, f := range run.Findings {
		want = append(want, fmt.Sprintf("%s/%d/%s", f.Variant, f.Step, f.Check))
	}
	var marked []string
	for _, m := range got.Markers {
		marked = append(marked, fmt.Sprintf("%s/%d/%s", m.Variant, m.Step, m.Check))
	}
	if fmt.Sprint(marked) != fmt.Sprint(want) {
		t.Errorf("finding markers on the throughput chart: %v, want %v", marked, want)
	}
	if strings.Contains(got.Capacity, run.Findings[0].Message) || len(got.Links) != 1 || got.Links[0] != "#finding-"+run.ID+"-0" {
		t.Errorf("the capacity table holds %q with links %v; want figures and a link to the stall finding", got.Capacity, got.Links)
	}
	if got.Open != 0 || got.Shut != len(run.Findings) {
		t.Errorf("findings: %d open, %d folded; want all %d folded", got.Open, got.Shut, len(run.Findings))
	}
	shot, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), "study-first-screen.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
