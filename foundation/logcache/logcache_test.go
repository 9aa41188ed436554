package logcache

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

const (
	appGUID = "6f1c1b6e-0000-4000-8000-00000000a001"
	token   = "bearer good-token"
)

// auth lets token read appGUID only.
type auth struct{}

func (auth) Authenticated(h string) bool { return h == token }

func (auth) CanRead(h, source string) bool { return h == token && source == appGUID }

func gauge(ts int64, instance string, metrics map[string]GaugeValue) Envelope {
	return Envelope{Timestamp: ts, SourceID: appGUID, InstanceID: instance, Tags: map[string]string{"instance_id": instance}, Gauge: metrics}
}

func timestamps(envs []Envelope) []int64 {
	out := []int64{}
	for _, e := range envs {
		out = append(out, e.Timestamp)
	}
	return out
}

func TestStoreRead(t *testing.T) {
	t.Parallel()
	s := NewStore(5)
	// Out of order on purpose; 7 envelopes into a cap of 5 drop the two oldest (10, 20).
	for _, ts := range []int64{30, 10, 20, 50, 40, 60, 70} {
		s.Put(gauge(ts, "0", map[string]GaugeValue{"cpu": {"percentage", float64(ts)}}))
	}
	s.Put(Envelope{Timestamp: 55, SourceID: appGUID, Log: &Log{Payload: []byte("hello"), Type: "OUT"}})
	if n := s.Len(appGUID); n != 5 {
		t.Fatalf("Len = %d, want the cap 5", n)
	}
	tests := []struct {
		name string
		q    Query
		want []int64
	}{
		{"all", Query{Start: 0, End: 100, Limit: 100}, []int64{40, 50, 55, 60, 70}},
		{"start inclusive, end exclusive", Query{Start: 50, End: 60, Limit: 100}, []int64{50, 55}},
		{"limit", Query{Start: 0, End: 100, Limit: 2}, []int64{40, 50}},
		{"descending takes the newest", Query{Start: 0, End: 100, Limit: 2, Descending: true}, []int64{70, 60}},
		{"gauges", Query{Start: 0, End: 100, Limit: 100, Types: []string{TypeGauge}}, []int64{40, 50, 60, 70}},
		{"logs", Query{Start: 0, End: 100, Limit: 100, Types: []string{TypeLog}}, []int64{55}},
		{"name filter drops the log and gauges without a match", Query{Start: 0, End: 100, Limit: 100,
			NameFilter: func(n string) bool { return n == "memory" }}, []int64{}},
		{"empty range", Query{Start: 80, End: 100, Limit: 100}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.SourceID = appGUID
			if got := timestamps(s.Read(tt.q)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Read = %v, want %v", got, tt.want)
			}
		})
	}
	if got := s.Read(Query{SourceID: "other", End: 100, Limit: 10}); got != nil {
		t.Errorf("unknown source: %v, want nil", got)
	}
	s.Forget(appGUID)
	if s.Len(appGUID) != 0 {
		t.Error("Forget kept envelopes")
	}
}

func newAPI(t *testing.T, s *Store, now time.Time) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(APIConfig{Store: s, Auth: auth{}, Clock: func() time.Time { return now },
		Started: now.Add(-90 * time.Second)}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, u, authorization string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The two gauge envelopes Diego's rep emits per container and interval
// (diego-logging-client SendAppMetrics), read back exactly in the JSON log-cache's
// gateway writes. The golden file is written by hand from the protojson rules
// (EmitUnpopulated, UseProtoNames: int64 as strings, empty maps as {}); there is no
// -update flag on purpose.
func TestReadGaugeGolden(t *testing.T) {
	t.Parallel()
	tags := map[string]string{"app_id": appGUID, "app_name": "bulletin", "instance_id": "0", "origin": "rep",
		"process_id": appGUID, "process_instance_id": "0b7a5e55-1d1e-4a8b-9c3f-5a1d2b3c4d5e", "process_type": "web", "source_id": appGUID}
	s := NewStore(0)
	base := int64(1_700_000_000_000_000_000)
	s.Put(Envelope{Timestamp: base, SourceID: appGUID, InstanceID: "0", Tags: tags, Gauge: map[string]GaugeValue{
		"cpu": {"percentage", 37.5}, "memory": {"bytes", 50 << 20}, "disk": {"bytes", 4096},
		"memory_quota": {"bytes", 256 << 20}, "disk_quota": {"bytes", 1 << 30}}},
		Envelope{Timestamp: base + 1000, SourceID: appGUID, InstanceID: "0", Tags: tags, Gauge: map[string]GaugeValue{
			"container_age": {"nanoseconds", 10e9}, "cpu_entitlement": {"percentage", 150},
			"absolute_usage": {"nanoseconds", 1234567890}, "absolute_entitlement": {"nanoseconds", 2.5e9}}},
		// Outside the range read below.
		Envelope{Timestamp: base + 5000, SourceID: appGUID, InstanceID: "1", Gauge: map[string]GaugeValue{"cpu": {"percentage", 1}}})
	srv := newAPI(t, s, time.Unix(0, base+10_000))

	v := url.Values{"envelope_types": {"GAUGE"}, "start_time": {strconv.FormatInt(base, 10)},
		"end_time": {strconv.FormatInt(base+5000, 10)}, "limit": {"1000"}}
	code, body := get(t, srv.URL+"/api/v1/read/"+appGUID+"?"+v.Encode(), token)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "read_gauge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, body)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("answer differs from testdata/read_gauge.json:\n%s", g)
	}
}

