// Package file reads router access-log entries from a file: a gorouter access.log (the
// local foundation's router writes one), saved `cf logs APP --recent` output, whose
// router lines carry a "[RTR/N] OUT " prefix, or what a syslog drain received (RFC 5424
// messages, one a line, with or without their TCP octet counts; a syslog server's
// files), whose router messages carry proc-id [RTR/N]. Other sources' lines (the app's
// own, staging, cells, API) are passed over.
//
// What a query matches on: the window on the request time gorouter logged (when it
// received the request; Elasticsearch sources use the time the line was emitted,
// i.e. when the response finished), and apps by GUID (the line's app_id) or by name.
// Names come from the "Retrieving logs for app NAME in org …" header `cf logs` prints
// before each app's lines, else from Config.Apps; an access.log line whose GUID is not
// in Config.Apps matches only by GUID.
//
// The cursor is the byte offset and number of the lines consumed, and a fingerprint
// of the file's first line: a file that was replaced or rotated since is refused
// (ErrFileChanged) rather than read from a meaningless offset. A last line without a
// newline that does not parse is taken for one the router is still writing and left
// for the next pull.
package file

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// Kind names this backend in cursors.
const Kind = "file"

// ErrFileChanged is returned (wrapped) by Pull when the file is not the one the cursor
// was taken in: shorter than the cursor's offset, or with another first line.
var ErrFileChanged = errors.New("file: the file changed since the cursor was taken")

// Source reads router log entries from a file. It implements routerlogs.Source: one
// Pull at a time.
type Source struct {
	path      string
	apps      map[string]string
	pageLines int // the most entries per batch
}

var _ routerlogs.Source = (*Source)(nil)

// New returns a Source for the file at path, which must exist (it may grow: a pull
// reads what is there). apps maps app GUIDs to names, for lines that carry only the
// GUID; it may be nil.
func New(path string, apps map[string]string) (*Source, error) {
	if path == "" {
		return nil, errors.New("file: no path")
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("file: %s is not a regular file", path)
	}
	return &Source{path: path, apps: apps, pageLines: 5000}, nil
}

// String names the source, e.g. "file:/var/vcap/sys/log/gorouter/access.log".
func (s *Source) String() string { return Kind + ":" + s.path }

// position is the cursor's state.
type position struct {
	Source string `json:"source"`
	Offset int64  `json:"offset"` // bytes consumed
	Line   int64  `json:"line"`   // lines consumed
	// App is the app named by the last `cf logs` header before Offset.
	App string `json:"app,omitempty"`
	// First fingerprints the file's first line.
	First string `json:"first"`
}

