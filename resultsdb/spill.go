package resultsdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cf-benchmark/cf-benchmark/sample"
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

// Close closes and removes the file.
func (s *spillFile) Close() error {
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); err == nil {
		err = rerr
	}
	return err
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
