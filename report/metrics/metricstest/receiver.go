// Package metricstest gives tests an OTLP/HTTP receiver on 127.0.0.1 that decodes what
// an OTLP Output pushes (OTLP's protobuf, as a collector reads it) and keeps the figures
// of the last push.
package metricstest

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Key names a data point: its metric's name and its attributes.
type Key struct{ Metric, Run, Variant, Step, App string }

// Figure is a data point as received: a sum's or gauge's Value, or a summary's Count,
// Sum and Quantiles.
type Figure struct {
	Value     float64
	Count     uint64
	Sum       float64
	Quantiles map[float64]float64
}

// Push is what one request carried.
type Push struct {
	// Service is the resource's service.name.
	Service string
	Figures map[Key]Figure
}

// Receiver is the receiver; URL is its base URL (pushes go to URL + "/v1/metrics").
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	pushes []Push
}

// NewReceiver starts a receiver that ends with the test. A request that is not an
// OTLP/HTTP protobuf export to /v1/metrics fails the test and gets a 400.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err == nil && (req.Method != http.MethodPost || req.URL.Path != "/v1/metrics" || req.Header.Get("Content-Type") != "application/x-protobuf") {
			err = errors.New("not an OTLP/HTTP protobuf export of metrics")
		}
		var msg colmetricspb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil {
			t.Errorf("OTLP receiver: %s %s (%s): %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.pushes = append(r.pushes, decode(&msg))
		r.mu.Unlock()
		out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// Pushes are the pushes received so far, in order.
func (r *Receiver) Pushes() []Push {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Push(nil), r.pushes...)
}

func decode(msg *colmetricspb.ExportMetricsServiceRequest) Push {
	p := Push{Figures: map[Key]Figure{}}
	for _, rm := range msg.GetResourceMetrics() {
		for _, a := range rm.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				p.Service = a.GetValue().GetStringValue()
			}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				key := func(attrs []*commonpb.KeyValue) Key {
					return Key{Metric: m.GetName(), Run: attr(attrs, "run"), Variant: attr(attrs, "variant"), Step: attr(attrs, "step"), App: attr(attrs, "app")}
				}
				switch d := m.GetData().(type) {
				case *metricspb.Metric_Sum:
					for _, dp := range d.Sum.GetDataPoints() {
						p.Figures[key(dp.GetAttributes())] = Figure{Value: dp.GetAsDouble()}
					}
				case *metricspb.Metric_Gauge:
					for _, dp := range d.Gauge.GetDataPoints() {
						p.Figures[key(dp.GetAttributes())] = Figure{Value: dp.GetAsDouble()}
					}
				case *metricspb.Metric_Summary:
					for _, dp := range d.Summary.GetDataPoints() {
						f := Figure{Count: dp.GetCount(), Sum: dp.GetSum()}
						for _, q := range dp.GetQuantileValues() {
							if f.Quantiles == nil {
								f.Quantiles = map[float64]float64{}
							}
							f.Quantiles[q.GetQuantile()] = q.GetValue()
						}
						p.Figures[key(dp.GetAttributes())] = f
					}
				}
			}
		}
	}
	return p
}

// attr is the string value of attribute key, "" when absent.
func attr(attrs []*commonpb.KeyValue, key string) string {
	for _, a := range attrs {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}
