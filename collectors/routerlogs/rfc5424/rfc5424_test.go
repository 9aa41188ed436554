package rfc5424

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const cfLine = "<14>1 2026-11-24T18:57:01.140329+00:00 cfbench.apps.shop b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b [RTR/3] - " +
	`[tags@47450 app_id="b7e4c2a9" source_type="RTR"] shop.apps.example.com - [2026-11-24T18:57:01Z] "GET / HTTP/1.1" 200 0 1` + "\n"

func TestParseCF(t *testing.T) {
	m, err := Parse([]byte(cfLine))
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Priority: 14, Version: 1, Timestamp: time.Date(2026, 11, 24, 18, 57, 1, 140329000, time.UTC),
		Hostname: "cfbench.apps.shop", AppName: "b7e4c2a9-3f1d-4a6e-9c8b-2d5f7e1a0c3b", ProcID: "[RTR/3]"}
	if m.Priority != want.Priority || m.Version != 1 || !m.Timestamp.Equal(want.Timestamp) || m.Hostname != want.Hostname ||
		m.AppName != want.AppName || m.ProcID != want.ProcID || m.MsgID != "" {
		t.Fatalf("header %+v, want %+v", m, want)
	}
	if got := string(m.StructuredData); got != `[tags@47450 app_id="b7e4c2a9" source_type="RTR"]` {
		t.Errorf("structured data %q", got)
	}
	if got := string(m.Msg); !strings.HasPrefix(got, "shop.apps.example.com - [") || strings.HasSuffix(got, "\n") {
		t.Errorf("msg %q", got)
	}
	if cfLine[m.MsgOffset:] != string(m.Msg)+"\n" {
		t.Errorf("MsgOffset %d does not point at the message", m.MsgOffset)
	}
	typ, inst, ok := m.Source()
	if typ != "RTR" || inst != "3" || !ok || !m.IsRouter() {
		t.Errorf("Source() = %q, %q, %v", typ, inst, ok)
	}
}

func TestSource(t *testing.T) {
	for _, c := range []struct{ procID, typ, inst string }{
		{"[RTR/3]", "RTR", "3"}, {"[APP/PROC/WEB/0]", "APP/PROC/WEB", "0"}, {"[API]", "API", ""},
		{"[STG/0]", "STG", "0"}, {"1234", "", ""}, {"", "", ""},
	} {
		m := Message{ProcID: c.procID}
		typ, inst, _ := m.Source()
		if typ != c.typ || inst != c.inst {
			t.Errorf("%q: %q, %q; want %q, %q", c.procID, typ, inst, c.typ, c.inst)
		}
		if m.IsRouter() != (c.typ == "RTR") {
			t.Errorf("%q: IsRouter %v", c.procID, m.IsRouter())
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		in, field string
		col       int
	}{
		{"", FieldPriority, 1},
		{"14>1 - - - - - -", FieldPriority, 1},
		{"<192>1 - - - - - -", FieldPriority, 1},
		{"<014>1 - - - - - -", FieldPriority, 1},
		{"<1234>1 - - - - - -", FieldPriority, 1},
		{"<14>0 - - - - - -", FieldVersion, 5},
		{"<14>1- - - - - -", FieldVersion, 5},
		{"<14>1 2026-11-24 - - - - -", FieldTimestamp, 7},
		{"<14>1 2026-11-24T18:57:01.1234567Z - - - - -", FieldTimestamp, 7},
		{"<14>1 2026-11-24T18:57:01 - - - - -", FieldTimestamp, 7},
		{"<14>1 2026-11-24T25:57:01Z - - - - -", FieldTimestamp, 7},
		{"<14>1 - " + strings.Repeat("h", 256) + " - - - -", FieldHostname, 9},
		{"<14>1 - h " + strings.Repeat("a", 49) + " - - -", FieldAppName, 11},
		{"<14>1 - h a " + strings.Repeat("p", 129) + " - -", FieldProcID, 13},
		{"<14>1 - h a p " + strings.Repeat("m", 33) + " -", FieldMsgID, 15},
		{"<14>1 - h a p", FieldProcID, 13},
		{"<14>1 - h\x01 a p m -", FieldHostname, 9},
		{`<14>1 - h a p m [x a="b" msg`, FieldStructuredData, 29},
		{`<14>1 - h a p m [x a=b] msg`, FieldStructuredData, 21},
		{`<14>1 - h a p m [] msg`, FieldStructuredData, 18},
		{`<14>1 - h a p m [x]x msg`, FieldStructuredData, 20},
		{`<14>1 - h a p m -x msg`, FieldStructuredData, 17},
	} {
		_, err := Parse([]byte(c.in))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a *ParseError", c.in, err)
			continue
		}
		if pe.Field != c.field || pe.Column != c.col {
			t.Errorf("%q: %v; want field %s at column %d", c.in, err, c.field, c.col)
		}
	}
}

func TestParseTolerates(t *testing.T) {
	for _, c := range []struct{ in, msg, sd string }{
		// CF's agent without tags: no structured data, two spaces.
		{"<14>1 - h a [RTR/0] -  the line\n", "the line", ""},
		{"<14>1 - h a p m -", "", ""},
		{"<14>1 - h a p m - msg\r\n", "msg", ""},
		// Unescaped quotes in a tag value (the agent does not escape them), escapes.
		{`<14>1 - h a p m [t@1 a="x"y" b="c\"]d"][u@2] msg`, "msg", `[t@1 a="x"y" b="c\"]d"][u@2]`},
		{"<0>999 2026-11-24T18:57:01+01:00 h a p m - x", "x", ""},
	} {
		m, err := Parse([]byte(c.in))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if string(m.Msg) != c.msg || string(m.StructuredData) != c.sd {
			t.Errorf("%q: msg %q sd %q; want %q, %q", c.in, m.Msg, m.StructuredData, c.msg, c.sd)
		}
	}
}

