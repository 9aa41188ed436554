package export

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
)

// tableFile is one CSV file being written from COPY's stream. It knows where the last
// whole record ends (tracking quotes, since a quoted field may hold newlines), so a stream
// cut off mid-record can be cut back to whole records and continued. The checksum covers
// whole records only, so after a rewind it is still the checksum of the file. Memory: a
// 256 KiB write buffer and the longest record.
type tableFile struct {
	f *os.File
	w *bufio.Writer
	h hash.Hash

	size      int64 // bytes written, the record in progress included
	committed int64 // end of the last whole record
	records   int64 // whole records, the header included
	inQuote   bool
	partial   []byte // the record in progress, not yet hashed
	last      []byte // the last whole record

	progress     func(rows, bytes int64)
	nextProgress int64
}

// fileError is a failure to write the file (disk full): not worth another attempt.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

const progressEvery = 1 << 20

func newTableFile(f *os.File) *tableFile {
	return &tableFile{f: f, w: bufio.NewWriterSize(f, 256<<10), h: sha256.New(), nextProgress: progressEvery}
}

// Write takes the next bytes of COPY's stream (PostgreSQL sends one record per message,
// but nothing here depends on it).
func (t *tableFile) Write(p []byte) (int, error) {
	if _, err := t.w.Write(p); err != nil {
		return 0, &fileError{err}
	}
	t.size += int64(len(p))
	recStart := 0 // where the record in progress began in p; -1: before p
	if len(t.partial) > 0 {
		recStart = -1
	}
	lastStart, lastEnd := 0, -1
	for i := 0; i < len(p); {
		if t.inQuote {
			j := bytes.IndexByte(p[i:], '"')
			if j < 0 {
				break
			}
			i += j + 1
			t.inQuote = false // a doubled "" inside a field closes and opens again
			continue
		}
		line := p[i:]
		nl := bytes.IndexByte(line, '\n')
		if nl >= 0 {
			line = line[:nl]
		}
		if q := bytes.IndexByte(line, '"'); q >= 0 {
			i += q + 1
			t.inQuote = true
			continue
		}
		if nl < 0 {
			break
		}
		i += nl + 1
		lastStart, lastEnd = recStart, i
		recStart = i
		t.records++
	}
	if lastEnd < 0 {
		t.partial = append(t.partial, p...)
		return len(p), nil
	}
	t.h.Write(t.partial)
	t.h.Write(p[:lastEnd])
	if lastStart >= 0 {
		t.last = append(t.last[:0], p[lastStart:lastEnd]...)
	} else {
		t.last = append(append(t.last[:0], t.partial...), p[:lastEnd]...)
	}
	t.committed += int64(len(t.partial) + lastEnd)
	t.partial = append(t.partial[:0], p[lastEnd:]...)
	if t.progress != nil && t.committed >= t.nextProgress {
		t.nextProgress = t.committed + progressEvery
		t.progress(max(t.records-1, 0), t.committed)
	}
	return len(p), nil
}

// rewind cuts the file back to its last whole record, for a stream to continue there.
func (t *tableFile) rewind() error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	if t.size != t.committed {
		if err := t.f.Truncate(t.committed); err != nil {
			return err
		}
	}
	if _, err := t.f.Seek(t.committed, io.SeekStart); err != nil {
		return err
	}
	t.size, t.inQuote, t.partial = t.committed, false, t.partial[:0]
	return nil
}

// finish flushes a file that the stream ended at a record boundary.
func (t *tableFile) finish() error {
	if t.size != t.committed || t.inQuote {
		return errors.New("the stream ended inside a record")
	}
	return t.w.Flush()
}

func (t *tableFile) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }
