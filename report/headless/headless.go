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
