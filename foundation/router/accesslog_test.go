package router

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// startFixed starts a loopback backend that reads the request body and
// answers with body.
func startFixed(t testing.TB, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// TestAccessLogGolden runs requests one at a time through a router whose
// clock advances 1 ms per reading, so timestamps and durations are exact.
// A proxied request reads it at receipt, as the proxy starts, for
// X-Request-Start and before the body is written: response_time 3 ms,
// gorouter_time 1 ms.
// Ports and the request ids gorouter makes at random are masked.
func TestAccessLogGolden(t *testing.T) {
	t.Parallel()
	table := newTable(map[string]Route{
		"app.local": {AppGUID: appGUID, Backends: []Backend{
			{Addr: startFixed(t, "hello from b0\n"), Index: 0, InstanceGUID: "inst-0"},
			{Addr: startFixed(t, "hello from b1, a longer body\n"), Index: 1, InstanceGUID: "inst-1"},
		}},
		"empty.local": {AppGUID: otherGUID},
		"dead.local":  {AppGUID: otherGUID, Backends: []Backend{{Addr: deadAddr(t), Index: 3, InstanceGUID: "inst-dead"}}},
	})
	start := time.Date(2020, 7, 6, 17, 45, 55, 805305000, time.UTC)
	rt, sink := startRouter(t, table, steppingClock(start, time.Millisecond))

	b3 := func(v string) http.Header { return http.Header{"B3": {v}, "User-Agent": {"golden-client/1.0"}} }
	steps := []struct {
		method, host, path string
		header             http.Header
		body               string
		randomID           bool // the request id is random: mask it
	}{
		{method: "GET", host: "app.local", path: "/hello?name=gopher", header: http.Header{
			"User-Agent":        {"golden-client/1.0"},
			"Referer":           {"https://ref.example/page"},
			"X-Forwarded-For":   {"203.0.113.9"},
			"X-Vcap-Request-Id": {"client-chosen"},
			"X-B3-Traceid":      {"4bf92f3577b34da6a3ce929d0e0e4736"},
			"X-B3-Spanid":       {"00f067aa0ba902b7"},
			"X-B3-Parentspanid": {"00000000000000aa"},
		}},
		{method: "POST", host: "App.Local:8080", path: "/upload", body: "hello world", header: http.Header{
			"User-Agent":        {`agent "quoted" \ and ünïcode`},
			"X-Forwarded-Proto": {"https"},
			"B3":                {"80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90"},
		}},
		{method: "GET", host: "nope.local", path: "/missing", header: b3("a3ce929d0e0e47364bf92f3577b34da6-00f067aa0ba902b7")},
		{method: "GET", host: "empty.local", path: "/", header: b3("b3ce929d0e0e47364bf92f3577b34da6-00f067aa0ba902b7")},
		{method: "GET", host: "dead.local", path: "/", header: b3("c3ce929d0e0e47364bf92f3577b34da6-00f067aa0ba902b7")},
		{method: "GET", host: "app.local", path: "/", header: http.Header{
			"X-Cf-App-Instance": {"bogus"}, "B3": {"d3ce929d0e0e47364bf92f3577b34da6-00f067aa0ba902b7"}}},
		{method: "GET", host: "app.local", path: "/pinned", header: http.Header{
			"X-Cf-App-Instance": {appGUID + ":1"}, "B3": {"e3ce929d0e0e47364bf92f3577b34da6-00f067aa0ba902b7"}}},
		{method: "GET", host: "app.local", path: "/no-trace", header: http.Header{"User-Agent": {"golden-client/1.0"}}, randomID: true},
		{method: "GET", host: "app.local", path: "/64-bit-trace", header: http.Header{
			"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"72485a3953bb6124"}}, randomID: true},
	}
	var got strings.Builder
	for i, s := range steps {
		res, _ := do(t, rt, s.method, s.host, s.path, s.header, s.body)
		line := sink.next(t)
		if s.randomID {
			id := res.Header.Get("X-Vcap-Request-Id")
			if !gouuidV4.MatchString(id) {
				t.Fatalf("step %d: response request id %q", i, id)
			}
			hex := strings.ReplaceAll(id, "-", "")
			line = strings.ReplaceAll(line, id, "RANDOM-REQUEST-ID")
			line = strings.ReplaceAll(line, hex[16:], "RANDOM-SPAN")
			line = strings.ReplaceAll(line, hex[:16], "RANDOM-TRACE-HI")
		}
		got.WriteString(loopbackPort.ReplaceAllString(line, "127.0.0.1:PORT"))
	}

	path := filepath.Join("testdata", "access.log.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("access log differs from %s (run with -update to accept):\n got:\n%s\nwant:\n%s", path, got.String(), want)
	}
}

const (
	quoted  = `("(?:[^"\\]|\\.)*")`
	seconds = `(\d+\.\d{6}|"-")`
)

// accessLineRE is the whole gorouter access-log line, field by field.
var accessLineRE = regexp.MustCompile(`^(\S+) - \[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z)\] ` +
	quoted + ` (\d{3}|"-") (\d+) (\d+) ` + quoted + ` ` + quoted + ` ` + quoted + ` ` + quoted +
	` x_forwarded_for:` + quoted + ` x_forwarded_proto:` + quoted + ` vcap_request_id:` + quoted +
	` response_time:` + seconds + ` gorouter_time:` + seconds +
	` app_id:` + quoted + ` app_index:` + quoted + ` instance_id:` + quoted +
	` x_cf_routererror:` + quoted +
	` x_b3_traceid:` + quoted + ` x_b3_spanid:` + quoted + ` x_b3_parentspanid:` + quoted + ` b3:` + quoted + "\n$")

var accessLineFields = []string{"host", "time", "request", "status", "bytes_received", "bytes_sent",
	"referer", "user_agent", "remote_addr", "backend_addr", "x_forwarded_for", "x_forwarded_proto",
	"vcap_request_id", "response_time", "gorouter_time", "app_id", "app_index", "instance_id",
	"x_cf_routererror", "x_b3_traceid", "x_b3_spanid", "x_b3_parentspanid", "b3",
	"method", "uri", "proto"}

// parseAccessLine checks that line has every field in gorouter's order
// and returns them unquoted, the request split into method, uri and proto.
func parseAccessLine(line string) (map[string]string, error) {
	m := accessLineRE.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("not a complete gorouter access-log line: %q", line)
	}
	fields := map[string]string{}
	for i, name := range accessLineFields[:len(m)-1] {
		v := m[i+1]
		if strings.HasPrefix(v, `"`) {
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("field %s %s: %w", name, v, err)
			}
			v = u
		}
		fields[name] = v
	}
	req := strings.Split(fields["request"], " ")
	if len(req) != 3 {
		return nil, fmt.Errorf("request %q is not METHOD URI PROTO", fields["request"])
	}
	fields["method"], fields["uri"], fields["proto"] = req[0], req[1], req[2]
	if _, err := time.Parse(time.RFC3339Nano, fields["time"]); err != nil {
		return nil, fmt.Errorf("time: %w", err)
	}
	return fields, nil
}

func TestAccessLogLinesHaveAllFields(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "access.log.golden"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(golden), "\n")
	lines = lines[:len(lines)-1]
	if len(lines) != 9 {
		t.Fatalf("golden file has %d lines, want 9", len(lines))
	}
	// What each golden line must say, beyond having every field.
	want := []map[string]string{
		{"status": "200", "uri": "/hello?name=gopher", "bytes_sent": "14", "response_time": "0.003000", "gorouter_time": "0.001000",
			"x_forwarded_for": "203.0.113.9, 127.0.0.1", "x_forwarded_proto": "http", "referer": "https://ref.example/page",
			"vcap_request_id": "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", "app_id": appGUID, "app_index": "0", "instance_id": "inst-0",
			"b3": "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00000000000000aa", "x_b3_parentspanid": "00000000000000aa"},
		{"host": "App.Local:8080", "method": "POST", "bytes_received": "11", "user_agent": `agent "quoted" \ and ünïcode`,
			"x_forwarded_proto": "https", "app_index": "1", "vcap_request_id": "80f198ee-5634-3ba8-64fe-8b2a57d3eff7", "x_b3_traceid": "-"},
		{"status": "404", "x_cf_routererror": "unknown_route", "backend_addr": "-", "app_id": "-", "app_index": "-",
			"response_time": "0.001000", "gorouter_time": "0.000000", "x_forwarded_for": "-", "x_forwarded_proto": "-"},
		{"status": "503", "x_cf_routererror": "no_endpoints"},
		{"status": "502", "x_cf_routererror": "endpoint_failure (dial tcp 127.0.0.1:PORT: connect: connection refused)",
			"app_index": "3", "instance_id": "inst-dead"},
		{"status": "400", "x_cf_routererror": "invalid_cf_app_instance_header"},
		{"status": "200", "app_index": "1", "uri": "/pinned"},
		{"status": "200", "vcap_request_id": "RANDOM-REQUEST-ID", "x_b3_traceid": "RANDOM-TRACE-HIRANDOM-SPAN", "b3": "RANDOM-TRACE-HIRANDOM-SPAN-RANDOM-SPAN"},
		{"status": "200", "vcap_request_id": "RANDOM-REQUEST-ID", "x_b3_traceid": "463ac35c9f6413ad", "b3": "463ac35c9f6413ad-72485a3953bb6124"},
	}
	for i, line := range lines {
		f, err := parseAccessLine(line)
		if err != nil {
			t.Errorf("line %d: %v", i+1, err)
			continue
		}
		for k, v := range want[i] {
			if f[k] != v {
				t.Errorf("line %d: %s = %q, want %q", i+1, k, f[k], v)
			}
		}
	}
}

