package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/listenaddr"
)

// MaxLinger bounds how long a Prometheus Output waits, when closed, for the scrape of
// the run's final figures.
const MaxLinger = time.Minute

// Prometheus serves the run's figures at /metrics for Prometheus to scrape. A scrape
// reads the run (at most once per Config.Every). Prometheus sees the final report's
// figures only if it scrapes after Finish: so once it has scraped at all, Close waits
// for one more scrape after Finish, for at most twice the longest interval between two
// scrapes seen plus a second (MaxLinger at most, and MaxLinger after a single scrape).
type Prometheus struct {
	*feed
	addr string
	life lifecycle.State
	ln   net.Listener
	ctx  context.Context // Start's: bounds the reads

	mu          sync.Mutex
	scraped     time.Time     // the last scrape's time; zero: none yet
	gap         time.Duration // the longest interval between two scrapes; 0: fewer than two
	finalServed chan struct{} // closed by the first scrape after Finish
}

var _ Output = (*Prometheus)(nil)

// NewPrometheus returns an Output that listens on addr (host:port) once started.
func NewPrometheus(addr string, cfg Config) *Prometheus {
	return &Prometheus{feed: newFeed(cfg, time.Second), addr: addr, finalServed: make(chan struct{})}
}

// Start listens and serves in the background until Close or the end of ctx.
func (p *Prometheus) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		err = fmt.Errorf("metrics: listen on %s: %w", p.addr, err)
		p.life.Stopped(err)
		return err
	}
	p.ln, p.ctx = ln, ctx
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{p})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httpserver.New(httplimit.Timeouts{}.Server(listenaddr.SelfOnly(ln, mux)), ln, 5*time.Second)
	_ = srv.Start(context.WithoutCancel(ctx)) // a new server starts; the end of ctx stops it below, with its grace
	served := make(chan struct{})
	go func() { srv.Wait(); close(served) }()
	go func() {
		select {
		case <-served: // the listener died
		case <-p.life.Stopping():
			p.linger(ctx)
		case <-ctx.Done():
		}
		p.life.Stopped(srv.Close())
	}()
	return nil
}

// linger waits for the scrape of the final figures, when there are any and Prometheus
// scrapes at all.
func (p *Prometheus) linger(ctx context.Context) {
	p.feed.mu.Lock()
	finished := p.feed.finished
	p.feed.mu.Unlock()
	p.mu.Lock()
	scraped, gap := !p.scraped.IsZero(), p.gap
	p.mu.Unlock()
	if !finished || !scraped {
		return
	}
	bound := MaxLinger
	if gap > 0 {
		bound = min(MaxLinger, 2*gap+time.Second)
	}
	p.log.Info("metrics: waiting for Prometheus to scrape the final figures", "at_most", bound)
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-p.finalServed:
	case <-t.C:
		p.log.Warn("metrics: Prometheus did not scrape the final figures", "waited", bound)
	case <-ctx.Done():
	}
}

// Wait blocks until the Output has stopped.
func (p *Prometheus) Wait() error { return p.life.Wait() }

// Close stops serving, after the scrape of the final figures (see Prometheus).
func (p *Prometheus) Close() error { return p.life.Close() }

// Run is Start followed by Wait.
func (p *Prometheus) Run(ctx context.Context) error { return lifecycle.Run(ctx, p) }

// Where is the URL to scrape, once started.
func (p *Prometheus) Where() string { return "http://" + p.ln.Addr().String() + "/metrics" }

// scrape notes a scrape that got pts, final or not.
func (p *Prometheus) scrape(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !p.scraped.IsZero() {
		p.gap = max(p.gap, now.Sub(p.scraped))
	}
	p.scraped = now
	if final {
		select {
		case <-p.finalServed:
		default:
			close(p.finalServed)
		}
	}
}

// collector turns the points into client_golang's constant metrics at each scrape.
type collector struct{ p *Prometheus }

var descs = func() map[*Metric]*prometheus.Desc {
	m := make(map[*Metric]*prometheus.Desc, len(All))
	for _, mt := range All {
		m[mt] = prometheus.NewDesc(mt.Name, mt.Help, LabelNames, nil)
	}
	return m
}()

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, mt := range All {
		ch <- descs[mt]
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	pts, final := c.p.points(c.p.ctx)
	for _, pt := range pts {
		ch <- constMetric(pt)
	}
	c.p.scrape(final)
}

func constMetric(pt Point) prometheus.Metric {
	d := descs[pt.Metric]
	var (
		m   prometheus.Metric
		err error
	)
	switch pt.Metric.Kind {
	case Counter:
		m, err = prometheus.NewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, pt.Value, pt.Start, pt.Labels.Values()...)
	case Gauge:
		m, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, pt.Value, pt.Labels.Values()...)
	case Summary:
		q := make(map[float64]float64, len(pt.Quantiles))
		for _, x := range pt.Quantiles {
			q[x.Q] = x.V
		}
		m, err = prometheus.NewConstSummaryWithCreatedTimestamp(d, pt.Count, pt.Sum, q, pt.Start, pt.Labels.Values()...)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
