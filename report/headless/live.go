package headless

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// Live is what the live page of a run (package dashboard) shows, read from its DOM and
// its charts (window.cfbCharts).
type Live struct {
	// Updates counts the reports the page drew; Final is "report" once it shows the
	// run's final report, "none" once it said there is none, "" before.
	Updates int    `json:"updates"`
	Final   string `json:"final"`
	Title   string `json:"title"`
	// Points is how many points the first variant's time chart has, Steps its step
	// markers (steps from 1).
	Points int   `json:"points"`
	Steps  []int `json:"steps"`
	// Findings counts the findings listed; Running whether a step is marked running.
	Findings int  `json:"findings"`
	Running  bool `json:"running"`
	// Overflow is how many pixels the page is wider than the window (0 or less: none).
	Overflow int `json:"overflow"`
}

const liveJS = `(function () {
  var tc = (window.cfbCharts || []).filter(function (c) { return c.kind === "time"; })[0];
  var rep = document.getElementById("report");
  return {updates: +(document.body.dataset.updates || 0), final: document.body.dataset.final || "",
    title: document.querySelector("h1").textContent, points: tc ? tc.plot.data[0].length : 0, steps: tc ? tc.steps : [],
    findings: rep.querySelectorAll("ul.findings > li").length, running: rep.textContent.indexOf("(running: so far)") >= 0,
    overflow: document.documentElement.scrollWidth - window.innerWidth};
})()`

// ReadLive reads the live page open in the tab of bctx.
func ReadLive(bctx context.Context) (Live, error) {
	l, err := chromedp.Run(bctx, chromedp.Evaluate[Live](liveJS))
	if err != nil {
		return Live{}, fmt.Errorf("chromium: read the live page: %w", err)
	}
	return l, nil
}

// WaitLive waits until the JavaScript expression cond holds on the open page, at most
// timeout (a guard against a page that hangs, not a claim about speed), and reads it.
func WaitLive(bctx context.Context, cond string, timeout time.Duration) (Live, error) {
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(timeout))); err != nil {
		l, _ := ReadLive(bctx)
		return l, fmt.Errorf("chromium: wait until %s: %w (the page shows %+v)", cond, err, l)
	}
	return ReadLive(bctx)
}

// Conditions on the live page for WaitLive.
const (
	// LiveUpdated holds once the page drew a report.
	LiveUpdated = `+(document.body.dataset.updates || 0) >= 1`
	// LiveFinal holds once the page shows the run's final report.
	LiveFinal = `document.body.dataset.final === "report"`
)

// LiveGrown is a condition that holds once the live page, still live, has a time chart
// with more than points points and a marker of step, and at least findings findings.
func LiveGrown(points, step, findings int) string {
	return fmt.Sprintf(`!document.body.dataset.final && document.getElementById("report").querySelectorAll("ul.findings > li").length >= %d &&
  (window.cfbCharts || []).some(function (c) { return c.kind === "time" && c.plot.data[0].length > %d && c.steps.indexOf(%d) >= 0; })`,
		findings, points, step)
}

// OpenLive loads the live page at url (http://…/) in the tab of bctx.
func OpenLive(bctx context.Context, url string) error {
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#live-status`))); err != nil {
		return fmt.Errorf("chromium: open %s: %w", url, err)
	}
	return nil
}
