package metrics

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/report/metrics/metricstest"
)

func ptr[T any](v T) *T { return &v }

// sampleReport is a run of one variant: step 1 ended (with its app's and generators'
// CPU and memory), step 2 still running (live, before its first container reading).
func sampleReport() *report.Report {
	started := time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC)
	return &report.Report{Runs: []*report.Run{{ID: "20261127-190000-abcd", Started: started, Variants: []*report.Variant{{
		Name: "fast", App: "stub-fast", GeneratorApp: "gen-fast",
		Steps: []*report.Step{
			{Step: 1, InstancesSeen: 1, Seconds: 4, Count: 4000, Throughput: 1000, Errors: 3, MeanUS: 1500,
				P50US: 1400, P90US: 1900, P99US: 2500, P999US: 4000, SendLagMeanUS: 20, SendLagP99US: 90,
				App:       &report.AppUsage{Name: "stub-fast", CPUTotalCores: ptr(0.75), MemMeanBytes: ptr(32e6)},
				Generator: &report.AppUsage{Name: "gen-fast", CPUTotalCores: ptr(0.25), MemMeanBytes: ptr(16e6)}},
			{Step: 2, InstancesSeen: 2, Seconds: 1.5, Count: 3000, Throughput: 2000, MeanUS: 1800,
				P50US: 1700, P90US: 2100, P99US: 3000, P999US: 5000, SendLagMeanUS: 30, SendLagP99US: 120, Live: true},
		},
	}}}}}
}

// want is what a published point should hold, by metric name and step: a counter's or
// gauge's value, or a summary's count, sum and quantiles.
type want struct {
	value, count, sum float64
	quantiles         map[float64]float64
}

// wantFromReport are sampleReport's figures in base units, written out by hand.
var wantFromReport = map[string]want{
	"requests/1":         {value: 4000},
	"requests/2":         {value: 3000},
	"errors/1":           {value: 3},
	"errors/2":           {value: 0},
	"duration/1":         {count: 4000, sum: 6, quantiles: map[float64]float64{0.5: 0.0014, 0.9: 0.0019, 0.99: 0.0025, 0.999: 0.004}},
	"duration/2":         {count: 3000, sum: 5.4, quantiles: map[float64]float64{0.5: 0.0017, 0.9: 0.0021, 0.99: 0.003, 0.999: 0.005}},
	"send_lag/1":         {count: 4000, sum: 0.08, quantiles: map[float64]float64{0.99: 0.00009}},
	"send_lag/2":         {count: 3000, sum: 0.09, quantiles: map[float64]float64{0.99: 0.00012}},
	"step_seconds/1":     {value: 4},
	"step_seconds/2":     {value: 1.5},
	"instances/1":        {value: 1},
	"instances/2":        {value: 2},
	"app_cpu/1":          {value: 0.75},
	"app_memory/1":       {value: 32e6},
	"generator_cpu/1":    {value: 0.25},
	"generator_memory/1": {value: 16e6},
}

// short names the metrics in wantFromReport.
var short = map[*Metric]string{Requests: "requests", Errors: "errors", Duration: "duration", SendLag: "send_lag", StepTime: "step_seconds",
	Instances: "instances", AppCPU: "app_cpu", AppMemory: "app_memory", GeneratorCPU: "generator_cpu", GeneratorMemory: "generator_memory"}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func (w want) check(t *testing.T, key string, got want) {
	t.Helper()
	if !near(got.value, w.value) || !near(got.count, w.count) || !near(got.sum, w.sum) || len(got.quantiles) != len(w.quantiles) {
		t.Errorf("%s: got %+v, want %+v", key, got, w)
		return
	}
	for q, v := range w.quantiles {
		if g, ok := got.quantiles[q]; !ok || !near(g, v) {
			t.Errorf("%s: quantile %v = %v, want %v", key, q, g, v)
		}
	}
}

// checkAll checks that got holds wantFromReport's figures, each once, and nothing else.
func checkAll(t *testing.T, got map[string]want) {
	t.Helper()
	for k, w := range wantFromReport {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: not published", k)
			continue
		}
		w.check(t, k, g)
	}
	for k := range got {
		if _, ok := wantFromReport[k]; !ok {
			t.Errorf("%s: published, but the report has no such figure", k)
		}
	}
}

func TestPointsAreTheReportsFiguresInBaseUnits(t *testing.T) {
	got := map[string]want{}
	for _, pt := range Points(sampleReport()) {
		key := short[pt.Metric] + "/" + pt.Labels.Step
		if _, dup := got[key]; dup {
			t.Errorf("%s: twice", key)
		}
		w := want{value: pt.Value, count: float64(pt.Count), sum: pt.Sum}
		if len(pt.Quantiles) > 0 {
			w.quantiles = map[float64]float64{}
			for _, q := range pt.Quantiles {
				w.quantiles[q.Q] = q.V
			}
		}
		got[key] = w
		app := map[bool]string{true: "gen-fast", false: "stub-fast"}[pt.Metric == GeneratorCPU || pt.Metric == GeneratorMemory]
		if pt.Labels.Run != "20261127-190000-abcd" || pt.Labels.Variant != "fast" || pt.Labels.App != app || !pt.Start.Equal(sampleReport().Runs[0].Started) {
			t.Errorf("%s: labels %+v since %v", key, pt.Labels, pt.Start)
		}
	}
	checkAll(t, got)
}

