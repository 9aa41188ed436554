package command

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/engine"
)

// parseLogs writes one JSON object per line of env.Stdin that parse accepts to
// env.Stdout, and "line N: problem" per line it does not to env.Stderr, then a count.
// A bad line is never an error; only reading, writing and ctx ending are.
//
// Output is flushed whenever the input has nothing buffered, so `cf logs APP | cf
// benchmark-logs parse` shows each request as it comes while a file is written in big
// chunks. The scan runs on its own goroutine so that an interrupt ends the command even
// while stdin (a terminal) blocks; the mutex keeps that goroutine's writes from
// interleaving with the final flush.
func parseLogs(ctx context.Context, env *Env, parse accesslog.ParseFunc) error {
	var (
		mu       sync.Mutex
		out      = bufio.NewWriterSize(env.Stdout, 64<<10)
		enc      = json.NewEncoder(out)
		ok, bad  int
		werr     error
		finished bool // no more output: the command returned
	)
	enc.SetEscapeHTML(false)
	in := &flushingReader{r: env.Stdin, flush: func() error {
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
		fmt.Fprintf(env.Stderr, "line %d: %v\n", lineNo, err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := accesslog.ScanLines(in, parse, emit, report)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = engine.ErrAborted
	}

	mu.Lock()
	defer mu.Unlock()
	finished = true
	if werr == nil {
		werr = out.Flush()
	}
	fmt.Fprintf(env.Stderr, "parsed %d lines, %d unparseable\n", ok, bad)
	switch {
	case werr != nil:
		return fmt.Errorf("write JSON: %w", werr)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, engine.ErrAborted):
		return engine.ErrAborted
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
