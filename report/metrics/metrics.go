// Package metrics publishes a run's figures as it goes to the tools a platform is
// already watched with: an endpoint Prometheus scrapes (NewPrometheus, with
// client_golang) or pushes to an OTLP receiver (NewOTLP, with the OpenTelemetry SDK).
// Both publish the report: the report of the run so far (report.BuildLive) while it
// runs, its final report once it has one (Points converts it), so a person sees the
// numbers in Grafana that the report prints afterwards.
//
// Latency is published as the report's percentiles (a Prometheus summary, an OTLP
// summary), not as a histogram: the report computes observed percentiles over every
// request, and histogram buckets interpolated by the reader would give a p99 that is
// not the report's.
package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/listenaddr"
	"github.com/cf-benchmark/cf-benchmark/report"
)

// Output is where a run's figures go. It follows the lifecycle of package lifecycle;
// Watch and Finish may be called from any goroutine, before or after Start. An Output
// reads the results database only when its figures are asked for (a scrape, a push),
// at most once per its interval and at most report.LiveDBShare of the time; a failed
// read is logged and the figures read before are published again.
type Output interface {
	lifecycle.Part
	// Watch publishes run from now on.
	Watch(run *report.LiveRun)
	// Finish publishes rep, the run's final report, from now on (nil when none could
	// be made: the last figures read stay), and stops reading the run.
	Finish(rep *report.Report, reportErr error)
	// Where says where the figures go, for the user: a URL to scrape or push to.
	Where() string
}

// Config configures an Output.
type Config struct {
	// Every is the least time between two reads of the run (default 1 s); an OTLP
	// Output also pushes every Every (default 10 s there).
	Every  time.Duration
	Logger *slog.Logger
}

// Target is a parsed --metrics value.
type Target struct {
	// Kind is "prometheus" or "otlp".
	Kind string
	// Addr is where Prometheus scrapes (host:port); URL where OTLP pushes.
	Addr, URL string
}

// Usage is what a --metrics value looks like.
const Usage = "want prometheus[:ADDR] or otlp=URL"

// ParseTarget reads a --metrics value: "prometheus" (127.0.0.1, a free port),
// "prometheus:ADDR" (listenaddr.Parse), or "otlp=URL" with an http or https URL; a URL
// without a path gets OTLP's /v1/metrics, as OTEL_EXPORTER_OTLP_ENDPOINT does.
func ParseTarget(v string) (Target, error) {
	switch {
	case v == "prometheus" || strings.HasPrefix(v, "prometheus:"):
		addr, err := listenaddr.Parse(strings.TrimPrefix(strings.TrimPrefix(v, "prometheus"), ":"))
		if err != nil {
			return Target{}, fmt.Errorf("prometheus %w", err)
		}
		return Target{Kind: "prometheus", Addr: addr}, nil
	case strings.HasPrefix(v, "otlp="):
		raw := strings.TrimPrefix(v, "otlp=")
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Target{}, fmt.Errorf("otlp URL %q: want http://HOST:PORT[/PATH] or https://…", raw)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/metrics"
		}
		return Target{Kind: "otlp", URL: u.String()}, nil
	}
	return Target{}, fmt.Errorf("%q: %s", v, Usage)
}

// New returns the Output of t, not started yet.
func New(t Target, cfg Config) (Output, error) {
	switch t.Kind {
	case "prometheus":
		return NewPrometheus(t.Addr, cfg), nil
	case "otlp":
		return NewOTLP(t.URL, cfg), nil
	}
	return nil, fmt.Errorf("metrics: unknown kind %q", t.Kind)
}

// feed is what both Outputs publish: the run's points, read when asked for.
type feed struct {
	every time.Duration
	log   *slog.Logger

	mu       sync.Mutex // held during a read: one read at a time
	run      *report.LiveRun
	finished bool
	last     []Point
	lastRead time.Time // when the read behind last began
}

func newFeed(cfg Config, every time.Duration) *feed {
	if cfg.Every > 0 {
		every = cfg.Every
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &feed{every: every, log: log}
}

func (f *feed) Watch(run *report.LiveRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.run, f.lastRead = run, time.Time{}
}

func (f *feed) Finish(rep *report.Report, _ error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = true
	if rep != nil {
		f.last = Points(rep)
	}
}

// points are the run's figures now, from the run's newest read (report.LiveRun: read
// again when old enough, shared with the dashboard), and whether they are the final
// report's.
func (f *feed) points(ctx context.Context) ([]Point, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished || f.run == nil {
		return f.last, f.finished
	}
	r := f.run.Read(ctx, f.every)
	if r.At.Equal(f.lastRead) {
		return f.last, false
	}
	f.lastRead = r.At
	if r.Err != nil {
		f.log.Warn("metrics: read the run", "run", f.run.ID(), "err", r.Err)
		return f.last, false
	}
	f.last = Points(r.Report)
	return f.last, false
}