func TestParseAccessLineRejectsIncompleteLines(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "access.log.golden"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.SplitAfter(string(golden), "\n")[0]
	for _, drop := range []string{" gorouter_time:0.001000", ` instance_id:"inst-0"`, ` b3:"4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00000000000000aa"`} {
		if !strings.Contains(line, drop) {
			t.Fatalf("golden line 1 lacks %s", drop)
		}
		if _, err := parseAccessLine(strings.Replace(line, drop, "", 1)); err == nil {
			t.Errorf("line without %s parsed", drop)
		}
	}
}

func TestAppendQuotedInner(t *testing.T) {
	t.Parallel()
	tests := [][3]string{
		{"GET", "/plain", "HTTP/1.1"},
		{"GET", `/with"quote\and\\slashes`, "HTTP/1.0"},
		{"PUT", "/ünïcode/\u2028/\x00\x7f", "HTTP/1.1"},
		{"G\xffT", "/broken\xe2\x82", "\xe2HTTP/1.1"},
		{"", "", ""},
	}
	for _, tc := range tests {
		want := strconv.Quote(strings.Join(tc[:], " "))
		b := []byte{'"'}
		b = appendQuotedInner(b, tc[0])
		b = append(b, ' ')
		b = appendQuotedInner(b, tc[1])
		b = append(b, ' ')
		b = appendQuotedInner(b, tc[2])
		b = append(b, '"')
		if string(b) != want {
			t.Errorf("%q: got %s, want %s", tc, b, want)
		}
	}
}
