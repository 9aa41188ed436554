package accesslog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const modernLine = `shop.apps.example.com - [2024-03-18T09:12:44.118327461Z] "GET /api/cart?session=4f1c HTTP/1.1" 200 17 1873 "https://shop.apps.example.com/checkout" "Mozilla/5.0 (X11; Linux x86_64)" "10.0.16.5:48212" "10.0.32.11:61002" x_forwarded_for:"198.51.100.23, 10.0.16.5" x_forwarded_proto:"https" vcap_request_id:"5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c" response_time:0.021734 gorouter_time:0.000412 app_id:"b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b" app_index:"2" instance_id:"d41c7a2e-9b3f-4e8a-6d1c-5f2b" x_cf_routererror:"-" x_b3_traceid:"5a3c8e0f6b2d4e1a7c9b0d8f3e2a1b4c" x_b3_spanid:"7c9b0d8f3e2a1b4c" x_b3_parentspanid:"-" b3:"5a3c8e0f6b2d4e1a7c9b0d8f3e2a1b4c-7c9b0d8f3e2a1b4c"`

func TestParseGorouterModern(t *testing.T) {
	r, err := ParseGorouter([]byte(modernLine + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Record{
		Time: time.Date(2024, 3, 18, 9, 12, 44, 118327461, time.UTC),
		Host: "shop.apps.example.com", Method: "GET", URI: "/api/cart?session=4f1c", Proto: "HTTP/1.1",
		Status: 200, BytesReceived: 17, BytesSent: 1873,
		Referer: "https://shop.apps.example.com/checkout", UserAgent: "Mozilla/5.0 (X11; Linux x86_64)",
		RemoteAddr: "10.0.16.5:48212", BackendAddr: "10.0.32.11:61002",
		XForwardedFor: "198.51.100.23, 10.0.16.5", XForwardedProto: "https",
		VcapRequestID: "5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c",
		ResponseTime:  21734 * time.Microsecond, GorouterTime: 412 * time.Microsecond,
		AppID: "b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b", AppIndex: 2,
		InstanceID: "d41c7a2e-9b3f-4e8a-6d1c-5f2b",
		B3TraceID:  "5a3c8e0f6b2d4e1a7c9b0d8f3e2a1b4c", B3SpanID: "7c9b0d8f3e2a1b4c",
		B3: "5a3c8e0f6b2d4e1a7c9b0d8f3e2a1b4c-7c9b0d8f3e2a1b4c",
		Present: FieldXForwardedFor | FieldXForwardedProto | FieldVcapRequestID | FieldResponseTime |
			FieldGorouterTime | FieldAppID | FieldAppIndex | FieldInstanceID | FieldRouterError |
			FieldB3TraceID | FieldB3SpanID | FieldB3ParentSpanID | FieldB3,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
}

// TestParseGorouterVariants checks the fields each variant is about.
func TestParseGorouterVariants(t *testing.T) {
	const tail = ` "-" "curl/8.5.0" "10.0.16.5:48212" "10.0.32.11:61002" x_forwarded_for:"198.51.100.23" x_forwarded_proto:"https" vcap_request_id:"5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c" `
	const head = `app.example.com - [2024-03-18T09:12:44.118327461Z] "GET / HTTP/1.1" 200 0 12`
	cases := []struct {
		name  string
		line  string
		check func(t *testing.T, r Record)
	}{
		{"no gorouter_time, no instance_id (cf-release)", head + tail + `response_time:0.142 app_id:"a1" app_index:"0"`, func(t *testing.T, r Record) {
			if r.Has(FieldGorouterTime) || r.Has(FieldInstanceID) || r.ResponseTime != 142*time.Millisecond || !r.Has(FieldAppIndex) || r.AppIndex != 0 {
				t.Errorf("%+v", r)
			}
		}},
		{"gorouter_time dash", head + tail + `response_time:1.5 gorouter_time:"-" app_id:"a1" app_index:"-"`, func(t *testing.T, r Record) {
			if r.Has(FieldGorouterTime) || r.Has(FieldAppIndex) || r.ResponseTime != 1500*time.Millisecond {
				t.Errorf("%+v", r)
			}
		}},
		{"optional fields", head + tail + `response_time:0.5 gorouter_time:0.1 app_id:"a1" app_index:"7" instance_id:"i" backend_time:0.4 dial_time:0.002 dns_time:0.001 tls_time:"-" failed_attempts:3 failed_attempts_time:0.09 local_address:"10.0.16.9:40000" x_cf_routererror:"-"`, func(t *testing.T, r Record) {
			if r.BackendTime != 400*time.Millisecond || r.DialTime != 2*time.Millisecond || r.DNSTime != time.Millisecond ||
				r.Has(FieldTLSTime) || r.FailedAttempts != 3 || r.FailedAttemptsTime != 90*time.Millisecond ||
				r.LocalAddress != "10.0.16.9:40000" || r.AppIndex != 7 || r.Extra != nil {
				t.Errorf("%+v", r)
			}
		}},
		{"extra headers", head + tail + `response_time:0.5 app_id:"a1" x_cf_routererror:"-" traceparent:"00-4bf9-00f0-01" x_tenant:"acme corp" x_empty:"-"`, func(t *testing.T, r Record) {
			want := map[string]string{"traceparent": "00-4bf9-00f0-01", "x_tenant": "acme corp", "x_empty": "-"}
			if !reflect.DeepEqual(r.Extra, want) {
				t.Errorf("Extra = %v, want %v", r.Extra, want)
			}
		}},
		{"router error with spaces", head + tail + `response_time:0.5 app_id:"a1" x_cf_routererror:"endpoint_failure (dial tcp 10.0.32.11:61002: connect: connection refused)"`, func(t *testing.T, r Record) {
			if r.RouterError != "endpoint_failure (dial tcp 10.0.32.11:61002: connect: connection refused)" {
				t.Errorf("RouterError = %q", r.RouterError)
			}
		}},
		{"HTTP/2.0 and IPv6", `h2.example.com - [2024-03-18T09:12:44.1Z] "POST /x HTTP/2.0" 201 5 6 "-" "-" "[2001:db8::17]:51554" "[fd00::b]:61001" x_forwarded_for:"2001:db8::42, 2001:db8::17" x_forwarded_proto:"https" vcap_request_id:"v" response_time:0.1 app_id:"a"`, func(t *testing.T, r Record) {
			if r.Proto != "HTTP/2.0" || r.RemoteAddr != "[2001:db8::17]:51554" || r.BackendAddr != "[fd00::b]:61001" || r.XForwardedFor != "2001:db8::42, 2001:db8::17" {
				t.Errorf("%+v", r)
			}
		}},
		{"dashes", `ghost.example.com - [2024-03-18T09:13:00Z] "GET / HTTP/1.1" "-" 0 0 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:0.000190 gorouter_time:0.000190 app_id:"-" app_index:"-" instance_id:"-" x_cf_routererror:"unknown_route"`, func(t *testing.T, r Record) {
			if r.Status != 0 || r.Referer != "" || r.RemoteAddr != "" || r.BackendAddr != "" || r.AppID != "" || r.VcapRequestID != "" ||
				!r.Has(FieldAppID|FieldInstanceID) || r.Has(FieldAppIndex) || r.RouterError != "unknown_route" {
				t.Errorf("%+v", r)
			}
		}},
		{"escaped quotes in user agent", head + ` "-" "Agent \"quoted\" \\ back\u00fc" "10.0.16.5:1" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:0.1 app_id:"-"`, func(t *testing.T, r Record) {
			if r.UserAgent != `Agent "quoted" \ backü` {
				t.Errorf("UserAgent = %q", r.UserAgent)
			}
		}},
		{"cf logs prefix", `   2020-07-06T10:45:55.83-0700 [RTR/0] OUT ` + modernLine, func(t *testing.T, r Record) {
			want, _ := ParseGorouter([]byte(modernLine))
			if !reflect.DeepEqual(r, want) {
				t.Errorf("with prefix %+v\nwithout    %+v", r, want)
			}
		}},
		{"no host (a request without a Host header)", ` - [2024-03-18T09:12:44Z] "GET / HTTP/1.0" 404 0 67` + tail + `response_time:0.1 app_id:"-" x_cf_routererror:"unknown_route"`, func(t *testing.T, r Record) {
			if r.Host != "" || r.Proto != "HTTP/1.0" || r.RouterError != "unknown_route" {
				t.Errorf("%+v", r)
			}
		}},
		{"extra headers cut to fit a UDP packet", head + tail + `response_time:0.5 app_id:"a1" x_cf_routererror:"-" x_a:"1" ...EXTRA-REQUEST-HEADERS-TOO-LONG-TO-LOG--TRUNCATED`, func(t *testing.T, r Record) {
			want := map[string]string{"x_a": "1", "truncated": "...EXTRA-REQUEST-HEADERS-TOO-LONG-TO-LOG--TRUNCATED"}
			if !reflect.DeepEqual(r.Extra, want) {
				t.Errorf("Extra = %v, want %v", r.Extra, want)
			}
		}},
		{"extra header named like a field", head + tail + `response_time:0.5 app_id:"a1" app_index:"3" x_cf_routererror:"-" x_forwarded_for:"203.0.113.5" response_time:"fast" app_index:"x"`, func(t *testing.T, r Record) {
			want := map[string]string{"x_forwarded_for": "203.0.113.5", "response_time": "fast", "app_index": "x"}
			if r.XForwardedFor != "198.51.100.23" || r.ResponseTime != 500*time.Millisecond || r.AppIndex != 3 || !reflect.DeepEqual(r.Extra, want) {
				t.Errorf("XForwardedFor %q ResponseTime %v Extra %v; want the first occurrences to count, %v in Extra", r.XForwardedFor, r.ResponseTime, r.Extra, want)
			}
		}},
		{"extra header names are HTTP tokens", head + tail + `response_time:0.5 app_id:"a1" x_cf_routererror:"-" 1999:"1999" x_odd~name!:"v" x_empty:"-"`, func(t *testing.T, r Record) {
			want := map[string]string{"1999": "1999", "x_odd~name!": "v", "x_empty": "-"}
			if !reflect.DeepEqual(r.Extra, want) {
				t.Errorf("Extra = %v, want %v", r.Extra, want)
			}
		}},
		{"cf logs prefix, +0000 and source index 12", `2026-11-22T13:05:01.12+0000 [RTR/12] OUT ` + modernLine, func(t *testing.T, r Record) {
			if r.Host != "shop.apps.example.com" || r.Time.Nanosecond() != 118327461 {
				t.Errorf("%+v", r)
			}
		}},
		{"absolute-form URI, escapes in the request line", `a.example.com - [2024-03-18T09:12:44Z] "GET http://a.example.com/x?q=\"y\"&z=\xff HTTP/1.1" 200 0 1` + tail + `response_time:"-" gorouter_time:"-" app_id:"a1"`, func(t *testing.T, r Record) {
			if r.Method != "GET" || r.URI != "http://a.example.com/x?q=\"y\"&z=\xff" || r.Proto != "HTTP/1.1" || r.Has(FieldResponseTime) || r.Has(FieldGorouterTime) {
				t.Errorf("%+v", r)
			}
		}},
		{"cf-deployment 12 timestamp", strings.Replace(head, "2024-03-18T09:12:44.118327461Z", "2021-11-09T22:41:05.009+0000", 1) + tail + `response_time:0.1 app_id:"a"`, func(t *testing.T, r Record) {
			if !r.Time.Equal(time.Date(2021, 11, 9, 22, 41, 5, 9e6, time.UTC)) {
				t.Errorf("Time = %v", r.Time)
			}
		}},
		{"cf-release timestamp", strings.Replace(head, "2024-03-18T09:12:44.118327461Z", "02/06/2017:14:03:27.532 +0000", 1) + tail + `response_time:0.1 app_id:"a"`, func(t *testing.T, r Record) {
			if !r.Time.Equal(time.Date(2017, 6, 2, 14, 3, 27, 532e6, time.UTC)) {
				t.Errorf("Time = %v", r.Time)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseGorouter([]byte(c.line))
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestParseErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct {
		parse    ParseFunc
		line     string
		column   int
		expected string
	}{
		{ParseGorouter, `a.example.com - [2024-03-18T09:12:44Z] "GET / HTTP/1.1" 2OO 0 1`, 57, "HTTP status"},
		{ParseGorouter, `a.example.com - [2024-03-18T09:12:44Z] "GET / HTTP/1.1" 200 0 1 "-" "-" "-" "-" x_forwarded_for:"-" x_forwarded_proto:"-" vcap_request_id:"-" response_time:slow app_id:"-"`, 157, "seconds"},
		{ParseGorouter, `a.example.com - [2024-03-18T09:12:44Z] "GET / HTTP/1.1" 200 0 1 "-" "-" "-" "-" x_forwarded_for:"-"`, 100, "x_forwarded_proto"},
		{ParseGorouter, `a.example.com - [soon] "GET / HTTP/1.1" 200 0 1`, 18, "timestamp"},
		{ParseGorouter, `2020-07-06T10:45:55.83-0700 [APP/PROC/WEB/0] OUT hello`, 29, "[RTR/N]"},
		{ParseCombined, `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 2326`, 71, "referer"},
		{ParseCommon, `203.0.113.7 - - 10/Oct/2000:13:55:36 -0700 "GET / HTTP/1.0" 200 2326`, 17, "'['"},
		{ParseCommon, ``, 1, "an access-log line"},
	}
	for _, c := range cases {
		_, err := c.parse([]byte(c.line))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: err = %v, want a *ParseError", c.line, err)
			continue
		}
		if pe.Column != c.column || !strings.Contains(pe.Expected, c.expected) {
			t.Errorf("%q: %v; want column %d expecting %q", c.line, err, c.column, c.expected)
		}
	}
}

func TestParseCombined(t *testing.T) {
	r, err := ParseCombined([]byte(`2001:db8::1 - alice [18/Mar/2024:09:12:45 +0100] "GET /a?b=\"c\" HTTP/2.0" 304 - "https://example.com/" "Mozilla/5.0 \"Mobile\" Safari/604.1" 1534 vcap_request_id:"9f8e" response_time:0.001534 tenant=acme`))
	if err != nil {
		t.Fatal(err)
	}
	if r.RemoteAddr != "2001:db8::1" || r.URI != `/a?b="c"` || r.Proto != "HTTP/2.0" || r.Status != 304 || r.BytesSent != 0 ||
		r.Referer != "https://example.com/" || r.UserAgent != `Mozilla/5.0 "Mobile" Safari/604.1` ||
		r.VcapRequestID != "9f8e" || r.ResponseTime != 1534*time.Microsecond ||
		!reflect.DeepEqual(r.Extra, map[string]string{"auth_user": "alice", "trailing": "1534", "tenant": "acme"}) {
		t.Errorf("%+v", r)
	}
	if _, off := r.Time.Zone(); off != 3600 || r.Time.UTC().Hour() != 8 {
		t.Errorf("Time = %v", r.Time)
	}
}

// TestParsesOurRouter parses what the local foundation's router writes.
func TestParsesOurRouter(t *testing.T) {
	in, err := os.ReadFile("../../../foundation/router/testdata/access.log.golden")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		r, err := ParseGorouter(line)
		if err != nil {
			t.Errorf("%v\n%s", err, line)
			continue
		}
		if !r.Has(FieldGorouterTime|FieldInstanceID|FieldB3TraceID|FieldB3) || r.VcapRequestID == "" {
			t.Errorf("missing fields: %+v", r)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no lines")
	}
}

// TestKeyedFieldsByName keeps keyedFieldsByName and Record.set in step: every listed
// key fills a field of its own.
func TestKeyedFieldsByName(t *testing.T) {
	var all Field
	for name, f := range keyedFieldsByName {
		var r Record
		if expected := r.set(f, "1"); expected != "" || r.Present != f {
			t.Errorf("%s: set gave %q, Present %b; want %b", name, expected, r.Present, f)
		}
		if all&f != 0 {
			t.Errorf("%s: field %b listed twice", name, f)
		}
		all |= f
	}
	if all != FieldLocalAddress<<1-1 {
		t.Errorf("fields listed %b, want every Field up to FieldLocalAddress", all)
	}
}

func TestParser(t *testing.T) {
	for _, name := range Formats() {
		p, err := Parser(name)
		if err != nil || p == nil {
			t.Errorf("Parser(%q): nil parser or %v", name, err)
		}
	}
	if !reflect.DeepEqual(Formats(), []string{"combined", "common", "gorouter"}) {
		t.Errorf("Formats() = %v", Formats())
	}
	if _, err := Parser("nginx"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Parser(nginx) err = %v, want ErrUnknownFormat", err)
	}
}

func TestScanLines(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+10)
	in := modernLine + "\n\nnot a line\n" + long + "\r\n" + modernLine // no final newline
	var got []Record
	type badLine struct {
		n   int
		err error
	}
	var bads []badLine
	ok, nbad, err := ScanLines(strings.NewReader(in), ParseGorouter,
		func(r Record) { got = append(got, r) },
		func(n int, err error) { bads = append(bads, badLine{n, err}) })
	if err != nil {
		t.Fatal(err)
	}
	if ok != 2 || nbad != 2 || len(got) != 2 || len(bads) != 2 {
		t.Fatalf("ok %d bad %d, records %d, bad lines %v", ok, nbad, len(got), bads)
	}
	if bads[0].n != 3 || bads[1].n != 4 || !errors.Is(bads[1].err, ErrLineTooLong) {
		t.Errorf("bad lines = %v, want 3 (parse error) and 4 (too long)", bads)
	}
	var pe *ParseError
	if !errors.As(bads[0].err, &pe) {
		t.Errorf("line 3 error %v is not a *ParseError", bads[0].err)
	}
	if got[1].VcapRequestID != "5a3c8e0f-6b2d-4e1a-7c9b-0d8f3e2a1b4c" {
		t.Errorf("last line parsed as %+v", got[1])
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestScanLinesReadError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := ScanLines(failingReader{boom}, ParseGorouter, nil, nil)
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want it to wrap boom", err)
	}
	// A line cut short by the error is not a bad line: its end may be unread.
	in := io.MultiReader(strings.NewReader(modernLine+"\n"+modernLine[:40]), failingReader{boom})
	var bads []int
	ok, nbad, err := ScanLines(in, ParseGorouter, nil, func(n int, _ error) { bads = append(bads, n) })
	if ok != 1 || nbad != 0 || len(bads) != 0 || !errors.Is(err, boom) {
		t.Errorf("ok %d bad %d (lines %v), err %v; want 1 record, no bad line, boom", ok, nbad, bads, err)
	}
}

// TestUnclosedQuotesStayLinear parses a line of MaxLineBytes full of quotes that never
// close, which the tolerant parsers retry as tokens: quadratic work would take minutes.
func TestUnclosedQuotesStayLinear(t *testing.T) {
	head := `203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1 "-" "-" `
	for _, unit := range []string{`"a `, `k:"a `} {
		line := head + strings.Repeat(unit, (MaxLineBytes-len(head))/len(unit))
		start := time.Now()
		r, err := ParseCombined([]byte(line))
		if err != nil || len(r.Extra) == 0 {
			t.Fatalf("%s…: %v, Extra of %d keys", unit, err, len(r.Extra))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s…: a %d-byte line took %v", unit, len(line), d)
		}
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0.004512": 4512 * time.Microsecond, "12": 12 * time.Second, "0.000000001": 1, "1.": time.Second,
		".5": 500 * time.Millisecond, "0.1234567899": 123456789,
	} {
		if got, ok := seconds([]byte(in)); !ok || got != want {
			t.Errorf("seconds(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", ".", "-1", "1e3", "0x10", "99999999999", "1.2.3"} {
		if got, ok := seconds([]byte(in)); ok {
			t.Errorf("seconds(%q) = %v, want failure", in, got)
		}
	}
	if FormatSeconds(4512*time.Microsecond) != "0.004512" {
		t.Errorf("FormatSeconds = %s", FormatSeconds(4512*time.Microsecond))
	}
}

func BenchmarkParseGorouter(b *testing.B) {
	line := []byte(modernLine)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseGorouter(line); err != nil {
			b.Fatal(err)
		}
	}
}
