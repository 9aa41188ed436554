package rfc5424

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Reasons a frame is refused (FrameError.Reason).
const (
	ReasonFrameLength = "frame-length" // no octet count, or not a number
	ReasonFrameSize   = "frame-size"   // over the reader's limit
	ReasonFrameCut    = "frame-cut"    // the stream ended inside the frame
)

// FrameError is a frame a FrameReader could not take. The reader has skipped past it
// and may go on.
type FrameError struct {
	Reason string
	// Offset is where the frame began in the stream.
	Offset int64
	Detail string
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("syslog frame at byte %d: %s: %s", e.Offset, e.Reason, e.Detail)
}

// DefaultMaxFrame bounds a frame when the reader is given no limit: gorouter keeps a
// line under 64 KiB, the agent adds a header and its tags.
const DefaultMaxFrame = 256 << 10

// implausible times the limit is a count taken for garbage rather than a frame to skip.
const implausible = 16

// FrameReader reads syslog frames from a stream (RFC 6587): octet counting
// ("LEN SP MSG", what CF's syslog agent sends over TCP and TLS), and, for a frame that
// starts with '<' instead of a count, non-transparent framing (the message ends at a
// newline), which other senders and saved files use.
//
// Memory is bounded by the limit: a longer frame is skipped without being held, and
// reported. After a frame whose count is not a number, or is over 16 times the limit
// (garbage rather than a frame), the reader resynchronises at the next newline (the
// agent ends every message with one). Not safe for concurrent use.
type FrameReader struct {
	r      *bufio.Reader
	max    int
	buf    []byte
	offset int64 // bytes consumed
}

// NewFrameReader reads frames from r, each at most max bytes (DefaultMaxFrame when
// max <= 0).
func NewFrameReader(r io.Reader, max int) *FrameReader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next frame's message, valid until the next call. It returns a
// *FrameError for a frame it skipped (call Next again), io.EOF at the end of a stream
// that ended between frames, and any other error of the underlying reader (the stream
// is then unusable).
func (f *FrameReader) Next() ([]byte, error) {
	start := f.offset
	c, err := f.r.ReadByte()
	for err == nil && (c == '\n' || c == '\r') { // blank lines between frames
		f.offset++
		start = f.offset
		c, err = f.r.ReadByte()
	}
	if err != nil {
		return nil, err
	}
	f.offset++
	if c == '<' {
		if err := f.r.UnreadByte(); err != nil {
			return nil, err
		}
		f.offset--
		return f.line(start)
	}
	if !isDigit(c) || c == '0' {
		return nil, f.resync(start, fmt.Sprintf("expected an octet count or '<', found %q", c))
	}
	n := int64(c - '0')
	for {
		c, err = f.r.ReadByte()
		if err != nil {
			return nil, f.cut(start, err)
		}
		f.offset++
		if c == ' ' {
			break
		}
		if c == '\n' {
			return nil, &FrameError{Reason: ReasonFrameLength, Offset: start, Detail: "a line without a message"}
		}
		if !isDigit(c) {
			return nil, f.resync(start, "octet count is not a number")
		}
		if n = n*10 + int64(c-'0'); n > implausible*int64(f.max) {
			return nil, f.resync(start, "octet count too large to be one")
		}
	}
	if n > int64(f.max) {
		skipped, err := f.r.Discard(int(n))
		f.offset += int64(skipped)
		if err != nil {
			return nil, f.cut(start, err)
		}
		return nil, &FrameError{Reason: ReasonFrameSize, Offset: start, Detail: fmt.Sprintf("%d bytes, over the limit of %d", n, f.max)}
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n)
	}
	f.buf = f.buf[:n]
	got, err := io.ReadFull(f.r, f.buf)
	f.offset += int64(got)
	if err != nil {
		return nil, f.cut(start, err)
	}
	return f.buf, nil
}

// line reads a newline-terminated frame (the newline kept, as in an octet-counted one).
func (f *FrameReader) line(start int64) ([]byte, error) {
	f.buf = f.buf[:0]
	over := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		f.offset += int64(len(chunk))
		if over = over || len(f.buf)+len(chunk) > f.max; !over {
			f.buf = append(f.buf, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && err != io.EOF:
			return nil, err
		case over:
			return nil, &FrameError{Reason: ReasonFrameSize, Offset: start, Detail: fmt.Sprintf("a line over the limit of %d bytes", f.max)}
		case err == nil || len(f.buf) > 0:
			return f.buf, nil // at io.EOF: a last message without its newline
		default:
			return nil, io.EOF
		}
	}
}

// resync skips to the next newline after a frame that cannot be read.
func (f *FrameReader) resync(start int64, detail string) error {
	for {
		chunk, err := f.r.ReadSlice('\n')
		f.offset += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		return &FrameError{Reason: ReasonFrameLength, Offset: start, Detail: detail}
	}
}

// cut reports a frame the stream ended in; other read errors pass through.
func (f *FrameReader) cut(start int64, err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &FrameError{Reason: ReasonFrameCut, Offset: start, Detail: "the stream ended inside the frame"}
	}
	return err
}

// AppendFrame appends msg with its octet count, as the agent writes to TCP drains.
func AppendFrame(dst, msg []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(msg)), 10)
	dst = append(dst, ' ')
	return append(dst, msg...)
}

// SplitBody calls fn with each message of an HTTPS drain request body: one message
// (the agent's HTTPS writer) or several, each ending with a newline (its batching
// writer). A message ends at a newline that is followed by '<' or by the end of the
// body, so that an app's multi-line output stays in one message; a line of such output
// that itself starts with '<' is taken for a new message (and will likely not parse).
func SplitBody(body []byte, fn func(msg []byte)) {
	for len(body) > 0 {
		end := len(body)
		for i := 0; i < len(body); {
			j := bytes.IndexByte(body[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			if i == len(body) || body[i] == '<' {
				end = i
				break
			}
		}
		if msg := body[:end]; len(bytes.TrimSpace(msg)) > 0 {
			fn(msg)
		}
		body = body[end:]
	}
}
