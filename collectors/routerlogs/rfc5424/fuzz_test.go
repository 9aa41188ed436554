package rfc5424

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that an error is a *ParseError inside the
// input, and that a parsed message's Msg is where MsgOffset says. The seed corpus is
// the golden inputs' messages.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"https-batch.body", "tcp.stream"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		SplitBody(b, func(m []byte) { f.Add(m) })
	}
	f.Add([]byte(cfLine))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Column < 1 || pe.Column > len(b)+1 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if m.MsgOffset > len(b) || !bytes.HasPrefix(b[m.MsgOffset:], m.Msg) {
			t.Fatalf("MsgOffset %d, msg %q", m.MsgOffset, m.Msg)
		}
		if m.Priority < 0 || m.Priority > 191 || m.Version < 1 {
			t.Fatalf("header %+v", m)
		}
		// What Append writes of a parsed message parses to the same header.
		again, err := Parse(Append(nil, &m))
		if err != nil || again.Hostname != m.Hostname || again.ProcID != m.ProcID || again.Priority != m.Priority {
			t.Fatalf("re-parse of %q: %+v, %v", Append(nil, &m), again, err)
		}
	})
}

// FuzzFrameReader checks that reading any stream ends (io.EOF) without a panic, every
// frame within the limit and every bad frame a *FrameError.
func FuzzFrameReader(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "tcp.stream"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("3 abc5 <1>1 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := NewFrameReader(bytes.NewReader(b), 128)
		for i := 0; i <= len(b); i++ {
			msg, err := fr.Next()
			if err == io.EOF {
				return
			}
			var fe *FrameError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("error %v", err)
			}
			if len(msg) > 128 {
				t.Fatalf("frame of %d bytes over the limit", len(msg))
			}
		}
		t.Fatalf("more frames than bytes in %q", b)
	})
}
