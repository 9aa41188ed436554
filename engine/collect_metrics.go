package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/ccstats"
	"github.com/cf-benchmark/cf-benchmark/collectors/logcache"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/platform"
)

// startMetrics polls the process stats of every app and generator into the store until
// the returned stop is called, and, where the API's root links a Log Cache, reads their
// container metrics from it beside: CC's stats give host, state and isolation segment,
// Log Cache the cumulative CPU counters a step's CPU is computed from. A Log Cache that
// cannot be found is logged and done without.
func (d *Deployment) startMetrics(ctx context.Context, runID string, every time.Duration, log *slog.Logger) (stop func()) {
	var targets []ccstats.Target
	var sources []logcache.Target
	for _, name := range d.order {
		dv := d.variants[name]
		for _, a := range []*platform.App{dv.app, dv.fleet.app} {
			if a != nil {
				targets = append(targets, ccstats.Target{AppName: a.Name, AppGUID: a.GUID, ProcessGUID: a.ProcessGUID, ProcessType: "web"})
				sources = append(sources, logcache.Target{AppName: a.Name, AppGUID: a.GUID})
			}
		}
	}
	p := ccstats.New(ccstats.Config{Client: d.cf.Client().Processes, Store: d.Store, RunID: runID, Interval: every, Logger: log})
	p.SetTargets(targets)
	if err := p.Start(ctx); err != nil { // a new poller starts; this is a guard
		log.Warn("container metrics not polled", "err", err)
	}
	stops := []func() error{p.Close}
	if lc := d.startLogCache(ctx, runID, every, sources, log); lc != nil {
		d.logCache, d.metricsEvery = lc, every
		stops = append(stops, lc.Close)
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// startLogCache starts reading sources' container metrics from the foundation's Log
// Cache, or returns nil when it has none.
func (d *Deployment) startLogCache(ctx context.Context, runID string, every time.Duration, sources []logcache.Target, log *slog.Logger) *logcache.Poller {
	u, err := d.cf.LogCacheURL(ctx)
	if err != nil {
		log.Warn("no container metrics from log cache", "err", err)
		return nil
	}
	if u == "" {
		return nil
	}
	lc, err := logcache.New(logcache.Config{URL: u, Client: d.cf.AuthClient(), Sink: d.Store, RunID: runID,
		Targets: sources, Interval: every, Logger: log})
	if err == nil {
		err = lc.Start(ctx)
	}
	if err != nil {
		log.Warn("no container metrics from log cache", "err", err)
		return nil
	}
	return lc
}

// maxSettle bounds how long a step's figures wait for the first counter reading after
// the step: beyond it they rest on the readings so far, and say how much of the step
// those cover.
const maxSettle = 5 * time.Second

// settleMetrics reads the Log Cache until every instance has a reading past the end of
// a step's window that ended at end, or until one poll interval after it (at most
// maxSettle from now), so that cumulative counters have a reading on both sides of the
// window and the step's CPU covers all of it. A foundation that samples more often than
// the run polls (the local one: every 200 ms) has them well before the interval is out.
// Without a Log Cache it returns at once.
func (d *Deployment) settleMetrics(ctx context.Context, end time.Time) {
	if d.logCache == nil {
		return
	}
	deadline := time.Now().Add(min(time.Until(end.Add(d.metricsEvery)), maxSettle))
	every := max(d.metricsEvery/10, 100*time.Millisecond)
	for {
		if err := d.logCache.Poll(ctx); err != nil {
			if ctx.Err() == nil {
				d.log.Warn("read container metrics from log cache", "err", err)
			}
			return
		}
		if d.logCache.ReadPast(end) || !time.Now().Before(deadline) || !wait.For(ctx, min(every, time.Until(deadline))) {
			return
		}
	}
}
