package logcache

import (
	"maps"
	"math"
	"testing"
	"time"

	"code.cloudfoundry.org/go-log-cache/v3/rpc/logcache_v1"
	"code.cloudfoundry.org/go-loggregator/v10/rpc/loggregator_v2"
	"google.golang.org/protobuf/encoding/protojson"
)

// gatewayJSON is how log-cache's gateway marshals a read's answer (grpc-gateway's
// JSONPb with these options, log-cache-release src/internal/gateway).
var gatewayJSON = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

func gaugeEnvelope(ts int64, instance string, tags map[string]string, metrics map[string]*loggregator_v2.GaugeValue) *loggregator_v2.Envelope {
	return &loggregator_v2.Envelope{Timestamp: ts, SourceId: appGUID, InstanceId: instance, Tags: tags,
		Message: &loggregator_v2.Envelope_Gauge{Gauge: &loggregator_v2.Gauge{Metrics: metrics}}}
}

// repEnvelopes are what Diego's rep sends for one sample of instance 0, made with
// the Loggregator v2 types themselves, the counters a few µs after the usage, and
// envelopes of other kinds around them: a log line, a counter, a gauge of values
// protojson writes as strings, and one whose only metric is zero.
func repEnvelopes() []*loggregator_v2.Envelope {
	tags := map[string]string{"app_id": appGUID, "app_name": "bulletin-java", "instance_id": "0", "origin": "rep",
		"process_id": appGUID, "process_instance_id": "6c3f0a4e-9a55-4bd0-5c1e-8f21", "process_type": "web", "source_id": appGUID}
	v := func(unit string, x float64) *loggregator_v2.GaugeValue {
		return &loggregator_v2.GaugeValue{Unit: unit, Value: x}
	}
	return []*loggregator_v2.Envelope{
		{Timestamp: t0, SourceId: appGUID, InstanceId: "0", Tags: map[string]string{"source_type": "APP/PROC/WEB"},
			Message: &loggregator_v2.Envelope_Log{Log: &loggregator_v2.Log{Payload: []byte("hello\n"), Type: loggregator_v2.Log_ERR}}},
		gaugeEnvelope(t0+1000, "0", tags, map[string]*loggregator_v2.GaugeValue{"cpu": v("percentage", 87.25),
			"memory": v("bytes", 412090368), "disk": v("bytes", 140021760), "memory_quota": v("bytes", 838860800),
			"disk_quota": v("bytes", 1<<30)}),
		gaugeEnvelope(t0+36000, "0", tags, map[string]*loggregator_v2.GaugeValue{"cpu_entitlement": v("percentage", 51.04),
			"absolute_usage": v("nanoseconds", 61250000123), "absolute_entitlement": v("nanoseconds", 1.2e17),
			"container_age": v("nanoseconds", 480000000000)}),
		{Timestamp: t0 + 40000, SourceId: appGUID, InstanceId: "0",
			Message: &loggregator_v2.Envelope_Counter{Counter: &loggregator_v2.Counter{Name: "requests", Delta: 1, Total: 5}}},
		gaugeEnvelope(t0+50000, "1", nil, map[string]*loggregator_v2.GaugeValue{"nan": v("x", math.NaN()),
			"inf": v("x", math.Inf(1)), "big": v("x", 1e21), "small": v("x", 5e-324)}),
		gaugeEnvelope(t0+60000, "", nil, map[string]*loggregator_v2.GaugeValue{"zero": v("bytes", 0)}),
	}
}

// TestDecodesLogCacheProtojson decodes what log-cache's server side writes for a
// read, made with the official types' own marshaller (protojson of a
// logcache.v1.ReadResponse), to the values of the envelopes it was made from: in the
// gateway's form and in protojson's default one (JSON names, zeros left out).
func TestDecodesLogCacheProtojson(t *testing.T) {
	t.Parallel()
	envs := repEnvelopes()
	resp := &logcache_v1.ReadResponse{Envelopes: &loggregator_v2.EnvelopeBatch{Batch: envs}}
	for name, opts := range map[string]protojson.MarshalOptions{"gateway": gatewayJSON, "protojson default": {}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body, err := opts.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeBatch(body)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, body)
			}
			if len(got) != len(envs) {
				t.Fatalf("%d envelopes, want %d:\n%s", len(got), len(envs), body)
			}
			for i, e := range envs {
				g := got[i]
				if g.ts != e.GetTimestamp() || g.instanceID != e.GetInstanceId() || len(g.tags) != len(e.GetTags()) ||
					!maps.Equal(g.tags, e.GetTags()) {
					t.Errorf("envelope %d: got ts %d instance %q tags %v, want %d %q %v", i, g.ts, g.instanceID, g.tags,
						e.GetTimestamp(), e.GetInstanceId(), e.GetTags())
				}
				var want map[string]float64 // no gauge: no metrics
				if ms := e.GetGauge().GetMetrics(); ms != nil {
					want = map[string]float64{}
					for k, v := range ms {
						// NaN and ±Inf are no reading.
						if !math.IsNaN(v.GetValue()) && !math.IsInf(v.GetValue(), 0) {
							want[k] = v.GetValue()
						}
					}
				}
				if (g.metrics == nil) != (want == nil) || !maps.Equal(g.metrics, want) {
					t.Errorf("envelope %d: metrics %v, want %v", i, g.metrics, want)
				}
			}
		})
	}
}

// TestPollsLogCacheProtojson polls a Log Cache that answers with the official types'
// protojson: the rep's two envelopes of a sample make one row with their values.
func TestPollsLogCacheProtojson(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	envs := repEnvelopes()
	for _, e := range envs {
		b, err := gatewayJSON.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		f.add(t, b)
	}
	s := &sink{}
	p := newPoller(t, srv.URL, s, newClock(t0+int64(time.Minute)), nil)
	if err := p.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	g := func(i int, name string) *int64 {
		return ptr(int64(envs[i].GetGauge().GetMetrics()[name].GetValue()))
	}
	equalRows(t, view(s.all()), []row{{t0 + 36000, 0, g(1, "memory"), g(1, "disk"), g(1, "memory_quota"),
		g(2, "absolute_usage"), g(2, "absolute_entitlement"), g(2, "container_age"), ptr[int64](480)}})
}
