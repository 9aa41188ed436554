package exportdir

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
)

// errNoFile is returned by open for a table the directory has no file of.
var errNoFile = errors.New("no such file")

// table reads one CSV file of an export as PostgreSQL's COPY wrote it: a header, then
// records whose quoted fields may hold commas, doubled quotes and line ends; an empty
// unquoted field is NULL. Field accessors record the first bad value in err, naming the
// file, line and column, and return a zero value, so a row is read in one go and
// checked once.
type table struct {
	name, path string
	f          *os.File
	r          *bufio.Reader
	sum        hash.Hash
	want       *export.File // the manifest's entry, nil when it lists none
	cols       map[string]int
	line       int // the line the current record starts on
	next       int // the line the next record starts on
	rows       int64
	rec        []string
	null       []bool
	err        error
}

// open opens table name's file in dir; errNoFile when there is none.
func open(dir string, m *export.Manifest, name string) (*table, error) {
	t := &table{name: name, path: filepath.Join(dir, name+".csv"), sum: sha256.New(), next: 1}
	for i := range m.Files {
		if m.Files[i].Table == name {
			t.want = &m.Files[i]
		}
	}
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		if t.want != nil {
			return nil, fmt.Errorf("%s: listed in manifest.json but missing", t.path)
		}
		return nil, fmt.Errorf("%s: %w", t.path, errNoFile)
	}
	if err != nil {
		return nil, err
	}
	t.f, t.r = f, bufio.NewReaderSize(io.TeeReader(f, t.sum), 1<<16)
	header, _, err := t.record()
	if err == io.EOF {
		f.Close()
		return nil, fmt.Errorf("%s: empty file (want a header line)", t.path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	t.cols = map[string]int{}
	for i, h := range header {
		t.cols[h] = i
	}
	return t, nil
}

func (t *table) close() { t.f.Close() }

// need checks that the file has the columns.
func (t *table) need(cols ...string) error {
	for _, c := range cols {
		if _, ok := t.cols[c]; !ok {
			return fmt.Errorf("%s: no column %s in the header (exported by an older cf-benchmark? export the run again)", t.path, c)
		}
	}
	return nil
}

// scan reads the next record; false at the end of the file, where it checks the row
// count and checksum against the manifest.
func (t *table) scan() (bool, error) {
	if t.err != nil {
		return false, t.err
	}
	rec, null, err := t.record()
	if err == io.EOF {
		return false, t.verify()
	}
	if err != nil {
		return false, err
	}
	if len(rec) != len(t.cols) {
		return false, fmt.Errorf("%s line %d: %d fields, the header has %d", t.path, t.line, len(rec), len(t.cols))
	}
	t.rec, t.null = rec, null
	t.rows++
	return true, nil
}

func (t *table) verify() error {
	if t.want == nil {
		return nil
	}
	if t.rows != t.want.Rows {
		return fmt.Errorf("%s: %d rows, manifest.json says %d (a damaged or partly copied export)", t.path, t.rows, t.want.Rows)
	}
	if sum := hex.EncodeToString(t.sum.Sum(nil)); t.want.SHA256 != "" && sum != t.want.SHA256 {
		return fmt.Errorf("%s: SHA-256 %s, manifest.json says %s (a damaged or changed file)", t.path, sum, t.want.SHA256)
	}
	return nil
}

// record reads one CSV record and whether each field was an unquoted empty one.
func (t *table) record() ([]string, []bool, error) {
	t.line = t.next
	var (
		fields []string
		nulls  []bool
		f      strings.Builder
	)
	c, err := t.r.ReadByte()
	if err == io.EOF {
		return nil, nil, io.EOF
	}
	for {
		f.Reset()
		quoted := false
		if err == nil && c == '"' {
			quoted = true
			for {
				c, err = t.r.ReadByte()
				if err != nil {
					return nil, nil, fmt.Errorf("%s line %d: unterminated quoted field", t.path, t.line)
				}
				if c == '"' {
					c, err = t.r.ReadByte()
					if err == nil && c == '"' {
						f.WriteByte('"')
						continue
					}
					break
				}
				if c == '\n' {
					t.next++
				}
				f.WriteByte(c)
			}
		} else {
			for err == nil && c != ',' && c != '\n' {
				if c == '"' {
					return nil, nil, fmt.Errorf("%s line %d: a quote inside an unquoted field", t.path, t.line)
				}
				f.WriteByte(c)
				c, err = t.r.ReadByte()
			}
		}
		fields = append(fields, f.String())
		nulls = append(nulls, !quoted && f.Len() == 0)
		switch {
		case err == io.EOF:
			return nil, nil, fmt.Errorf("%s line %d: the last record does not end with a newline (a cut file?)", t.path, t.line)
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", t.path, err)
		case c == '\n':
			t.next++
			return fields, nulls, nil
		case c != ',':
			return nil, nil, fmt.Errorf("%s line %d: text after a quoted field", t.path, t.line)
		}
		c, err = t.r.ReadByte()
	}
}

func (t *table) fail(col, value, want string) {
	if t.err == nil {
		t.err = fmt.Errorf("%s line %d, column %s: %q is not %s", t.path, t.line, col, value, want)
	}
}

// raw is the field's text and whether it is NULL.
func (t *table) raw(col string) (string, bool) {
	i := t.cols[col]
	return t.rec[i], t.null[i]
}

// str is a text or token field, "" for NULL; a text field loses its leading '.
func (t *table) str(col string) string {
	v, _ := t.raw(col)
	if export.TextColumn(t.name, col) {
		v = strings.TrimPrefix(v, "'")
	}
	return v
}

// optStr is str, nil for NULL.
func (t *table) optStr(col string) *string {
	if _, null := t.raw(col); null {
		return nil
	}
	v := t.str(col)
	return &v
}

func (t *table) int(col string) int64 {
	v, null := t.raw(col)
	if null {
		t.fail(col, v, "an integer")
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.fail(col, v, "an integer")
	}
	return n
}

func (t *table) optInt(col string) *int64 {
	if _, null := t.raw(col); null {
		return nil
	}
	n := t.int(col)
	return &n
}

func (t *table) float(col string) float64 {
	v, null := t.raw(col)
	if null {
		t.fail(col, v, "a number")
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.fail(col, v, "a number")
	}
	return x
}

func (t *table) optFloat(col string) *float64 {
	if _, null := t.raw(col); null {
		return nil
	}
	x := t.float(col)
	return &x
}

func (t *table) bool(col string) bool {
	switch v, _ := t.raw(col); v {
	case "true":
		return true
	case "false":
		return false
	default:
		t.fail(col, v, "true or false")
		return false
	}
}

// pgTime is how PostgreSQL prints a timestamptz in UTC with DateStyle ISO.
const pgTime = "2006-01-02 15:04:05.999999-07"

func (t *table) time(col string) time.Time {
	v, null := t.raw(col)
	at, err := time.Parse(pgTime, v)
	if null || err != nil {
		t.fail(col, v, "a timestamp like 2026-11-22 13:05:01.123456+00")
	}
	return at.UTC()
}

func (t *table) optTime(col string) *time.Time {
	if _, null := t.raw(col); null {
		return nil
	}
	at := t.time(col)
	return &at
}
