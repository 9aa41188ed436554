package h1

import (
	"bufio"
	"errors"
	"io"

	"github.com/cf-benchmark/cf-benchmark/internal/decimal"
)

// ErrMalformed is wrapped by every error about a response that is not valid HTTP/1.x
// as this package reads it. It is no network error: sample.Classify calls it other.
var ErrMalformed = errors.New("h1: malformed response")

// Response is what a load generator keeps of a response.
type Response struct {
	Status int   // HTTP status code; 0 when no status line was read
	Bytes  int64 // body bytes read (after removing chunked framing)
}

const (
	// maxHeaderBytes bounds a response's status line and headers (each 1xx counted
	// separately), so that a hostile peer cannot keep us reading forever.
	maxHeaderBytes = 1 << 20
	// max1xx bounds the informational responses skipped before the final one.
	max1xx = 8
	// maxChunkLine bounds a chunk-size line with its extensions.
	maxChunkLine = 4 << 10
)

// malformed errors are fixed values: the parser never allocates, even on bad input.
var (
	errStatusLine    = malformedError("bad status line")
	errHeaderLine    = malformedError("bad header line")
	errHeaderTooLong = malformedError("headers too long")
	errContentLength = malformedError("bad Content-Length")
	errTransferEnc   = malformedError("unsupported Transfer-Encoding")
	errChunk         = malformedError("bad chunk framing")
	errTooMany1xx    = malformedError("too many 1xx responses")
)

type malformedError string

func (e malformedError) Error() string { return "h1: malformed response: " + string(e) }
func (e malformedError) Unwrap() error { return ErrMalformed }

// header is what readHead keeps of a response head.
type header struct {
	status        int
	http10        bool
	contentLength int64 // -1 when absent
	chunked       bool
	closeConn     bool // Connection: close
	keepAlive     bool // Connection: keep-alive (matters for HTTP/1.0)
}

// readResponse reads one whole response from br, skipping 1xx responses and counting
// and discarding the body; head says the request was HEAD. keep reports whether the
// connection may carry another request. On an error after the status line, resp has
// the status and the body bytes read so far.
func readResponse(br *bufio.Reader, head bool) (resp Response, keep bool, err error) {
	var h header
	for n := 0; ; n++ {
		if h, err = readHead(br, n == 0); err != nil {
			return resp, false, err
		}
		// 101 Switching Protocols is final: the connection then speaks something else.
		if h.status >= 200 || h.status == 101 {
			break
		}
		if n == max1xx {
			return resp, false, errTooMany1xx
		}
	}
	resp.Status = h.status
	keep = !h.closeConn && (!h.http10 || h.keepAlive) && h.status != 101
	switch {
	case head || h.status == 204 || h.status == 304 || h.status == 101:
		return resp, keep, nil
	case h.chunked:
		resp.Bytes, err = readChunked(br)
	case h.contentLength >= 0:
		resp.Bytes, err = discard(br, h.contentLength)
	default:
		// No length: the body ends when the server closes the connection.
		resp.Bytes, err = discard(br, 1<<62)
		if err == io.ErrUnexpectedEOF {
			err = nil
		}
		keep = false
	}
	if err != nil {
		keep = false
	}
	return resp, keep, err
}

// readHead reads a status line and its headers. first says no byte of this response has
// been read yet, so that a connection closed before it says io.EOF.
func readHead(br *bufio.Reader, first bool) (header, error) {
	h := header{contentLength: -1}
	total := 0
	line, err := readLine(br, &total)
	if err != nil {
		if err == io.EOF && !first {
			err = io.ErrUnexpectedEOF
		}
		return h, err
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
		len(line) > 12 && line[12] != ' ' {
		return h, errStatusLine
	}
	h.http10 = line[7] == '0'
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return h, errStatusLine
		}
		h.status = h.status*10 + int(c-'0')
	}
	if h.status < 100 {
		return h, errStatusLine
	}
	for {
		line, err := readLine(br, &total)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return h, err
		}
		if len(line) == 0 {
			return h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // obsolete line folding: a continuation of a header we ignore
		}
		colon := -1
		for i, c := range line {
			if c == ':' {
				colon = i
				break
			}
		}
		if colon <= 0 {
			return h, errHeaderLine
		}
		name, value := line[:colon], trim(line[colon+1:])
		switch {
		case equalFold(name, "content-length"):
			n, ok := decimal.Parse(value)
			if !ok || h.contentLength >= 0 && h.contentLength != n {
				return h, errContentLength
			}
			h.contentLength = n
		case equalFold(name, "transfer-encoding"):
			// Like net/http, chunked is the only coding, and HTTP/1.0 has none.
			if h.http10 {
				continue
			}
			if !equalFold(value, "chunked") {
				return h, errTransferEnc
			}
			h.chunked = true
		case equalFold(name, "connection"):
			for len(value) > 0 {
				var tok []byte
				tok, value = nextToken(value)
				if equalFold(tok, "close") {
					h.closeConn = true
				} else if equalFold(tok, "keep-alive") {
					h.keepAlive = true
				}
			}
		}
	}
}

// readLine returns the next line without its line ending (CRLF or a bare LF), valid
// until the next read from br. It adds the bytes read to *total and fails when that
// exceeds maxHeaderBytes. A line longer than br's buffer is returned cut to the
// buffer's size, its rest skipped: the headers we read have short values, and a long
// one of them fails to parse.
func readLine(br *bufio.Reader, total *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	*total += len(line)
	if err == bufio.ErrBufferFull {
		// The start of the line is only valid until the next read: judge the header by
		// its name now, then skip the rest.
		if !boringLine(line) {
			return nil, errHeaderLine
		}
		for err == bufio.ErrBufferFull {
			if *total > maxHeaderBytes {
				return nil, errHeaderTooLong
			}
			var more []byte
			more, err = br.ReadSlice('\n')
			*total += len(more)
		}
		if err != nil {
			return nil, eofToUnexpected(err)
		}
		if *total > maxHeaderBytes {
			return nil, errHeaderTooLong
		}
		return longLine, nil
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if *total > maxHeaderBytes {
		return nil, errHeaderTooLong
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, nil
}

// longLine stands for a line too long for the buffer whose name is none we read.
var longLine = []byte("X-Long-Line: -")

// boringLine reports whether the start of a header line names a header readHead
// ignores.
func boringLine(start []byte) bool {
	for i, c := range start {
		if c == ':' {
			name := start[:i]
			return i > 0 && !equalFold(name, "content-length") && !equalFold(name, "transfer-encoding") &&
				!equalFold(name, "connection")
		}
	}
	return false
}

func eofToUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readChunked reads a chunked body to its end, trailers included, and returns the
// number of data bytes.
func readChunked(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		total := maxHeaderBytes - maxChunkLine // readLine's bound is the chunk line's
		line, err := readLine(br, &total)
		if err == errHeaderTooLong || err == errHeaderLine {
			return n, errChunk
		} else if err != nil {
			return n, eofToUnexpected(err)
		}
		size, ok := parseChunkSize(line)
		if !ok {
			return n, errChunk
		}
		if size == 0 {
			break
		}
		got, err := discard(br, size)
		n += got
		if err != nil {
			return n, err
		}
		// The CRLF after the data.
		total = maxHeaderBytes - 2
		if line, err = readLine(br, &total); err != nil && err != errHeaderTooLong && err != errHeaderLine {
			return n, eofToUnexpected(err)
		} else if err != nil || len(line) != 0 {
			return n, errChunk
		}
	}
	// Trailers, up to the blank line.
	total := 0
	for {
		line, err := readLine(br, &total)
		if err != nil {
			return n, eofToUnexpected(err)
		}
		if len(line) == 0 {
			return n, nil
		}
	}
}

// parseChunkSize parses "HEX[ ;ext...]".
func parseChunkSize(line []byte) (int64, bool) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto rest
		}
		if n >= 1<<58 { // sizes stay below 1<<62
			return 0, false
		}
		n = n<<4 | int64(d)
	}
rest:
	if i == 0 {
		return 0, false
	}
	for ; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t':
		case ';':
			return n, true // extensions are ignored
		default:
			return 0, false
		}
	}
	return n, true
}

// discard skips n body bytes and returns how many it skipped; a connection closed
// before n is io.ErrUnexpectedEOF.
func discard(br *bufio.Reader, n int64) (int64, error) {
	var done int64
	for done < n {
		step := int(min(n-done, 1<<30))
		got, err := br.Discard(step)
		done += int64(got)
		if err != nil {
			return done, eofToUnexpected(err)
		}
	}
	return done, nil
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// nextToken splits a comma-separated list: the first element, trimmed, and the rest.
func nextToken(b []byte) (tok, rest []byte) {
	for i, c := range b {
		if c == ',' {
			return trim(b[:i]), b[i+1:]
		}
	}
	return trim(b), nil
}

// equalFold reports whether b equals the lower-case ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
