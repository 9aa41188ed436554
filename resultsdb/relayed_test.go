package resultsdb

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// TestParseCopy takes apart what CopyStream makes and refuses what a relay must not put
// into a COPY shared with other instances' rows.
func TestParseCopy(t *testing.T) {
	t.Parallel()
	batch := [][]sample.Sample{{{Seq: 1, Status: 200}, {Seq: 2, Status: 500}}, {{Seq: 3, Flags: 1}}}
	body, err := io.ReadAll(CopyStream(7, batch))
	if err != nil {
		t.Fatal(err)
	}
	rows, n, err := ParseCopy(body, 7)
	if err != nil || n != 3 || len(rows) != 3*rowSize {
		t.Fatalf("ParseCopy = %d rows (%d bytes), %v; want 3 rows of %d bytes", n, len(rows), err, rowSize)
	}
	empty, _ := io.ReadAll(CopyStream(7, nil))
	if _, n, err := ParseCopy(empty, 7); err != nil || n != 0 {
		t.Errorf("ParseCopy(empty stream) = %d rows, %v", n, err)
	}
	bad := map[string][]byte{
		"another worker's rows": body,
		"no header":             body[1:],
		"no trailer":            body[:len(body)-2],
		"a row cut short":       append(append([]byte{}, body[:len(body)-3]...), 0xff, 0xff),
		"a field of the wrong size": func() []byte {
			b := bytes.Clone(body)
			b[len(copyHeader)+2+3] = 5 // the worker id's length: 5, not 4
			return b
		}(),
		"nothing": nil,
	}
	for name, b := range bad {
		worker := int32(7)
		if name == "another worker's rows" {
			worker = 8
		}
		if _, _, err := ParseCopy(b, worker); !errors.Is(err, ErrBadCopy) {
			t.Errorf("%s: ParseCopy = %v, want ErrBadCopy", name, err)
		}
	}
}

func FuzzParseCopy(f *testing.F) {
	good, _ := io.ReadAll(CopyStream(1, [][]sample.Sample{{{Seq: 1}}}))
	f.Add(good)
	f.Add([]byte("PGCOPY\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, n, err := ParseCopy(b, 1)
		if err == nil && len(rows) != n*rowSize {
			t.Fatalf("%d rows in %d bytes", n, len(rows))
		}
	})
}
