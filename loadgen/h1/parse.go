package h1

import (
	"bufio"
	"errors"
)

// ErrIncomplete is returned by Parser.Parse when its bytes do not hold a whole response
// yet: read more and parse them all again.
var ErrIncomplete = errors.New("h1: incomplete response")

// Parser reads responses out of bytes an event loop has received, for callers that
// read the connection themselves. One Parser serves one goroutine; parsing allocates
// nothing.
type Parser struct {
	src sliceReader
	br  *bufio.Reader
}

// Parse reads one whole response from b; head says the request was HEAD. It returns
// the response, the bytes it took from b and whether the connection may carry another
// request, as Conn.Do would judge it; with ErrIncomplete, b ends within the response.
// Bodies that end when the server closes the connection are never complete here.
// Other errors are as Conn.Do's (ErrMalformed).
func (p *Parser) Parse(b []byte, head bool) (resp Response, used int, keep bool, err error) {
	if p.br == nil {
		p.br = bufio.NewReaderSize(&p.src, readBufSize)
	}
	p.src.b = b
	p.br.Reset(&p.src)
	resp, keep, err = readResponse(p.br, head)
	if err == ErrIncomplete {
		// Also a body that ends when the server closes the connection: it never ends
		// within b.
		return resp, 0, false, ErrIncomplete
	}
	return resp, len(b) - len(p.src.b) - p.br.Buffered(), keep, err
}

// sliceReader gives its bytes, then ErrIncomplete.
type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, ErrIncomplete
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// ReadResponse reads one whole response from br as Conn.Do does, for callers that
// finish on a blocking connection what they began parsing with a Parser.
func ReadResponse(br *bufio.Reader, head bool) (resp Response, keep bool, err error) {
	return readResponse(br, head)
}

// AppendHead appends r's head (and its body when small) with every stamped field set to
// stamp, as Conn.Do writes it; Body is what follows it.
func (r *Request) AppendHead(dst []byte, stamp *[StampLen]byte) []byte {
	n := len(dst)
	dst = append(dst, r.head...)
	for _, off := range r.stamps {
		copy(dst[n+off:n+off+StampLen], stamp[:])
	}
	return dst
}

// Body is the body written after the head, nil when it is in the head.
func (r *Request) Body() []byte { return r.body }

// Head reports whether r is a HEAD request (its response has no body).
func (r *Request) Head() bool { return r.headMethod }

// Replayable reports whether r may be sent again on a new connection when a reused one
// turns out closed before any of the response arrived (GET, HEAD, OPTIONS, TRACE).
func (r *Request) Replayable() bool { return r.replayable }
