package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cf-benchmark/cf-benchmark/report"
)

// bigReport is a run of variants × steps, every step finished with its CPU and memory.
func bigReport(variants, steps int) *report.Report {
	run := &report.Run{ID: "20261127-190000-abcd", Started: time.Now()}
	for v := range variants {
		variant := &report.Variant{Name: fmt.Sprintf("v%d", v), App: fmt.Sprintf("app-%d", v)}
		for s := range steps {
			st := *sampleReport().Runs[0].Variants[0].Steps[0]
			st.Step = s + 1
			variant.Steps = append(variant.Steps, &st)
		}
		run.Variants = append(run.Variants, variant)
	}
	return &report.Report{Runs: []*report.Run{run}}
}

// BenchmarkPublish is what this package adds to a read of the run (report.BuildLive,
// measured in package dashboard's BenchmarkLiveRead): converting the report to points
// and encoding them for one scrape (Prometheus's text format) or one push (OTLP
// metric data, before the exporter's protobuf encoding).
func BenchmarkPublish(b *testing.B) {
	for _, size := range []struct{ variants, steps int }{{2, 3}, {4, 10}} {
		rep := bigReport(size.variants, size.steps)
		b.Run(fmt.Sprintf("prometheus/%dx%d", size.variants, size.steps), func(b *testing.B) {
			p := NewPrometheus("127.0.0.1:0", Config{})
			p.Finish(rep, nil)
			reg := prometheus.NewRegistry()
			reg.MustRegister(collector{p})
			h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
			for b.Loop() {
				p.feed.Finish(rep, nil) // the conversion, as after each read
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
				io.Copy(io.Discard, w.Body)
			}
		})
		b.Run(fmt.Sprintf("otlp/%dx%d", size.variants, size.steps), func(b *testing.B) {
			o := NewOTLP("http://127.0.0.1:1/v1/metrics", Config{})
			pr := producer{o}
			for b.Loop() {
				o.feed.Finish(rep, nil)
				if _, err := pr.Produce(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
