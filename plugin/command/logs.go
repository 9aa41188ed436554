package command

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cf-benchmark/cf-benchmark/collectors/accesslog"
	"github.com/cf-benchmark/cf-benchmark/engine"
)

var logsCmd = &Command{
	Name:        "logs",
	PluginName:  "benchmark-logs",
	Synopsis:    "parse [--format " + strings.Join(accesslog.Formats(), "|") + "] < ACCESS_LOG",
	Summary:     "Parse access-log lines (gorouter, also from cf logs; Apache common/combined) from stdin into JSON lines",
	ExampleArgs: "logs parse --format gorouter < access.log",
	Flags: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		format := fs.String("format", string(accesslog.Gorouter), "log format of the input: "+strings.Join(accesslog.Formats(), ", "))
		return func(ctx context.Context, env *Env, args []string) error {
			if len(args) != 1 || args[0] != "parse" {
				return usagef("give the subcommand: parse")
			}
			parse, err := accesslog.Parser(*format)
			if err != nil {
				return usagef("--format %q: want one of %s", *format, strings.Join(accesslog.Formats(), ", "))
			}
			if env.Stdin == nil {
				return errors.New("no standard input to read")
			}
			return parseLogs(ctx, env, parse)
		}
	},
}

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