func TestAStepWithoutRequestsHasNoQuantiles(t *testing.T) {
	rep := &report.Report{Runs: []*report.Run{{ID: "r", Variants: []*report.Variant{{Name: "v", Steps: []*report.Step{{Step: 1, Live: true}}}}}}}
	for _, pt := range Points(rep) {
		if pt.Metric.Kind == Summary && (pt.Count != 0 || len(pt.Quantiles) != 0) {
			t.Errorf("%s in warm-up: count %d, quantiles %v; want none", pt.Metric.Name, pt.Count, pt.Quantiles)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Target
		err  string
	}{
		{"prometheus", Target{Kind: "prometheus", Addr: "127.0.0.1:0"}, ""},
		{"prometheus:9464", Target{Kind: "prometheus", Addr: "127.0.0.1:9464"}, ""},
		{"prometheus:0.0.0.0:9464", Target{Kind: "prometheus", Addr: "0.0.0.0:9464"}, ""},
		{"prometheus:a:b:c", Target{}, `prometheus address "a:b:c": want HOST:PORT, :PORT or PORT`},
		{"otlp=http://127.0.0.1:4318", Target{Kind: "otlp", URL: "http://127.0.0.1:4318/v1/metrics"}, ""},
		{"otlp=https://collector.example:4318/custom/path", Target{Kind: "otlp", URL: "https://collector.example:4318/custom/path"}, ""},
		{"otlp=127.0.0.1:4318", Target{}, `otlp URL "127.0.0.1:4318": want http://HOST:PORT[/PATH] or https://…`},
		{"otlp=", Target{}, `otlp URL "": want http://HOST:PORT[/PATH] or https://…`},
		{"statsd", Target{}, `"statsd": want prometheus[:ADDR] or otlp=URL`},
		{"prometheusx", Target{}, `"prometheusx": want prometheus[:ADDR] or otlp=URL`},
	} {
		got, err := ParseTarget(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v, %q", c.in, got, err, c.want, c.err)
		}
	}
}

// scrape reads the Prometheus Output's page as Prometheus's text format, keyed as
// wantFromReport is.
func scrape(t *testing.T, url string) map[string]want {
	t.Helper()
	resp, err := testhttp.Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("scrape: %v\n%s", err, body)
	}
	byName := map[string]string{}
	for m, s := range short {
		byName[m.Name] = s
	}
	got := map[string]want{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := byName[name] + "/" + labels["step"]
			var w want
			switch {
			case m.Counter != nil:
				w.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				w.value = m.GetGauge().GetValue()
			case m.Summary != nil:
				w.count, w.sum = float64(m.GetSummary().GetSampleCount()), m.GetSummary().GetSampleSum()
				for _, q := range m.GetSummary().GetQuantile() {
					if w.quantiles == nil {
						w.quantiles = map[float64]float64{}
					}
					w.quantiles[q.GetQuantile()] = q.GetValue()
				}
			}
			got[key] = w
		}
	}
	return got
}

// TestPrometheusServesTheFinalReportThenStops: the final report's figures are served
// under their Prometheus names, and Close, once Prometheus has scraped before, waits
// for the scrape of those final figures.
func TestPrometheusServesTheFinalReportThenStops(t *testing.T) {
	p := NewPrometheus("127.0.0.1:0", Config{})
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Where(), "http://127.0.0.1:") || !strings.HasSuffix(p.Where(), "/metrics") {
		t.Fatalf("Where() = %q", p.Where())
	}
	if got := scrape(t, p.Where()); len(got) != 0 {
		t.Fatalf("before the run: %v, want nothing", got)
	}
	p.Finish(sampleReport(), nil)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	checkAll(t, scrape(t, p.Where()))
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := testhttp.Client.Get(p.Where()); err == nil {
		t.Errorf("the endpoint answers after Close")
	}
}

// received are a push's figures, keyed as wantFromReport is.
func received(p metricstest.Push) map[string]want {
	byName := map[string]string{}
	for m, s := range short {
		byName[m.OTelName] = s
	}
	got := map[string]want{}
	for k, f := range p.Figures {
		got[byName[k.Metric]+"/"+k.Step] = want{value: f.Value, count: float64(f.Count), sum: f.Sum, quantiles: f.Quantiles}
	}
	return got
}

// TestOTLPPushesTheFinalReportWhenClosed: an OTLP Output pushes, on Close, the final
// report's figures under their OpenTelemetry names to a receiver on 127.0.0.1, in
// OTLP's protobuf over HTTP.
func TestOTLPPushesTheFinalReportWhenClosed(t *testing.T) {
	r := metricstest.NewReceiver(t)
	target, err := ParseTarget("otlp=" + r.URL)
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(target, Config{Every: time.Hour}) // no push but the last
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Finish(sampleReport(), nil)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	pushes := r.Pushes()
	if len(pushes) != 1 || pushes[0].Service != "cf-benchmark" {
		t.Fatalf("the receiver got %+v, want 1 push from service cf-benchmark", pushes)
	}
	checkAll(t, received(pushes[0]))
}

func TestOTLPSaysWhenTheLastPushFailed(t *testing.T) {
	r := metricstest.NewReceiver(t)
	url := r.URL + "/v1/metrics"
	r.Close() // nobody listens there now
	o := NewOTLP(url, Config{Every: time.Hour})
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	o.Finish(sampleReport(), nil)
	if err := o.Close(); err == nil || !strings.Contains(err.Error(), "push the last figures to "+url) {
		t.Fatalf("Close with the receiver gone: %v, want the failed push", err)
	}
}

func TestLifecycle(t *testing.T) {
	t.Run("prometheus", func(t *testing.T) {
		lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
			return lifecycletest.Subject{Part: NewPrometheus("127.0.0.1:0", Config{}), NoFailure: "a failed read of the run is logged and the last figures served"}
		})
	})
	t.Run("otlp", func(t *testing.T) {
		r := metricstest.NewReceiver(t)
		lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
			return lifecycletest.Subject{Part: NewOTLP(r.URL+"/v1/metrics", Config{}), NoFailure: "a failed push is retried at the next interval"}
		})
	})
}
