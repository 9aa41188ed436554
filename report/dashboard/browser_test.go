package dashboard

import (
	"context"
	"fmt"
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
	s.Watch(report.NewLiveRun(r.store, r.run.ID))

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
	waitFor := func(what, cond string) headless.Live {
		t.Helper()
		l, err := headless.WaitLive(bctx, cond, 90*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return l
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}

	first := waitFor("the first update", headless.LiveUpdated)
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
	second := waitFor("the next step", headless.LiveGrown(first.Points, 3, 1))
	if second.Points != 26 || second.Updates <= first.Updates || !second.Running {
		t.Errorf("second reading: %+v; want 26 points, more updates than %d, step 3 running", second, first.Updates)
	}

	// A finding the reader unfolds stays unfolded through the next updates.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("ul.findings > li > details").open = true`)); err != nil {
		t.Fatal(err)
	}
	third := waitFor("an update after unfolding", fmt.Sprintf(`+document.body.dataset.updates > %d`, second.Updates+1))
	if open, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("ul.findings > li > details").open`)); err != nil || !open {
		t.Errorf("the finding unfolded before update %d is folded again after update %d (%v)", second.Updates, third.Updates, err)
	}

	final, err := report.Build(ctx, r.store, []string{r.run.ID}, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Finish(final, nil)
	last := waitFor("the final report", headless.LiveFinal)
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