// TestAppendRoundTrip writes messages as the agent does and parses them back.
func TestAppendRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 24, 18, 57, 1, 140329123, time.FixedZone("x", 3600))
	for _, m := range []Message{
		{Priority: PriorityOut, Timestamp: ts, Hostname: "o.s.a", AppName: "guid", ProcID: ProcID("RTR", "3"),
			StructuredData: []byte(`[tags@47450 source_type="RTR"]`), Msg: []byte("line one")},
		{Priority: PriorityErr, ProcID: ProcID("API", ""), Msg: []byte("ends\n")},
		{Priority: PriorityOut, Hostname: "h", Msg: nil},
	} {
		b := Append(nil, &m)
		if !bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%q: no newline at the end", b)
		}
		got, err := Parse(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if got.Priority != m.Priority || got.Version != 1 || got.Hostname != m.Hostname || got.AppName != m.AppName ||
			got.ProcID != m.ProcID || !bytes.Equal(got.StructuredData, m.StructuredData) ||
			string(got.Msg) != strings.TrimSuffix(string(m.Msg), "\n") {
			t.Errorf("%q parsed as %+v", b, got)
		}
		if want := m.Timestamp.Truncate(time.Microsecond); !got.Timestamp.Equal(want) {
			t.Errorf("%q: time %v, want %v", b, got.Timestamp, want)
		}
	}
	if got := string(Append(nil, &Message{Priority: 14, Timestamp: ts, Msg: []byte("x")})); !strings.HasPrefix(got, "<14>1 2026-11-24T17:57:01.140329+00:00 - - - - ") {
		t.Errorf("agent's shape: %q", got)
	}
}

// goldenFrames renders what a reader made of a stream, one JSON object per frame.
func goldenFrames(t *testing.T, next func() ([]byte, error)) []byte {
	var out bytes.Buffer
	for i := 1; ; i++ {
		b, err := next()
		if err == io.EOF {
			break
		}
		entry := map[string]any{"frame": i}
		var fe *FrameError
		switch {
		case errors.As(err, &fe):
			entry["bad_frame"] = fe.Reason
			entry["error"] = fe.Error()
		case err != nil:
			t.Fatalf("frame %d: %v", i, err)
		default:
			m, perr := Parse(b)
			if perr != nil {
				entry["bad_message"] = perr.(*ParseError).Field
				entry["error"] = perr.Error()
				break
			}
			typ, inst, _ := m.Source()
			entry["message"] = map[string]any{"priority": m.Priority, "version": m.Version,
				"timestamp": m.Timestamp.Format(time.RFC3339Nano), "hostname": m.Hostname, "app_name": m.AppName,
				"proc_id": m.ProcID, "source": typ, "instance": inst, "router": m.IsRouter(),
				"structured_data": string(m.StructuredData), "msg": string(m.Msg)}
		}
		j, err := json.MarshalIndent(entry, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		out.Write(j)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it); got:\n%s", golden, got)
	}
}

// TestGoldenTCP reads an octet-counted stream as a TCP drain receives it, with
// garbage, a non-transparently framed message, an implausible count and a cut frame.
func TestGoldenTCP(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "tcp.stream"))
	if err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(bytes.NewReader(in), 0)
	checkGolden(t, "tcp.stream", goldenFrames(t, fr.Next))
}

// TestGoldenHTTPSBatch splits a batching HTTPS writer's body, a multi-line app
// message included.
func TestGoldenHTTPSBatch(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "https-batch.body"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs [][]byte
	SplitBody(in, func(m []byte) { msgs = append(msgs, m) })
	if len(msgs) != 4 {
		t.Fatalf("%d messages, want 4", len(msgs))
	}
	i := 0
	checkGolden(t, "https-batch.body", goldenFrames(t, func() ([]byte, error) {
		if i == len(msgs) {
			return nil, io.EOF
		}
		i++
		return msgs[i-1], nil
	}))
}

func TestFrameReaderLimits(t *testing.T) {
	msg := Append(nil, &Message{Priority: 14, Msg: []byte("ok")})
	var stream []byte
	stream = AppendFrame(stream, bytes.Repeat([]byte("x"), 100)) // over the limit: skipped
	stream = AppendFrame(stream, msg)
	stream = append(stream, '<')
	stream = append(stream, bytes.Repeat([]byte("y"), 200)...) // a line over the limit
	stream = append(stream, '\n')
	stream = append(stream, "1600 x\n"...) // implausible: garbage to the newline
	stream = AppendFrame(stream, msg)
	fr := NewFrameReader(bytes.NewReader(stream), 64)
	var got []string
	for {
		b, err := fr.Next()
		if err == io.EOF {
			break
		}
		var fe *FrameError
		if errors.As(err, &fe) {
			got = append(got, fe.Reason)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{ReasonFrameSize, string(msg), ReasonFrameSize, ReasonFrameLength, string(msg)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("frames %q, want %q", got, want)
	}
}

func TestSplitBody(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
	}{
		{"", nil},
		{"<14>1 a\n", []string{"<14>1 a\n"}},
		{"<14>1 a", []string{"<14>1 a"}},
		{"<14>1 a\n<11>1 b\n", []string{"<14>1 a\n", "<11>1 b\n"}},
		{"<14>1 a\nsecond line\n<11>1 b", []string{"<14>1 a\nsecond line\n", "<11>1 b"}},
		{"\n\n<14>1 a\n", []string{"<14>1 a\n"}},
	} {
		var got []string
		SplitBody([]byte(c.body), func(m []byte) { got = append(got, string(m)) })
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %q, want %q", c.body, got, c.want)
		}
	}
}
