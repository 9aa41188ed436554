package logcache

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	lcclient "code.cloudfoundry.org/go-log-cache/v3"
	"code.cloudfoundry.org/go-log-cache/v3/rpc/logcache_v1"
	"code.cloudfoundry.org/go-loggregator/v10/rpc/loggregator_v2"
	"google.golang.org/protobuf/proto"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// withToken is the HTTP client the official client is given: it sends token, as the
// cf CLI's does.
type withToken struct{}

func (withToken) Do(r *http.Request) (*http.Response, error) {
	r.Header.Set("Authorization", token)
	return testhttp.Client.Do(r)
}

// toProto is e as a loggregator v2 envelope, what a reader should get back for it.
func toProto(e Envelope) *loggregator_v2.Envelope {
	out := &loggregator_v2.Envelope{Timestamp: e.Timestamp, SourceId: e.SourceID, InstanceId: e.InstanceID,
		Tags: e.Tags, DeprecatedTags: map[string]*loggregator_v2.Value{}}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	if e.Log != nil {
		out.Message = &loggregator_v2.Envelope_Log{Log: &loggregator_v2.Log{Payload: e.Log.Payload,
			Type: loggregator_v2.Log_Type(loggregator_v2.Log_Type_value[e.Log.Type])}}
		return out
	}
	g := &loggregator_v2.Gauge{Metrics: map[string]*loggregator_v2.GaugeValue{}}
	for k, v := range e.Gauge {
		g.Metrics[k] = &loggregator_v2.GaugeValue{Unit: v.Unit, Value: v.Value}
	}
	out.Message = &loggregator_v2.Envelope_Gauge{Gauge: g}
	return out
}

// TestOfficialClient reads the API with Log Cache's own Go client
// (code.cloudfoundry.org/go-log-cache/v3): container metrics as Diego's rep sends them
// and log lines come back as the envelopes stored, value for value, with log-cache's
// read semantics (start inclusive, end exclusive, limit, descending, envelope types,
// name filter), through its Walk helper too, and Meta describes what the token may
// read.
func TestOfficialClient(t *testing.T) {
	t.Parallel()
	const other = "6f1c1b6e-0000-4000-8000-00000000b002" // an app the token may not read
	base := int64(1_700_000_000_000_000_000)
	s := NewStore(18)
	var all []Envelope // what the store keeps of appGUID, by time
	// Three 15 s intervals of two instances, each sample two gauge envelopes, the
	// counters a microsecond after the usage (the rep stamps each as it sends it), and
	// a log line of each instance between intervals: 3 × (2×2 + 2) = 18 envelopes.
	for i := range int64(3) {
		for inst := range 2 {
			id := string(rune('0' + inst))
			ts := base + i*15e9 + int64(inst)*1e6
			tags := map[string]string{"source_id": appGUID, "instance_id": id, "app_id": appGUID, "app_name": "bulletin",
				"process_id": appGUID, "process_type": "web", "process_instance_id": "guid-" + id, "origin": "rep"}
			all = append(all, Envelope{Timestamp: ts, SourceID: appGUID, InstanceID: id, Tags: tags, Gauge: map[string]GaugeValue{
				"cpu": {"percentage", 37.5 + float64(i)}, "memory": {"bytes", float64(50<<20 + i)}, "disk": {"bytes", 4096},
				"memory_quota": {"bytes", 256 << 20}, "disk_quota": {"bytes", 1 << 30}}},
				Envelope{Timestamp: ts + 1000, SourceID: appGUID, InstanceID: id, Tags: tags, Gauge: map[string]GaugeValue{
					"cpu_entitlement": {"percentage", 150}, "container_age": {"nanoseconds", float64(10e9 + i*15e9)},
					"absolute_usage": {"nanoseconds", float64(1234567890 + i*1e9)}, "absolute_entitlement": {"nanoseconds", 2.5e9 + float64(i)*3.75e9}}})
		}
		for inst, typ := range []string{"OUT", "ERR"} {
			id := string(rune('0' + inst))
			all = append(all, Envelope{Timestamp: base + i*15e9 + 5e9 + int64(inst), SourceID: appGUID, InstanceID: id,
				Tags: map[string]string{"source_id": appGUID, "instance_id": id, "source_type": "APP/PROC/WEB"},
				Log:  &Log{Payload: []byte("line " + id + " of interval " + string(rune('0'+i))), Type: typ}})
		}
	}
	// Two older envelopes first: the cap of 18 expires them.
	s.Put(gauge(base-2, "0", map[string]GaugeValue{"cpu": {"percentage", 1}}), gauge(base-1, "0", map[string]GaugeValue{"cpu": {"percentage", 1}}))
	s.Put(all...)
	s.Put(Envelope{Timestamp: base, SourceID: other, Gauge: map[string]GaugeValue{"cpu": {"percentage", 1}}})
	now := time.Unix(0, base+time.Hour.Nanoseconds())
	srv := newAPI(t, s, now)
	c := lcclient.NewClient(srv.URL, lcclient.WithHTTPClient(withToken{}))
	ctx := context.Background()

	ts := func(i int) time.Time { return time.Unix(0, all[i].Timestamp) }
	want := func(pick func(Envelope) bool, envs ...Envelope) []*loggregator_v2.Envelope {
		var out []*loggregator_v2.Envelope
		for _, e := range envs {
			if pick == nil || pick(e) {
				out = append(out, toProto(e))
			}
		}
		return out
	}
	isLog := func(e Envelope) bool { return e.Log != nil }
	isGauge := func(e Envelope) bool { return e.Gauge != nil }
	reversed := func(envs []Envelope) []Envelope {
		out := make([]Envelope, len(envs))
		for i, e := range envs {
			out[len(envs)-1-i] = e
		}
		return out
	}
	counters := func(envs ...Envelope) []*loggregator_v2.Envelope {
		var out []*loggregator_v2.Envelope
		for _, e := range envs {
			if _, ok := e.Gauge["absolute_usage"]; ok {
				p := toProto(e)
				for k := range p.GetGauge().Metrics {
					if !strings.HasPrefix(k, "absolute_") {
						delete(p.GetGauge().Metrics, k)
					}
				}
				out = append(out, p)
			}
		}
		return out
	}
	tests := []struct {
		name  string
		start time.Time
		opts  []lcclient.ReadOption
		want  []*loggregator_v2.Envelope
	}{
		{"everything up to now", time.Unix(0, 0), nil, want(nil, all...)},
		{"start inclusive, end exclusive", ts(2), []lcclient.ReadOption{lcclient.WithEndTime(ts(8))}, want(nil, all[2:8]...)},
		{"limit", ts(1), []lcclient.ReadOption{lcclient.WithLimit(3)}, want(nil, all[1:4]...)},
		{"descending takes the newest", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithDescending(), lcclient.WithLimit(4)},
			want(nil, reversed(all)[:4]...)},
		{"descending within a range", ts(2), []lcclient.ReadOption{lcclient.WithDescending(), lcclient.WithEndTime(ts(8))},
			want(nil, reversed(all[2:8])...)},
		{"gauges", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_GAUGE)}, want(isGauge, all...)},
		{"logs", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_LOG)}, want(isLog, all...)},
		{"logs and gauges", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_LOG,
			logcache_v1.EnvelopeType_GAUGE)}, want(nil, all...)},
		{"any", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_ANY)}, want(nil, all...)},
		{"counters", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithEnvelopeTypes(logcache_v1.EnvelopeType_COUNTER)}, nil},
		{"name filter keeps the metrics it matches", time.Unix(0, 0), []lcclient.ReadOption{lcclient.WithNameFilter("^absolute_")},
			counters(all...)},
		{"an empty range", ts(len(all) - 1).Add(1), []lcclient.ReadOption{lcclient.WithEndTime(now)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Read(ctx, appGUID, tt.start, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d envelopes, want %d: %v", len(got), len(tt.want), got)
			}
			for i := range got {
				if !proto.Equal(got[i], tt.want[i]) {
					t.Errorf("envelope %d:\n got  %v\n want %v", i, got[i], tt.want[i])
				}
			}
		})
	}

	// Errors: a source the token may not read is a 404 to the client.
	if _, err := c.Read(ctx, other, time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("reading another's app: %v, want a 404", err)
	}
	if _, err := c.Read(ctx, appGUID, time.Unix(0, 0), lcclient.WithLimit(1001)); err == nil {
		t.Error("a limit over 1000 was taken")
	}

	// Walk pages through a window, three envelopes a read, to the window's end.
	var walked []*loggregator_v2.Envelope
	lcclient.Walk(ctx, appGUID, func(es []*loggregator_v2.Envelope) bool {
		walked = append(walked, es...)
		return true
	}, c.Read, lcclient.WithWalkStartTime(ts(1)), lcclient.WithWalkEndTime(ts(17)), lcclient.WithWalkLimit(3))
	if w := want(nil, all[1:17]...); len(walked) != len(w) {
		t.Errorf("Walk read %d envelopes, want %d", len(walked), len(w))
	} else {
		for i := range w {
			if !proto.Equal(walked[i], w[i]) {
				t.Errorf("Walk envelope %d:\n got  %v\n want %v", i, walked[i], w[i])
			}
		}
	}

	// Meta: the app the token may read, with the two envelopes the cap expired.
	meta, err := c.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := map[string]*logcache_v1.MetaInfo{appGUID: {Count: int64(len(all)), Expired: 2,
		OldestTimestamp: all[0].Timestamp, NewestTimestamp: all[len(all)-1].Timestamp}}
	if len(meta) != 1 || !proto.Equal(meta[appGUID], wantMeta[appGUID]) {
		t.Errorf("Meta = %v, want %v", meta, wantMeta)
	}
	// Without a token, meta is a 404, as the CF auth proxy answers.
	if m, err := lcclient.NewClient(srv.URL, lcclient.WithHTTPClient(testhttp.Client)).Meta(ctx); err == nil {
		t.Errorf("Meta without a token = %v, want an error (404)", m)
	}

	if v, err := c.LogCacheVersion(ctx); err != nil || v.String() != Version {
		t.Errorf("LogCacheVersion = %v, %v; want %s", v, err, Version)
	}
	if up, err := c.LogCacheVMUptime(ctx); err != nil || up != 90 {
		t.Errorf("LogCacheVMUptime = %d, %v; want 90", up, err)
	}
}
