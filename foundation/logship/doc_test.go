package logship

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

var apps = fakeApps{
	"b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b": {Name: "shop", SpaceName: "prod", SpaceGUID: "5pace-0001", OrgName: "Acme", OrgGUID: "0rg-0001"},
	"f00dbabe-0000-4000-8000-00000000cafe": {Name: "pay", SpaceName: "prod", SpaceGUID: "5pace-0001", OrgName: "Acme", OrgGUID: "0rg-0001"},
	"6f1a3c2e-1b2d-4c3e-8f4a-5b6c7d8e9f01": {Name: "dora", SpaceName: "dev", SpaceGUID: "5pace-0002", OrgName: "Acme", OrgGUID: "0rg-0001"},
}

type fakeApps map[string]AppInfo

func (f fakeApps) App(guid string) (AppInfo, bool) { a, ok := f[guid]; return a, ok }

var _ AppLookup = fakeApps(nil)

var appIDs = []string{"b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b", "f00dbabe-0000-4000-8000-00000000cafe", "6f1a3c2e-1b2d-4c3e-8f4a-5b6c7d8e9f01"}

var base = time.Date(2024, 3, 18, 9, 0, 0, 0, time.UTC)

// routerLine is the i-th of a family of realistic gorouter lines: three apps, a mix of
// statuses, IPv6 clients, lines with and without gorouter_time and tracing headers.
func routerLine(i int) string {
	app := appIDs[i%len(appIDs)]
	status := []int{200, 200, 201, 304, 404, 502}[i%6]
	remote := fmt.Sprintf("10.0.16.%d:%d", 5+i%3, 40000+i)
	if i%7 == 0 {
		remote = fmt.Sprintf("[2001:db8:4:1::%x]:%d", i, 40000+i)
	}
	gorouter := fmt.Sprintf("gorouter_time:0.000%03d ", 100+i%900)
	if i%5 == 0 {
		gorouter = `gorouter_time:"-" `
	}
	trace := fmt.Sprintf("%032x", 0xabc000+i)
	return fmt.Sprintf(`shop.apps.example.com - [%s] "GET /items/%d?page=2 HTTP/1.1" %d 0 %d "-" "hey/0.0.1" "%s" "10.0.32.11:61002" x_forwarded_for:"198.51.100.%d, 10.0.16.5" x_forwarded_proto:"https" vcap_request_id:"%s" response_time:0.%06d %sapp_id:"%s" app_index:"%d" instance_id:"inst-%d" x_cf_routererror:"-" x_b3_traceid:"%s" x_b3_spanid:"%016x" x_b3_parentspanid:"-" b3:"%s-%016x"`,
		base.Add(time.Duration(i)*10*time.Millisecond).Format("2006-01-02T15:04:05.000000000Z"),
		i, status, 100+i, remote, i%250, uuid(trace), 1000+i*37, gorouter, app, i%4, i%4, trace, i, trace, i)
}

