package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// AccessLogFormats are the formats ParseAccessLogs reads; DefaultAccessLogFormat is
// gorouter's.
func AccessLogFormats() []string { return accesslog.Formats() }

// DefaultAccessLogFormat is gorouter's access-log format.
const DefaultAccessLogFormat = string(accesslog.Gorouter)

// ErrLogFormat marks a format ParseAccessLogs does not know.
var ErrLogFormat = errors.New("unknown access-log format")

// ParseAccessLogs writes one JSON object per line of in that is an access-log line of
// format to out, and "line N: problem" per line that is not to errOut, then a count.
// A bad line is never an error; only reading, writing and ctx ending (ErrAborted) are,
// and a format it does not know (ErrLogFormat).
func ParseAccessLogs(ctx context.Context, format string, in io.Reader, out, errOut io.Writer) error {
	parse, err := accesslog.Parser(format)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLogFormat, err)
	}
	if in == nil {
		return errors.New("no standard input to read")
	}
	return parseLogs(ctx, in, out, errOut, parse)
}

// parseLogs is ParseAccessLogs with the format's parser.
//
// Output is flushed whenever the input has nothing buffered, so `cf logs APP | cf
// benchmark-logs parse` shows each request as it comes while a file is written in big
// chunks. The scan runs on its own goroutine so that an interrupt ends the command even
// while stdin (a terminal) blocks; the mutex keeps that goroutine's writes from
// interleaving with the final flush.
func parseLogs(ctx context.Context, in io.Reader, stdout, stderr io.Writer, parse accesslog.ParseFunc) error {
	var (
		mu       sync.Mutex
		out      = bufio.NewWriterSize(stdout, 64<<10)
		enc      = json.NewEncoder(out)
		ok, bad  int
		werr     error
		finished bool // no more output: the command returned
	)
	enc.SetEscapeHTML(false)
	fr := &flushingReader{r: in, flush: func() error {
		mu.Lock()
		defer mu.Unlock()
		if werr == nil && !finished {
			werr = out.Flush()
		}
		if werr == nil && ctx.Err() != nil {
			return ctx.Err()
		}
		return werr
	}}
	emit := func(r accesslog.Record) {
		mu.Lock()
		defer mu.Unlock()
		if werr != nil || finished {
			return
		}
		if werr = enc.Encode(r); werr == nil {
			ok++
		}
	}
	report := func(lineNo int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		bad++
		fmt.Fprintf(stderr, "line %d: %v\n", lineNo, err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := accesslog.ScanLines(fr, parse, emit, report)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ErrAborted
	}

	mu.Lock()
	defer mu.Unlock()
	finished = true
	if werr == nil {
		werr = out.Flush()
	}
	fmt.Fprintf(stderr, "parsed %d lines, %d unparseable\n", ok, bad)
	switch {
	case werr != nil:
		return fmt.Errorf("write JSON: %w", werr)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrAborted):
		return ErrAborted
	}
	return err
}

// flushingReader calls flush before each read that may block: when the bufio.Reader
// in front of it has used up what it had.
type flushingReader struct {
	r     io.Reader
	flush func() error
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if err := f.flush(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}
