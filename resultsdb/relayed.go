package resultsdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// What a relay (package relay) needs: many instances' samples stored in one COPY, and
// many instances' heartbeats in one statement, so that the database sees a few
// connections and a few statements a second however many instances there are.

// CopyStream is the binary COPY stream of worker's batch, as CopySamples sends it: what
// a relay's client posts, and what ParseCopy takes apart.
func CopyStream(worker int32, batch [][]sample.Sample) io.Reader { return newCopyReader(worker, batch) }

var (
	copyHeader  = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	copyTrailer = []byte{0xff, 0xff}
	// rowFieldSizes are the sizes of a sample row's fields, in sampleColumns order.
	rowFieldSizes = [...]int{4, 8, 2, 2, 8, 4, 4, 2, 4, 2, 1}
)

// rowSize is the size of one row in the binary COPY stream (93 bytes).
const rowSize = 2 + len(rowFieldSizes)*4 + 4 + 8 + 2 + 2 + 8 + 4 + 4 + 2 + 4 + 2 + 1

// ErrBadCopy is returned by ParseCopy for a body that is not a sample stream of the
// worker it claims to be from.
var ErrBadCopy = errors.New("not a binary COPY stream of samples")

// ParseCopy checks that body is a binary COPY stream of samples of worker, as
// CopyStream makes it, and returns its rows (without header and trailer, aliasing body)
// and their number, so that a relay can put the rows of many workers into one COPY
// without one malformed body failing the others.
func ParseCopy(body []byte, worker int32) (rows []byte, n int, err error) {
	if !bytes.HasPrefix(body, copyHeader) || !bytes.HasSuffix(body, copyTrailer) || len(body) < len(copyHeader)+len(copyTrailer) {
		return nil, 0, fmt.Errorf("%w: header or trailer missing", ErrBadCopy)
	}
	rows = body[len(copyHeader) : len(body)-len(copyTrailer)]
	if len(rows)%rowSize != 0 {
		return nil, 0, fmt.Errorf("%w: %d bytes of rows is not a whole number of %d-byte rows", ErrBadCopy, len(rows), rowSize)
	}
	be := binary.BigEndian
	for off := 0; off < len(rows); off += rowSize {
		row := rows[off : off+rowSize]
		if be.Uint16(row) != uint16(len(rowFieldSizes)) {
			return nil, 0, fmt.Errorf("%w: row %d has %d fields", ErrBadCopy, off/rowSize+1, be.Uint16(row))
		}
		p := 2
		for i, size := range rowFieldSizes {
			if be.Uint32(row[p:]) != uint32(size) {
				return nil, 0, fmt.Errorf("%w: row %d field %d is not %d bytes", ErrBadCopy, off/rowSize+1, i+1, size)
			}
			if i == 0 && int32(be.Uint32(row[p+4:])) != worker {
				return nil, 0, fmt.Errorf("%w: row %d is of worker %d, not %d", ErrBadCopy, off/rowSize+1, int32(be.Uint32(row[p+4:])), worker)
			}
			p += 4 + size
		}
	}
	return rows, len(rows) / rowSize, nil
}

// CopyRows stores the rows (as ParseCopy returns them) of several workers in one COPY,
// all of them or none; rows stored by an earlier attempt whose answer was lost are not
// stored twice.
func (s *Store) CopyRows(ctx context.Context, parts [][]byte) error {
	return s.copyStream(ctx, func() io.Reader {
		rs := make([]io.Reader, 0, len(parts)+2)
		rs = append(rs, bytes.NewReader(copyHeader))
		for _, p := range parts {
			rs = append(rs, bytes.NewReader(p))
		}
		return io.MultiReader(append(rs, bytes.NewReader(copyTrailer))...)
	})
}

// Heartbeats marks the workers of beats alive and records their counters in one
// statement; a worker that stopped meanwhile keeps its final counters.
func (s *Store) Heartbeats(ctx context.Context, beats map[int32]WorkerCounters) error {
	if len(beats) == 0 {
		return nil
	}
	n := len(beats)
	ids := make([]int32, 0, n)
	sent, stored, spilled, missed, dropped := make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	for id, c := range beats {
		ids = append(ids, id)
		sent, stored, spilled = append(sent, int64(c.Sent)), append(stored, int64(c.Stored)), append(spilled, int64(c.Spilled))
		missed, dropped = append(missed, int64(c.Missed)), append(dropped, int64(c.Dropped))
	}
	_, err := s.pool.Exec(ctx, `UPDATE workers w SET heartbeat_at = statement_timestamp(),
		sent = v.sent, stored = v.stored, spilled = v.spilled, missed = v.missed, dropped = v.dropped
		FROM unnest($1::int4[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[]) AS v(id, sent, stored, spilled, missed, dropped)
		WHERE w.id = v.id AND w.stopped_at IS NULL`, ids, sent, stored, spilled, missed, dropped)
	if err != nil {
		return fmt.Errorf("heartbeats of %d workers: %w", n, err)
	}
	return nil
}