func uuid(h string) string {
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func TestDocumentShape(t *testing.T) {
	line := `pay.apps.example.com - [2024-03-18T09:12:45.500000000Z] "POST /charge?x=1 HTTP/2.0" 502 218 67 "-" "okhttp/4.12.0" "[2001:db8:4:1::17]:51554" "10.0.32.20:61001" x_forwarded_for:"2001:db8:9::42, 10.0.16.5" x_forwarded_proto:"https" vcap_request_id:"c0ffee00-1234-4abc-8def-0123456789ab" response_time:3.000518 gorouter_time:0.000840 app_id:"f00dbabe-0000-4000-8000-00000000cafe" app_index:"1" instance_id:"9a8b" backend_time:2.999100 failed_attempts:2 x_cf_routererror:"endpoint_failure (context deadline exceeded)" x_b3_traceid:"c0ffee0012344abc8def0123456789ab" x_b3_spanid:"8def0123456789ab" x_b3_parentspanid:"-" b3:"-" traceparent:"00-c0ff-01"`
	rec, err := accesslog.ParseGorouter([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	app, ok := apps.App(rec.AppID)
	d := newDocument(line, &rec, app, ok)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"@timestamp":  "2024-03-18T09:12:48.500Z", // emitted when the request ended
		"@type":       "LogMessage",
		"@index_type": "app",
		"@input":      "syslog",
		"@message":    line,
		"@level":      "ERROR",
		"@source":     map[string]any{"type": "RTR", "component": "gorouter"},
		"@cf": map[string]any{"app": "pay", "app_id": "f00dbabe-0000-4000-8000-00000000cafe",
			"space": "prod", "space_id": "5pace-0001", "org": "Acme", "org_id": "0rg-0001"},
		"tags": []any{"app", "logmessage", "logmessage-rtr"},
		"rtr": map[string]any{
			"hostname": "pay.apps.example.com", "timestamp": "2024-03-18T09:12:45.500000000Z",
			"verb": "POST", "path": "/charge?x=1", "http_spec": "HTTP/2.0", "status": 502.0,
			"request_bytes_received": 218.0, "body_bytes_sent": 67.0,
			"referer": "-", "http_user_agent": "okhttp/4.12.0",
			"src":         map[string]any{"host": "2001:db8:4:1::17", "port": 51554.0},
			"dst":         map[string]any{"host": "10.0.32.20", "port": 61001.0},
			"remote_addr": "2001:db8:9::42", "x_forwarded_for": []any{"2001:db8:9::42", "10.0.16.5"},
			"x_forwarded_proto": "https", "vcap_request_id": "c0ffee00-1234-4abc-8def-0123456789ab",
			"response_time_sec": 3.000518, "response_time_ms": 3000.518,
			"gorouter_time_sec": 0.00084, "gorouter_time_ms": 0.84,
			"app": map[string]any{"id": "f00dbabe-0000-4000-8000-00000000cafe", "index": 1.0},
			"extra": map[string]any{
				"instance_id": "9a8b", "x_cf_routererror": "endpoint_failure (context deadline exceeded)",
				"x_b3_traceid": "c0ffee0012344abc8def0123456789ab", "x_b3_spanid": "8def0123456789ab",
				"x_b3_parentspanid": "-", "b3": "-", "traceparent": "00-c0ff-01",
				"backend_time": "2.999100", "failed_attempts": "2",
			},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("document:\n%s", g)
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s: got %v, want %v", k, got[k], want[k])
			}
		}
	}
}

func TestDocumentWithoutAppOrGorouterTime(t *testing.T) {
	line := `ghost.example.com - [2024-03-18T09:13:00Z] "GET / HTTP/1.1" "-" 0 0 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:0.000190 gorouter_time:"-" app_id:"-" app_index:"-"`
	rec, err := accesslog.ParseGorouter([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(newDocument(line, &rec, AppInfo{}, false))
	s := string(b)
	for _, absent := range []string{`"status"`, `"gorouter_time_ms"`, `"index"`, `"src"`, `"dst"`, `"app":"`, `"extra"`} {
		if strings.Contains(s, absent) {
			t.Errorf("document has %s: %s", absent, s)
		}
	}
	for _, present := range []string{`"remote_addr":"-"`, `"x_forwarded_for":["-"]`, `"app":{"id":"-"}`, `"@cf":{}`, `"response_time_ms":0.19`} {
		if !strings.Contains(s, present) {
			t.Errorf("document lacks %s: %s", present, s)
		}
	}
}

func TestIndexName(t *testing.T) {
	at := time.Date(2024, 3, 8, 23, 59, 0, 0, time.FixedZone("x", 3600)) // 22:59 UTC
	cf := cfMeta{Org: "Acme Corp", Space: "Prod"}
	for pattern, want := range map[string]string{
		"logs-app-%{+YYYY.MM.dd}":                               "logs-app-2024.03.08",
		"logs-app-%{[@cf][org]}-%{[@cf][space]}-%{+yyyy.MM.dd}": "logs-app-acme_corp-prod-2024.03.08",
		"logs-app-%{[@cf][app]}-%{+YYYY.MM}":                    "logs-app-%{[@cf][app]}-2024.03",
		"logstash-YYYY.MM.dd":                                   "logstash-2024.03.08",
		"router-logs":                                           "router-logs",
		"Hourly-%{+YYYY.MM.dd.HH}":                              "hourly-2024.03.08.22",
		"broken-%{+YYYY":                                        "broken-%{+yyyy",
	} {
		if got := indexName(pattern, at, cf); got != want {
			t.Errorf("indexName(%q) = %q, want %q", pattern, got, want)
		}
	}
	for pattern, want := range map[string]string{
		"logs-app-%{+YYYY.MM.dd}": "logs-app-*", "logstash-YYYY.MM.dd": "logstash-*",
		"router-logs": "router-logs", "%{+YYYY}": "",
	} {
		if got := templatePattern(pattern); got != want {
			t.Errorf("templatePattern(%q) = %q, want %q", pattern, got, want)
		}
	}
}