func TestReadLogShape(t *testing.T) {
	t.Parallel()
	s := NewStore(0)
	s.Put(Envelope{Timestamp: 5, SourceID: appGUID, InstanceID: "1", Log: &Log{Payload: []byte("hi\n")}})
	srv := newAPI(t, s, time.Unix(0, 100))
	code, body := get(t, srv.URL+"/api/v1/read/"+appGUID+"?envelope_types=LOG&envelope_types=GAUGE", token)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	const want = `{"envelopes":{"batch":[{"timestamp":"5","source_id":"` + appGUID + `","instance_id":"1","deprecated_tags":{},"tags":{},"log":{"payload":"aGkK","type":"OUT"}}]}}`
	if strings.TrimSpace(string(body)) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
}

// The defaults: end_time is now (exclusive), limit 100.
func TestReadDefaults(t *testing.T) {
	t.Parallel()
	s := NewStore(0)
	for i := range 150 {
		s.Put(gauge(int64(i), "0", map[string]GaugeValue{"cpu": {"percentage", 1}}))
	}
	srv := newAPI(t, s, time.Unix(0, 120))
	code, body := get(t, srv.URL+"/api/v1/read/"+appGUID+"?descending=true", token)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var r struct {
		Envelopes struct {
			Batch []struct{ Timestamp string }
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	b := r.Envelopes.Batch
	if len(b) != DefaultLimit || b[0].Timestamp != "119" || b[len(b)-1].Timestamp != "20" {
		t.Errorf("got %d envelopes from %s to %s, want 100 from 119 (before now = 120) down to 20", len(b), b[0].Timestamp, b[len(b)-1].Timestamp)
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	s := NewStore(0)
	s.Put(gauge(1, "0", map[string]GaugeValue{"cpu": {"percentage", 1}}))
	srv := newAPI(t, s, time.Unix(0, 100))
	tests := []struct {
		name, path, auth string
		status           int
		code             float64 // google.rpc.Status code; 0: empty body
		message          string
	}{
		{"no token", "/api/v1/read/" + appGUID, "", 404, 0, ""},
		{"bad token", "/api/v1/read/" + appGUID, "bearer nope", 404, 0, ""},
		{"unknown source", "/api/v1/read/someone-else", token, 404, 0, ""},
		{"limit over 1000", "/api/v1/read/" + appGUID + "?limit=1001", token, 500, 2, "limit (1001) must be 1000 or less"},
		{"negative limit", "/api/v1/read/" + appGUID + "?limit=-1", token, 500, 2, "limit (-1) must be greater than zero"},
		{"start after end", "/api/v1/read/" + appGUID + "?start_time=10&end_time=5", token, 500, 2, "StartTime (10) must be before EndTime (5)"},
		{"bad type", "/api/v1/read/" + appGUID + "?envelope_types=METRIC", token, 400, 3, `parsing field "envelope_types": "METRIC" is not a valid EnvelopeType`},
		{"bad start", "/api/v1/read/" + appGUID + "?start_time=yesterday", token, 400, 3, `parsing field "start_time": "yesterday" is not a valid int64`},
		{"bad filter", "/api/v1/read/" + appGUID + "?name_filter=(", token, 500, 2, "name filter must be a valid regular expression: error parsing regexp: missing closing ): `(`"},
		{"meta without a token", "/api/v1/meta", "", 404, 0, ""},
		{"meta with a bad token", "/api/v1/meta", "bearer nope", 404, 0, ""},
		{"other paths", "/api/v1/query?query=cpu", token, 404, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv.URL+tt.path, tt.auth)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			if tt.code == 0 {
				return
			}
			var st map[string]any
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			want := map[string]any{"code": tt.code, "message": tt.message, "details": []any{}}
			if !reflect.DeepEqual(st, want) {
				t.Errorf("body %v, want %v", st, want)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	srv := newAPI(t, NewStore(0), time.Unix(1000, 0))
	code, body := get(t, srv.URL+"/api/v1/info", "")
	if code != 200 || strings.TrimSpace(string(body)) != `{"version":"`+Version+`","vm_uptime":"90"}` {
		t.Errorf("info: %d %s", code, body)
	}
}
