package metrics

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Scope is the instrumentation scope the OTLP figures carry.
const Scope = "github.com/cf-benchmark/cf-benchmark/report/metrics"

// OTLP pushes the run's figures to an OTLP receiver over HTTP (protobuf) every
// Config.Every (default 10 s), with the OpenTelemetry SDK's periodic reader and OTLP
// exporter; the figures enter the SDK as a metric producer, as they are already
// aggregated. Close pushes once more, the final report's figures when Finish gave
// them, and returns what went wrong with that push. The exporter also reads the SDK's
// OTEL_EXPORTER_OTLP_* settings from the environment (headers, certificates); the URL
// given wins. Failed pushes in between go to the SDK's error handler (otel.SetErrorHandler)
// and are tried again at the next push.
type OTLP struct {
	*feed
	url  string
	life lifecycle.State
}

var _ Output = (*OTLP)(nil)

// NewOTLP returns an Output that pushes to url (e.g. http://127.0.0.1:4318/v1/metrics)
// once started.
func NewOTLP(url string, cfg Config) *OTLP {
	return &OTLP{feed: newFeed(cfg, 10*time.Second), url: url}
}

// Start makes the exporter and pushes in the background until Close or the end of ctx.
func (o *OTLP) Start(ctx context.Context) error {
	if err := o.life.Begin(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(o.url))
	if err != nil {
		err = fmt.Errorf("metrics: OTLP exporter for %s: %w", o.url, err)
		o.life.Stopped(err)
		return err
	}
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(o.every), sdkmetric.WithProducer(producer{o}))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "cf-benchmark"))))
	go func() {
		select {
		case <-o.life.Stopping():
		case <-ctx.Done():
		}
		// The last push: the final figures.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := provider.Shutdown(sctx); err != nil {
			o.life.Stopped(fmt.Errorf("metrics: push the last figures to %s: %w", o.url, err))
			return
		}
		o.life.Stopped(nil)
	}()
	return nil
}

// Wait blocks until the Output has stopped.
func (o *OTLP) Wait() error { return o.life.Wait() }

// Close pushes the last figures and stops.
func (o *OTLP) Close() error { return o.life.Close() }

// Run is Start followed by Wait.
func (o *OTLP) Run(ctx context.Context) error { return lifecycle.Run(ctx, o) }

// Where is the URL pushed to.
func (o *OTLP) Where() string { return o.url }

// producer hands the SDK the points as OpenTelemetry metric data at each push.
type producer struct{ o *OTLP }

var _ sdkmetric.Producer = producer{}

func (p producer) Produce(ctx context.Context) ([]metricdata.ScopeMetrics, error) {
	pts, _ := p.o.points(ctx)
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: Scope}, Metrics: otelMetrics(pts, time.Now())}}, nil
}

// otelMetrics are pts as OpenTelemetry metric data at time now, a metric per kind of
// point in All's order, cumulative.
func otelMetrics(pts []Point, now time.Time) []metricdata.Metrics {
	byMetric := map[*Metric][]Point{}
	for _, pt := range pts {
		byMetric[pt.Metric] = append(byMetric[pt.Metric], pt)
	}
	var out []metricdata.Metrics
	for _, m := range All {
		ps := byMetric[m]
		if len(ps) == 0 {
			continue
		}
		md := metricdata.Metrics{Name: m.OTelName, Description: m.Help, Unit: m.Unit}
		switch m.Kind {
		case Counter:
			md.Data = metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: numberPoints(ps, now)}
		case Gauge:
			md.Data = metricdata.Gauge[float64]{DataPoints: numberPoints(ps, now)}
		case Summary:
			dps := make([]metricdata.SummaryDataPoint, len(ps))
			for i, pt := range ps {
				qs := make([]metricdata.QuantileValue, len(pt.Quantiles))
				for j, q := range pt.Quantiles {
					qs[j] = metricdata.QuantileValue{Quantile: q.Q, Value: q.V}
				}
				dps[i] = metricdata.SummaryDataPoint{Attributes: attributes(pt.Labels), StartTime: pt.Start, Time: now,
					Count: pt.Count, Sum: pt.Sum, QuantileValues: qs}
			}
			md.Data = metricdata.Summary{DataPoints: dps}
		}
		out = append(out, md)
	}
	return out
}

func numberPoints(ps []Point, now time.Time) []metricdata.DataPoint[float64] {
	dps := make([]metricdata.DataPoint[float64], len(ps))
	for i, pt := range ps {
		dps[i] = metricdata.DataPoint[float64]{Attributes: attributes(pt.Labels), StartTime: pt.Start, Time: now, Value: pt.Value}
	}
	return dps
}

// attributes are the labels as OpenTelemetry attributes; an empty app is left out.
func attributes(l Labels) attribute.Set {
	kv := []attribute.KeyValue{attribute.String("run", l.Run), attribute.String("variant", l.Variant), attribute.String("step", l.Step)}
	if l.App != "" {
		kv = append(kv, attribute.String("app", l.App))
	}
	return attribute.NewSet(kv...)
}
