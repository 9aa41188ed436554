package accesslog

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parsers' output")

var fieldNames = [...]struct {
	f    Field
	name string
}{
	{FieldXForwardedFor, "x_forwarded_for"}, {FieldXForwardedProto, "x_forwarded_proto"},
	{FieldVcapRequestID, "vcap_request_id"}, {FieldResponseTime, "response_time"},
	{FieldGorouterTime, "gorouter_time"}, {FieldAppID, "app_id"}, {FieldAppIndex, "app_index"},
	{FieldInstanceID, "instance_id"}, {FieldRouterError, "x_cf_routererror"},
	{FieldB3TraceID, "x_b3_traceid"}, {FieldB3SpanID, "x_b3_spanid"},
	{FieldB3ParentSpanID, "x_b3_parentspanid"}, {FieldB3, "b3"},
	{FieldBackendTime, "backend_time"}, {FieldDialTime, "dial_time"}, {FieldDNSTime, "dns_time"},
	{FieldTLSTime, "tls_time"}, {FieldFailedAttempts, "failed_attempts"},
	{FieldFailedAttemptsTime, "failed_attempts_time"}, {FieldLocalAddress, "local_address"},
}

// goldenRecord is a Record as the golden files show it: durations as text, Present as
// names, zero values left out.
func goldenRecord(r Record) map[string]any {
	m := map[string]any{"Time": r.Time.Format("2006-01-02T15:04:05.999999999Z07:00")}
	add := func(k string, v any, keep bool) {
		if keep {
			m[k] = v
		}
	}
	for k, v := range map[string]string{
		"Host": r.Host, "Method": r.Method, "URI": r.URI, "Proto": r.Proto, "Referer": r.Referer,
		"UserAgent": r.UserAgent, "RemoteAddr": r.RemoteAddr, "BackendAddr": r.BackendAddr,
		"XForwardedFor": r.XForwardedFor, "XForwardedProto": r.XForwardedProto,
		"VcapRequestID": r.VcapRequestID, "AppID": r.AppID, "InstanceID": r.InstanceID,
		"RouterError": r.RouterError, "B3TraceID": r.B3TraceID, "B3SpanID": r.B3SpanID,
		"B3ParentSpanID": r.B3ParentSpanID, "B3": r.B3, "LocalAddress": r.LocalAddress,
	} {
		add(k, v, v != "")
	}
	add("Status", r.Status, true)
	add("BytesReceived", r.BytesReceived, r.BytesReceived != 0)
	add("BytesSent", r.BytesSent, true)
	for k, v := range map[string]struct {
		d int64
		f Field
	}{
		"ResponseTime":       {int64(r.ResponseTime), FieldResponseTime},
		"GorouterTime":       {int64(r.GorouterTime), FieldGorouterTime},
		"BackendTime":        {int64(r.BackendTime), FieldBackendTime},
		"DialTime":           {int64(r.DialTime), FieldDialTime},
		"DNSTime":            {int64(r.DNSTime), FieldDNSTime},
		"TLSTime":            {int64(r.TLSTime), FieldTLSTime},
		"FailedAttemptsTime": {int64(r.FailedAttemptsTime), FieldFailedAttemptsTime},
	} {
		add(k, fmt.Sprintf("%dns", v.d), r.Has(v.f) || v.d != 0)
	}
	add("AppIndex", r.AppIndex, r.Has(FieldAppIndex) || r.AppIndex != 0)
	add("FailedAttempts", r.FailedAttempts, r.Has(FieldFailedAttempts) || r.FailedAttempts != 0)
	var present []string
	for _, fn := range fieldNames {
		if r.Has(fn.f) {
			present = append(present, fn.name)
		}
	}
	add("Present", present, len(present) > 0)
	add("Extra", r.Extra, r.Extra != nil)
	return m
}

// TestGolden parses every line of testdata/<name>.log and compares each result (record
// or error) with testdata/<name>.<format>.golden; -update rewrites the golden files.
func TestGolden(t *testing.T) {
	cases := []struct {
		file   string
		format Format
	}{
		{"gorouter.log", Gorouter},
		{"gorouter-bad.log", Gorouter},
		{"syslog-https.log", Gorouter}, // a drain's HTTPS bodies, one a line
		{"syslog-tcp.log", Gorouter},   // a TCP drain's stream: octet counts before each
		{"syslog-bad.log", Gorouter},
		{"common.log", Common},
		{"combined.log", Combined},
		{"combined.log", Common},
		{"combined-bad.log", Combined},
	}
	for _, c := range cases {
		name := strings.TrimSuffix(c.file, ".log") + "." + string(c.format)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			for i, line := range bytes.Split(bytes.TrimSuffix(in, []byte("\n")), []byte("\n")) {
				rec, err := c.format.Parse(line)
				entry := map[string]any{"line": i + 1}
				if err != nil {
					entry["error"] = err.Error()
				} else {
					entry["record"] = goldenRecord(rec)
				}
				b, err := json.MarshalIndent(entry, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				out.Write(b)
				out.WriteByte('\n')
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("output differs from %s (go test -update rewrites it); got:\n%s", golden, out.String())
			}
		})
	}
}
