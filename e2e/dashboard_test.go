//go:build linux

package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/report/headless"
)

// liveDashboard is the live page of a run started with --dashboard, open in headless
// Chromium.
type liveDashboard struct {
	bctx  context.Context
	first headless.Live
}

// liveGuard bounds each wait on the page: a guard against a hung page or run, not a
// claim about speed.
const liveGuard = 3 * time.Minute

// watchDashboard reads the dashboard's URL from the run's first lines and opens it.
func watchDashboard(t *testing.T, p *cfProcess) *liveDashboard {
	t.Helper()
	url := p.waitFor(t, regexp.MustCompile(`^dashboard: (http://127\.0\.0\.1:\d+/) `))[1]
	bctx, stop, err := headless.Start(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if err := headless.OpenLive(bctx, url); err != nil {
		t.Fatal(err)
	}
	return &liveDashboard{bctx: bctx}
}

// duringRun reads the page twice while the run goes on: once it drew the run, and
// once its time chart has grown, has the marker of step and lists a finding.
func (d *liveDashboard) duringRun(t *testing.T, step int) {
	t.Helper()
	first, err := headless.WaitLive(d.bctx, headless.LiveUpdated+` && !document.body.dataset.final && (window.cfbCharts || []).some(function (c) { return c.kind === "time"; })`, liveGuard)
	if err != nil {
		t.Fatalf("the live page during the run: %v", err)
	}
	second, err := headless.WaitLive(d.bctx, headless.LiveGrown(first.Points, step, 1), liveGuard)
	if err != nil {
		t.Fatalf("the live page after %+v: %v", first, err)
	}
	t.Logf("live page: %+v, then %+v", first, second)
	d.first = first
}

// afterRun checks that the page shows the run's report once the run ended.
func (d *liveDashboard) afterRun(t *testing.T) {
	t.Helper()
	last, err := headless.WaitLive(d.bctx, headless.LiveFinal, liveGuard)
	if err != nil {
		t.Fatalf("the live page after the run: %v", err)
	}
	if last.Running || last.Findings == 0 || last.Points < d.first.Points {
		t.Errorf("the page after the run: %+v; want the report: no running step, the findings, the whole series", last)
	}
}
