package accesslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// seed adds every line of the testdata logs to f's corpus.
func seed(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.log"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(modernLine))
	f.Add([]byte(`   2020-07-06T10:45:55.83-0700 [RTR/0] OUT ` + modernLine))
	f.Add([]byte(`<14>1 2026-11-24T18:57:01.140329+00:00 o.s.a guid [RTR/3] - [tags@47450 source_type="RTR"] ` + modernLine))
	f.Add([]byte(`512 <14>1 - - - [RTR/0] -  ` + modernLine))
}

// checkResult holds for every parser: an error is a *ParseError pointing into the
// line, and a Record comes only without one; a Record keeps the invariants of
// checkRecord; a line parses the same with a CRLF after it.
func checkResult(t *testing.T, parse ParseFunc, line []byte, r Record, err error) {
	t.Helper()
	r2, err2 := parse(append(line[:len(line):len(line)], '\r', '\n'))
	if (err == nil) != (err2 == nil) || !reflect.DeepEqual(r, r2) {
		t.Fatalf("with CRLF: %v, %+v\nwithout: %v, %+v", err2, r2, err, r)
	}
	if err == nil {
		checkRecord(t, r)
		return
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *ParseError", err)
	}
	if pe.Column < 1 || pe.Column > len(line)+1 {
		t.Fatalf("column %d outside a line of %d bytes", pe.Column, len(line))
	}
	if !reflect.DeepEqual(r, Record{}) {
		t.Fatalf("a failed parse returned %+v", r)
	}
}

// checkRecord checks what holds for every parsed Record: no negative numbers, a
// duration or number only with its Present bit, and a JSON form that is valid JSON
// carrying time and bytes_sent.
func checkRecord(t *testing.T, r Record) {
	t.Helper()
	if r.Status < 0 || r.Status > 999 || r.BytesReceived < 0 || r.BytesSent < 0 || r.AppIndex < 0 || r.FailedAttempts < 0 {
		t.Fatalf("impossible values %+v", r)
	}
	for _, d := range []struct {
		v time.Duration
		f Field
	}{
		{r.ResponseTime, FieldResponseTime}, {r.GorouterTime, FieldGorouterTime}, {r.BackendTime, FieldBackendTime},
		{r.DialTime, FieldDialTime}, {r.DNSTime, FieldDNSTime}, {r.TLSTime, FieldTLSTime},
		{r.FailedAttemptsTime, FieldFailedAttemptsTime},
	} {
		if d.v < 0 || d.v != 0 && !r.Has(d.f) {
			t.Fatalf("duration %v of field %b (present: %v) in %+v", d.v, d.f, r.Has(d.f), r)
		}
	}
	if r.AppIndex != 0 && !r.Has(FieldAppIndex) || r.FailedAttempts != 0 && !r.Has(FieldFailedAttempts) {
		t.Fatalf("a number without its Present bit: %+v", r)
	}
	if r.Present&^(FieldLocalAddress<<1-1) != 0 {
		t.Fatalf("Present %b has bits of no field", r.Present)
	}
	if _, ok := r.Extra[""]; ok || r.Extra != nil && len(r.Extra) == 0 {
		t.Fatalf("Extra %#v: an empty key, or empty but not nil", r.Extra)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("MarshalJSON wrote %s: %v", b, err)
	}
	if m["time"] != r.Time.Format(time.RFC3339Nano) || m["bytes_sent"] != float64(r.BytesSent) {
		t.Fatalf("JSON %s lacks time or bytes_sent of %+v", b, r)
	}
}

func FuzzParseGorouter(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseGorouter(line)
		checkResult(t, ParseGorouter, line, r, err)
		if err != nil {
			return
		}
		for _, k := range requiredKeys {
			// Present marks strings whenever their key is there; response_time:"-" is not.
			if k.f != FieldResponseTime && !r.Has(k.f) {
				t.Fatalf("parsed without %s: %+v", k.name, r)
			}
		}
		if bytes.IndexByte([]byte(r.Host), ' ') >= 0 {
			t.Fatalf("host %q has a space", r.Host)
		}
		// The `cf logs` prefix and a drain's syslog framing change nothing but the
		// columns.
		if n, _ := cfLogsPrefix(line); n > 0 {
			return // carries one already
		}
		if _, _, framed, _ := SyslogFrame(bytes.TrimLeft(line, " ")); framed {
			return
		}
		r2, err := ParseGorouter(append([]byte("2020-07-06T10:45:55.83-0700 [RTR/0] OUT "), line...))
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("with a cf logs prefix: %v\n%+v\nvs %+v", err, r2, r)
		}
		r3, err := ParseGorouter(append([]byte(`<14>1 2026-11-24T18:57:01.140329+00:00 o.s.a guid [RTR/3] - [tags@47450 source_type="RTR"] `), line...))
		if err != nil || !reflect.DeepEqual(r, r3) {
			t.Fatalf("in a syslog frame: %v\n%+v\nvs %+v", err, r3, r)
		}
	})
}

func FuzzParseCommon(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseCommon(line)
		checkResult(t, ParseCommon, line, r, err)
		if err == nil && (r.Host != "" || r.RemoteAddr == "" && !bytes.HasPrefix(line, []byte("- "))) {
			t.Fatalf("host %q, remote address %q", r.Host, r.RemoteAddr)
		}
	})
}

func FuzzParseCombined(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseCombined(line)
		checkResult(t, ParseCombined, line, r, err)
		if err == nil {
			// A combined line is a common line with more fields, the same up to them.
			c, err := ParseCommon(line)
			if err != nil {
				t.Fatalf("combined parses but common does not: %v", err)
			}
			if !c.Time.Equal(r.Time) || c.Method != r.Method || c.URI != r.URI || c.Status != r.Status || c.BytesSent != r.BytesSent || c.RemoteAddr != r.RemoteAddr {
				t.Fatalf("common %+v\ncombined %+v", c, r)
			}
		}
	})
}
