package resultsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// recordSize is the size of one sample in a spill file.
const recordSize = 32

// ErrSpillFull is returned when a spill file has reached its bound.
var ErrSpillFull = errors.New("spill file full")

// spillFile holds samples on local disk while the results DB cannot take them: fixed
// 32-byte records appended at the end and consumed from the front. It is used by one
// goroutine at a time (the writer's flushMu).
type spillFile struct {
	f          *os.File
	max        int64 // bytes
	read, size int64 // consumed up to read, written up to size
}

func openSpill(path string, maxBytes int64) (*spillFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spill file: %w", err)
	}
	return &spillFile{f: f, max: maxBytes}, nil
}

// Len is the number of samples waiting in the file.
func (s *spillFile) Len() int { return int((s.size - s.read) / recordSize) }

// Room is how many more samples fit.
func (s *spillFile) Room() int { return int(max(s.max-s.size, 0) / recordSize) }

// Append writes the samples of segs at the end; it writes all of them or nothing.
func (s *spillFile) Append(segs [][]sample.Sample) error {
	n := 0
	for _, seg := range segs {
		n += len(seg)
	}
	if int64(n)*recordSize > s.max-s.size {
		return ErrSpillFull
	}
	buf := make([]byte, 0, n*recordSize)
	for _, seg := range segs {
		for i := range seg {
			buf = appendRecord(buf, &seg[i])
		}
	}
	if _, err := s.f.WriteAt(buf, s.size); err != nil {
		return fmt.Errorf("write spill file: %w", err)
	}
	s.size += int64(len(buf))
	return nil
}

// Peek reads up to n samples from the front without consuming them.
func (s *spillFile) Peek(n int) ([]sample.Sample, error) {
	n = min(n, s.Len())
	buf := make([]byte, n*recordSize)
	if _, err := s.f.ReadAt(buf, s.read); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read spill file: %w", err)
	}
	out := make([]sample.Sample, n)
	for i := range out {
		out[i] = parseRecord(buf[i*recordSize:])
	}
	return out, nil
}

// Consume drops n samples from the front; an emptied file is truncated.
func (s *spillFile) Consume(n int) error {
	s.read += int64(n) * recordSize
	if s.read < s.size {
		return nil
	}
	s.read, s.size = 0, 0
	return s.f.Truncate(0)
}

// Close closes the file and removes it when no sample waits in it; one that does stays
// for RecoverSpill.
func (s *spillFile) Close() error {
	err := s.f.Close()
	if s.Len() > 0 {
		return err
	}
	if rerr := os.Remove(s.f.Name()); err == nil {
		err = rerr
	}
	return err
}

// spillPrefix begins the name of every spill file (SpillName).
const spillPrefix = "cfbench-spill-"

// SpillName is the file name of the spill file of worker of run runID.
func SpillName(runID string, worker int32) string {
	return fmt.Sprintf("%s%s-%d", spillPrefix, runID, worker)
}

// ParseSpillName reads the run and worker a spill file's name (SpillName) belongs to.
func ParseSpillName(name string) (runID string, worker int32, ok bool) {
	rest, found := strings.CutPrefix(name, spillPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !found || i <= 0 {
		return "", 0, false
	}
	id, err := strconv.ParseInt(rest[i+1:], 10, 32)
	if err != nil || id <= 0 {
		return "", 0, false
	}
	return rest[:i], int32(id), true
}

// ErrSpillInUse is returned by RecoverSpill for the spill file of a run still running:
// its writer may be using it.
var ErrSpillInUse = errors.New("its run is still running")

// ErrNotOurSpill is returned by RecoverSpill for a spill file whose name is not one of
// SpillName's or whose worker this database does not know for its run.
var ErrNotOurSpill = errors.New("not a spill file of this results database")

// RecoverSpill stores the samples left in the spill file at path by a writer whose
// process stopped before the database came back, brings its worker's stored count up
// to the worker's rows, and removes the file. Samples of the file stored before are
// not stored twice; a record cut short by a crash is not a sample. It returns the
// file's run and how many samples the file held; the file of a run still running is
// left alone (ErrSpillInUse), and so is one this database does not know
// (ErrNotOurSpill).
func (s *Store) RecoverSpill(ctx context.Context, path string) (runID string, samples int, err error) {
	runID, worker, ok := ParseSpillName(filepath.Base(path))
	if !ok {
		return "", 0, fmt.Errorf("%s: %w", path, ErrNotOurSpill)
	}
	var status RunStatus
	err = s.pool.QueryRow(ctx, `SELECT r.status FROM workers w JOIN runs r ON r.id = w.run_id WHERE w.id = $1 AND w.run_id = $2`, worker, runID).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return runID, 0, fmt.Errorf("%s: %w", path, ErrNotOurSpill)
	case err != nil:
		return runID, 0, fmt.Errorf("recover spill file %s: %w", path, err)
	case status == RunRunning:
		return runID, 0, fmt.Errorf("%s: %w", path, ErrSpillInUse)
	}
	samples, err = s.copySpill(ctx, path, worker)
	return runID, samples, err
}

// copySpill stores the samples of the spill file at path for worker and removes it.
func (s *Store) copySpill(ctx context.Context, path string, worker int32) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("recover spill file: %w", err)
	}
	defer f.Close()
	const batch = 32 << 10
	buf := make([]byte, batch*recordSize)
	total := 0
	for {
		n, err := io.ReadFull(f, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return total, fmt.Errorf("read spill file %s: %w", path, err)
		}
		samples := make([]sample.Sample, n/recordSize)
		for i := range samples {
			samples[i] = parseRecord(buf[i*recordSize:])
		}
		if len(samples) > 0 {
			if err := s.CopySamples(ctx, worker, [][]sample.Sample{samples}); err != nil {
				return total, fmt.Errorf("recover spill file %s: %w", path, err)
			}
		}
		total += len(samples)
		if n < len(buf) {
			break
		}
	}
	// Counted, then written: Citus does not update a reference table (workers) from a
	// subquery over a distributed one (samples).
	var stored int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM samples WHERE worker_id = $1`, worker).Scan(&stored); err != nil {
		return total, fmt.Errorf("recover spill file %s: count the stored samples: %w", path, err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE workers SET stored = $2 WHERE id = $1`, worker, stored); err != nil {
		return total, fmt.Errorf("recover spill file %s: count the stored samples: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return total, fmt.Errorf("recover spill file: %w", err)
	}
	return total, nil
}

func appendRecord(b []byte, s *sample.Sample) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(s.IntendedUS))
	b = le.AppendUint32(b, s.Seq)
	b = le.AppendUint32(b, uint32(s.StartDelayUS))
	b = le.AppendUint32(b, uint32(s.LatencyUS))
	b = le.AppendUint32(b, uint32(s.Bytes))
	b = le.AppendUint16(b, uint16(s.Status))
	return append(b, s.Step, s.Request, byte(s.Err), s.Flags, 0, 0)
}

func parseRecord(b []byte) sample.Sample {
	le := binary.LittleEndian
	return sample.Sample{
		IntendedUS:   int64(le.Uint64(b[0:])),
		Seq:          le.Uint32(b[8:]),
		StartDelayUS: int32(le.Uint32(b[12:])),
		LatencyUS:    int32(le.Uint32(b[16:])),
		Bytes:        int32(le.Uint32(b[20:])),
		Status:       int16(le.Uint16(b[24:])),
		Step:         b[26],
		Request:      b[27],
		Err:          sample.ErrClass(b[28]),
		Flags:        b[29],
	}
}
