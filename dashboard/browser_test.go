package dashboard

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/headless"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// pageState is what the live page shows, read from its DOM and charts.
type pageState struct {
	Updates  int    `json:"updates"`
	Points   int    `json:"points"` // of the time chart
	Steps    []int  `json:"steps"`  // the time chart's step markers
	Findings int    `json:"findings"`
	Running  bool   `json:"running"` // a step marked as running in the steps table
	Overflow int    `json:"overflow"`
	Final    string `json:"final"`
	Title    string `json:"title"`
}

const pageStateJS = `(function () {
  var tc = (window.cfbCharts || []).filter(function (c) { return c.kind === "time"; })[0];
  return {updates: +(document.body.dataset.updates || 0), points: tc ? tc.plot.data[0].length : 0, steps: tc ? tc.steps : [],
    findings: document.querySelectorAll("ul.findings > li").length, running: document.getElementById("report").textContent.indexOf("(running: so far)") >= 0,
    overflow: document.documentElement.scrollWidth - window.innerWidth, final: document.body.dataset.final || "",
    title: document.querySelector("h1").textContent};
})()`

// TestPageInChromium opens the live page in headless Chromium at a phone's width and
// reads it twice while the run goes on: the time chart grows, the next step's marker and
// a finding appear; then the run ends and the page shows its report. The page draws
// without an error, fits the phone's width, and requests nothing but its server.
func TestPageInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in make test, not with -short")
	}
	ctx := context.Background()
	r := newLiveRun(t)
	s := startServer(t)
	s.Watch(r.store, r.run.ID)

	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	bctx, stop, err := headless.Start(cctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var mu sync.Mutex
	var requests, problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			problems = append(problems, e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, string(e.Type))
			}
		}
	}
	if err := chromedp.Listen(bctx, listen); err != nil {
		t.Fatal(err)
	}
	for what, call := range map[string]func() error{
		"network": func() error { _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); return err },
		"runtime": func() error { _, err := chromedp.Call(bctx, runtime.Enable, cdp.Empty{}); return err },
	} {
		if err := call(); err != nil {
			t.Fatalf("chromium: enable %s events: %v", what, err)
		}
	}
	read := func(what string) pageState {
		t.Helper()
		st, err := chromedp.Run(bctx, chromedp.Evaluate[pageState](pageStateJS))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return st
	}
	// waitFor waits until the page satisfies cond; the bound guards a hung page, it is
	// not a claim about speed.
	waitFor := func(what, cond string) pageState {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
			t.Fatalf("%s: %v (page: %+v)", what, err, read(what))
		}
		return read(what)
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}

	first := waitFor("the first update", `+(document.body.dataset.updates || 0) >= 1`)
	if first.Points != 20 || !slices.Equal(first.Steps, []int{1, 2}) || !first.Running || first.Findings != 0 {
		t.Errorf("first reading: %+v; want 20 points, markers of steps 1 and 2, step 2 running, no finding", first)
	}
	if first.Overflow > 0 {
		t.Errorf("the page is %d px wider than a phone's 390", first.Overflow)
	}

	// Step 2 ends, step 3 starts and runs 6 s; a check trips.
	epoch := r.run.Epoch
	if err := r.store.EndStep(ctx, r.run.ID, "v", 1, epoch.Add(20*time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.ComputeStepMetrics(ctx, r.run.ID, "v", 1, nil); err != nil {
		t.Fatal(err)
	}
	r.step(2, epoch.Add(20*time.Second), epoch.Add(time.Hour))
	r.add(2, 20, 26)
	if err := r.store.AddEvent(ctx, resultsdb.Event{RunID: r.run.ID, Variant: "v", Step: 2, Kind: "check", Level: "warn",
		Check: "generator-cpu", Message: "the generators were busy"}); err != nil {
		t.Fatal(err)
	}
	second := waitFor("the next step", `document.querySelectorAll("ul.findings > li").length > 0 && window.cfbCharts.some(function (c) { return c.kind === "time" && c.steps.indexOf(3) >= 0; })`)
	if second.Points != 26 || second.Updates <= first.Updates || !second.Running {
		t.Errorf("second reading: %+v; want 26 points, more updates than %d, step 3 running", second, first.Updates)
	}

	final, err := report.Build(ctx, r.store, []string{r.run.ID}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Finish(final, nil)
	last := waitFor("the final report", `document.body.dataset.final === "report"`)
	if !strings.HasPrefix(last.Title, "cf-benchmark report: live (run "+r.run.ID+")") || last.Running || last.Findings != 1 {
		t.Errorf("after the run: %+v; want the report's title, no running step, the finding", last)
	}
	charts, err := headless.Charts(bctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if why := c.Blank(); why != "" {
			t.Errorf("chart %s (%s) of the final report is blank: %s", c.ID, c.Kind, why)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if u != s.URL() && u != s.URL()+"events" {
			t.Errorf("the page requested %s", u)
		}
	}
	if len(problems) > 0 {
		t.Errorf("the page logged problems: %v", problems)
	}
}
