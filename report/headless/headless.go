// Package headless opens reports in a headless Chromium (the Debian package that
// scripts/install-deps.sh installs) through the DevTools protocol: the report's browser
// test and the docs' gallery use it to render a report and to take pictures of it.
package headless

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/chromedp/chromedp"
)

// ErrNoChromium is returned by Start when no chromium is on PATH.
var ErrNoChromium = errors.New("no chromium on PATH: scripts/install-deps.sh installs the Debian package")

// Start starts a headless Chromium with a fresh profile under dir, offline-minded: no
// background networking, component updates, sync, extensions or first-run work, in a
// 1200×900 window. The returned context drives its first tab; cancel stops it.
// Chromium's temporary files go under dir too: its profile lock lives in a directory it
// makes in TMPDIR, which a browser stopped by cancel never removes (every run of the
// browser tests left one in /tmp).
func Start(ctx context.Context, dir string) (context.Context, context.CancelFunc, error) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return nil, nil, ErrNoChromium
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR="+dir),
		chromedp.WindowSize(1200, 900),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	return bctx, func() { cancelBrowser(); cancelAlloc() }, nil
}

// Open loads the report page file (an absolute path) in the tab of bctx and waits until
// its script has drawn everything (body[data-rendered]).
func Open(bctx context.Context, file string) error {
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS(`body[data-rendered]`))); err != nil {
		return fmt.Errorf("chromium: open %s: %w", file, err)
	}
	return nil
}

// markJS marks the element a script expression finds with the id the screenshot takes;
// it returns false when there is none.
const markJS = `(function () {
  var old = document.getElementById("cfb-shot"); if (old) old.removeAttribute("id");
  var el = (%s); if (!el) return false; el.id = "cfb-shot"; return true;
})()`

// Shot takes a PNG of the element that the JavaScript expression find returns in the
// open page (for example document.querySelector("figure.chart")). It fails when
// find returns nothing.
func Shot(bctx context.Context, find string) ([]byte, error) {
	found, err := chromedp.Run(bctx, chromedp.Evaluate[bool](fmt.Sprintf(markJS, find)))
	if err != nil {
		return nil, fmt.Errorf("chromium: find %s: %w", find, err)
	}
	if !found {
		return nil, fmt.Errorf("chromium: nothing on the page matches %s", find)
	}
	png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID("cfb-shot")))
	if err != nil {
		return nil, fmt.Errorf("chromium: screenshot of %s: %w", find, err)
	}
	return png, nil
}

// Chart is what a chart of the report's page drew (window.cfbCharts, report.js).
type Chart struct {
	ID    string `json:"id"` // the figure's id, e.g. chart-3
	Kind  string `json:"kind"`
	Title string `json:"title"`
	// Series is how many data series it has, Drawn how many of them uPlot drew (built
	// paths for, from data that is not all null), Visible how many left pixels of their
	// own colour on the canvas (a series hidden under another with the same values
	// does not) and Opaque how many of the canvas's pixels are not blank.
	Series  int `json:"series"`
	Drawn   int `json:"drawn"`
	Visible int `json:"visible"`
	Opaque  int `json:"opaque"`
}

// Blank says why c shows no data, or "" when every series drew and one at least
// can be seen.
func (c Chart) Blank() string {
	switch {
	case c.Series == 0:
		return "it has no series"
	case c.Drawn != c.Series:
		return fmt.Sprintf("%d of its %d series drew", c.Drawn, c.Series)
	case c.Visible == 0 || c.Opaque == 0:
		return "nothing of it can be seen on the canvas"
	}
	return ""
}

const chartsJS = `window.cfbCharts.map(function (c) {
  var u = c.plot, cv = u.ctx.canvas;
  var px = u.ctx.getImageData(0, 0, cv.width, cv.height).data;
  var opaque = 0;
  for (var i = 3; i < px.length; i += 4) if (px[i] > 0) opaque++;
  var drawn = 0, visible = 0;
  for (var s = 1; s < u.series.length; s++) {
    var has = u.data[s].some(function (v) { return v !== null && v !== undefined; });
    if (has && u.series[s]._paths) drawn++;
    var col = u.series[s].stroke;
    if (typeof col === "function") col = col(u, s);
    var r = parseInt(col.substr(1, 2), 16), g = parseInt(col.substr(3, 2), 16), b = parseInt(col.substr(5, 2), 16), n = 0;
    for (var j = 0; j < px.length && n < 3; j += 4) {
      if (px[j + 3] > 200 && Math.abs(px[j] - r) < 12 && Math.abs(px[j + 1] - g) < 12 && Math.abs(px[j + 2] - b) < 12) n++;
    }
    if (n >= 3) visible++;
  }
  return {id: c.id, kind: c.kind, title: c.title, series: u.series.length - 1, drawn: drawn, visible: visible, opaque: opaque};
})`

// Charts reads what each chart of the open report page (Open) drew, in page order.
func Charts(bctx context.Context) ([]Chart, error) {
	charts, err := chromedp.Run(bctx, chromedp.Evaluate[[]Chart](chartsJS))
	if err != nil {
		return nil, fmt.Errorf("chromium: read the charts: %w", err)
	}
	return charts, nil
}
