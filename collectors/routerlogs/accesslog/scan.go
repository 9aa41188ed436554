package accesslog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line for ScanLines. Gorouter caps a record near 64 KiB for
// UDP; a longer line is reported as bad, not fatal.
const MaxLineBytes = 1 << 20

// ErrLineTooLong is reported to ScanLines' bad callback for a line over MaxLineBytes.
var ErrLineTooLong = errors.New("line too long")

// ScanLines reads newline-separated lines from r and parses each with parse. A parsed
// Record goes to emit; a line that does not parse goes to bad with its 1-based number
// (and counts), and scanning goes on. Blank lines are skipped and not counted. emit and
// bad are called from the caller's goroutine, in line order; either may be nil. err is
// only a read error of r; the part of a line read before it is dropped.
func ScanLines(r io.Reader, parse func([]byte) (Record, error), emit func(Record), bad func(lineNo int, err error)) (ok, nbad int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the reader's buffer, assembled
	var partial, over bool
	lineNo := 0
	for {
		chunk, rerr := br.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			partial = true
			if over = over || len(long)+len(chunk) > MaxLineBytes; !over {
				long = append(long, chunk...)
			}
			continue
		}
		if rerr != nil && rerr != io.EOF {
			// What came before the error is part of a line whose end may never come.
			return ok, nbad, fmt.Errorf("read access log: %w", rerr)
		}
		line := chunk
		if partial {
			over = over || len(long)+len(chunk) > MaxLineBytes
			line = append(long, chunk...)
		}
		if len(line) > 0 {
			lineNo++
			switch {
			case over:
				nbad++
				if bad != nil {
					bad(lineNo, fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, MaxLineBytes))
				}
			case len(bytes.TrimSpace(line)) == 0:
			default:
				rec, perr := parse(line)
				if perr != nil {
					nbad++
					if bad != nil {
						bad(lineNo, perr)
					}
				} else {
					ok++
					if emit != nil {
						emit(rec)
					}
				}
			}
		}
		long, partial, over = long[:0], false, false
		if rerr == io.EOF {
			return ok, nbad, nil
		}
	}
}