// Pull implements routerlogs.Source. Result.Requests and Retries are 0 and Total is
// -1; Retrieved counts the entries emitted and the unparseable lines.
func (s *Source) Pull(ctx context.Context, q routerlogs.Query, from routerlogs.Cursor, b routerlogs.Budget, emit func(routerlogs.Batch) error) (routerlogs.Result, error) {
	res := routerlogs.Result{Total: -1}
	var pos position
	resumed, err := from.Decode(Kind, &pos)
	if err != nil {
		return res, err
	}
	f, err := os.Open(s.path)
	if err != nil {
		return res, fmt.Errorf("file: %w", err)
	}
	defer f.Close()
	first, err := firstLine(f)
	if err != nil {
		return res, err
	}
	if resumed {
		st, err := f.Stat()
		if err != nil {
			return res, fmt.Errorf("file: %w", err)
		}
		if pos.Offset > st.Size() || pos.First != first {
			return res, fmt.Errorf("%w: %s (offset %d of %d bytes)", ErrFileChanged, s.path, pos.Offset, st.Size())
		}
	}
	pos.Source, pos.First = Kind, first
	if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
		return res, fmt.Errorf("file: %w", err)
	}

	r := bufio.NewReaderSize(f, 64<<10)
	var batch routerlogs.Batch
	emitted := pos.Offset // the offset of the last batch's cursor
	flush := func() error {
		if pos.Offset == emitted {
			return nil
		}
		next, err := routerlogs.NewCursor(pos)
		if err != nil {
			return err
		}
		batch.Next = next
		if err := emit(batch); err != nil {
			return err
		}
		batch, emitted = routerlogs.Batch{}, pos.Offset
		return ctx.Err()
	}
	for {
		if pos.Line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		line, n, complete, err := readLine(r)
		if err != nil && err != io.EOF {
			return res, fmt.Errorf("file: read %s: %w", s.path, err)
		}
		if n == 0 {
			break
		}
		if !complete && err == io.EOF {
			// A last line without a newline: the router may be writing it. Take it
			// only when it parses.
			if _, perr := accesslog.ParseGorouter(line); perr != nil {
				break
			}
		}
		e, kind := s.classify(line, &pos, &q)
		pos.Offset += int64(n)
		pos.Line++
		switch kind {
		case lineEntry:
			batch.Entries = append(batch.Entries, e)
		case lineBad:
			batch.Unparseable++
		default:
			continue
		}
		res.Retrieved++
		if b.MaxDocuments > 0 && res.Retrieved >= b.MaxDocuments {
			// Budget spent: exhausted unless nothing that could match follows.
			if err := flush(); err != nil {
				return res, err
			}
			res.BudgetExhausted = s.more(r, pos, &q)
			return res, nil
		}
		if len(batch.Entries) >= s.pageLines {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// more reports whether the rest of the file holds an entry or unparseable line.
func (s *Source) more(r *bufio.Reader, pos position, q *routerlogs.Query) bool {
	for {
		line, n, _, err := readLine(r)
		if n == 0 {
			return false
		}
		if _, kind := s.classify(line, &pos, q); kind == lineEntry || kind == lineBad {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// lineKind is what a line turned out to be.
type lineKind int

const (
	lineOther lineKind = iota // blank, a header, another source's cf logs line, or not wanted
	lineEntry
	lineBad
)

const headerPrefix = "Retrieving logs for app "

// classify reads one line (without its newline). A `cf logs` header sets pos.App.
func (s *Source) classify(line []byte, pos *position, q *routerlogs.Query) (routerlogs.Entry, lineKind) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return routerlogs.Entry{}, lineOther
	}
	if rest, ok := bytes.CutPrefix(trimmed, []byte(headerPrefix)); ok {
		name, _, _ := strings.Cut(string(rest), " in org ")
		pos.App = name
		return routerlogs.Entry{}, lineOther
	}
	if src, ok := accesslog.LineSource(trimmed); ok && src != "RTR" && !strings.HasPrefix(src, "RTR/") {
		return routerlogs.Entry{}, lineOther // the app's own output, staging, cells, …
	}
	rec, err := accesslog.ParseGorouter(line)
	if err != nil {
		return routerlogs.Entry{}, lineBad
	}
	name := pos.App
	if n, ok := s.apps[rec.AppID]; ok && name == "" {
		name = n
	}
	if !q.InWindow(rec.Time) || !q.WantsApp(name, rec.AppID) {
		return routerlogs.Entry{}, lineOther
	}
	return routerlogs.Entry{Record: rec, App: name, AppGUID: rec.AppID}, lineEntry
}

// readLine reads one line: its bytes without the newline (and a CR before it), the
// bytes it took in the file, and whether a newline ended it. A line longer than
// accesslog.MaxLineBytes is returned cut to that length (it will not parse).
func readLine(r *bufio.Reader) (line []byte, n int, complete bool, err error) {
	var long []byte
	for {
		chunk, err := r.ReadSlice('\n')
		n += len(chunk)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) <= accesslog.MaxLineBytes {
				long = append(long, chunk...)
			}
			continue
		}
		if long != nil {
			if len(long) <= accesslog.MaxLineBytes {
				long = append(long, chunk...)
			}
			chunk = long
		}
		complete = err == nil
		chunk = bytes.TrimSuffix(chunk, []byte("\n"))
		chunk = bytes.TrimSuffix(chunk, []byte("\r"))
		return chunk, n, complete, err
	}
}

// firstLine fingerprints the file's first line, without its newline (its first 4 KiB
// when longer; what there is when the newline is still to come, which is the line a
// pull may have taken whole). It leaves the file's offset alone.
func firstLine(f *os.File) (string, error) {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("file: %w", err)
	}
	buf = buf[:n]
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	}
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:8]), nil
}
