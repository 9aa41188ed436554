package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
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
				out = append(out, wantChart{"time", 2})
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
		if r.Coverage != nil {
			seen := map[string]bool{}
			for _, c := range r.Coverage {
				seen[c.Variant] = true
			}
			out = append(out, wantChart{"coverage", len(seen)})
		}
	}
	return out
}

// drawnJS reports, per chart, its kind, its series and how many of them left pixels of
// their own colour on the canvas.
const drawnJS = `window.cfbCharts.map(function (c) {
  var u = c.plot, cv = u.ctx.canvas;
  var px = u.ctx.getImageData(0, 0, cv.width, cv.height).data;
  var opaque = 0;
  for (var i = 3; i < px.length; i += 4) if (px[i] > 0) opaque++;
  var drawn = 0;
  for (var s = 1; s < u.series.length; s++) {
    var col = u.series[s].stroke;
    if (typeof col === "function") col = col(u, s);
    var r = parseInt(col.substr(1, 2), 16), g = parseInt(col.substr(3, 2), 16), b = parseInt(col.substr(5, 2), 16), n = 0;
    for (var j = 0; j < px.length && n < 3; j += 4) {
      if (px[j + 3] > 200 && Math.abs(px[j] - r) < 12 && Math.abs(px[j + 1] - g) < 12 && Math.abs(px[j + 2] - b) < 12) n++;
    }
    if (n >= 3) drawn++;
  }
  return {kind: c.kind, title: c.title, series: u.series.length - 1, drawn: drawn, opaque: opaque};
})`

type drawnChart struct {
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Series int    `json:"series"`
	Drawn  int    `json:"drawn"`
	Opaque int    `json:"opaque"`
}

// TestHTMLInChromium opens the fixture's HTML report in headless Chromium (offline, a
// fresh profile) and checks that it logs no error, draws every chart with all its
// series, and requests nothing but the file itself. It keeps a screenshot and a PDF.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not with -short")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium on PATH: scripts/install-deps.sh installs the Debian package")
	}
	store := fixtureStore(t, 200)
	full := fixtureReport(t, store)
	fixture{id: "20261123-080000-0003", epoch: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), tag: 0x5eed0005, speed: 1, perStep: 100, bare: true}.seed(t, store)
	bare, err := Build(context.Background(), store, []string{"20261123-080000-0003"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1200, 900),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	var (
		mu       sync.Mutex
		problems []string
		requests []string
	)
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			problems = append(problems, fmt.Sprintf("exception: %s (line %d)", e.ExceptionDetails.Text, e.ExceptionDetails.LineNumber+1))
		case *runtime.EventConsoleAPICalled:
			switch e.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	}
	if err := chromedp.Listen(bctx, listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("chromium: %s: %v", what, err)
		}
	}
	_, err = chromedp.Call(bctx, network.Enable, network.EnableParams{})
	step("enable network events", err)
	_, err = chromedp.Call(bctx, runtime.Enable, cdp.Empty{})
	step("enable runtime events", err)
	_, err = chromedp.Call(bctx, log.Enable, cdp.Empty{})
	step("enable log events", err)
	for _, c := range []struct {
		name string
		rep  *Report
	}{{"fixture", full}, {"bare", bare}} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			problems, requests = nil, nil
			mu.Unlock()
			checkPage(t, bctx, c.rep, c.name, dir, &mu, &problems, &requests)
		})
	}
}

// checkPage writes rep's HTML to dir, opens it in the browser of bctx and checks it;
// problems and requests are what the browser's listener records.
func checkPage(t *testing.T, bctx context.Context, rep *Report, name, dir string, mu *sync.Mutex, problems, requests *[]string) {
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
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]drawnChart](drawnJS))
	step("read the charts", err)
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
		png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID(fmt.Sprintf("chart-%d", i+1))))
		step("screenshot of a chart", err)
		if err := os.WriteFile(filepath.Join(art, fmt.Sprintf("%s-chart-%02d-%s.png", name, i+1, c.Kind)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots and PDF in %s", art)

	mu.Lock()
	defer mu.Unlock()
	for _, p := range *problems {
		t.Errorf("the page logged: %s", p)
	}
	for _, u := range *requests {
		if u != fileURL {
			t.Errorf("the page requested %s: it must fetch nothing", u)
		}
	}
	if len(*requests) == 0 {
		t.Errorf("no request seen at all, not even the file: the network listener is not working")
	}
	want := expectedCharts(rep)
	for _, c := range charts {
		t.Logf("chart %q: %s, %d series, %d drawn, %d pixels", c.Title, c.Kind, c.Series, c.Drawn, c.Opaque)
	}
	if len(charts) != len(want) {
		t.Fatalf("%d charts drawn, want %d: %+v", len(charts), len(want), charts)
	}
	for i, c := range charts {
		w := want[i]
		if c.Kind != w.Kind || c.Series != w.Series || c.Drawn != w.Series || c.Opaque == 0 {
			t.Errorf("chart %d %q: kind %s with %d series, %d drawn (%d pixels); want %s with %d series, all drawn",
				i+1, c.Title, c.Kind, c.Series, c.Drawn, c.Opaque, w.Kind, w.Series)
		}
	}
	if len(pdf) < 1000 || !bytes.HasPrefix(pdf, []byte("%PDF")) {
		t.Errorf("printing to PDF gave %d bytes", len(pdf))
	}
}
