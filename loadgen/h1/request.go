// Package h1 is a lean HTTP/1.1 client for load generation over plain TCP. A Conn
// carries one request at a time over one connection, kept alive or redialled per
// request; a Request is built once, as bytes, and every Do only stamps a few fixed-size
// fields (trace ids) into a copy the Conn owns, writes it and reads the response,
// counting and discarding its body. Steady-state requests allocate nothing.
//
// It implements what a benchmark target answers with: status line and headers;
// Content-Length, chunked (extensions and trailers skipped) and close-delimited
// bodies; HTTP/1.0 and Connection: close; 1xx informational responses skipped; no body
// for HEAD, 204 and 304. It does not do TLS, proxies, redirects (a redirect is a
// response like any other), pipelining, compression, Expect: 100-continue on the
// sending side, or protocol upgrades (a 101 ends the connection).
package h1

import (
	"errors"
	"fmt"
	"strconv"
)

// StampLen is the size of the value Do writes into every stamped field.
const StampLen = 16

// ErrInvalidRequest is returned by NewRequest for a request this package cannot send
// as given (a bad method, target, host, header name or value).
var ErrInvalidRequest = errors.New("h1: invalid request")

// Field is one request header.
type Field struct {
	Name, Value string
	// Stamped reserves StampLen bytes after Value that every Do fills with its stamp.
	Stamped bool
}

// Request is a request prepared once and sent many times. It is read-only after
// NewRequest and may be shared by any number of Conns.
type Request struct {
	head       []byte // request line, headers, blank line, and the body when small
	body       []byte // a large body, written after head; nil when in head
	stamps     []int  // offsets in head of the stamped values
	headMethod bool   // HEAD: the response has no body
	replayable bool   // may be sent again when a reused connection turns out closed
}

// inlineBody is the largest body copied into a Conn's buffer with the head; larger
// bodies are written from the shared Request by a second write.
const inlineBody = 4 << 10

// NewRequest prepares method target HTTP/1.1 with a Host header, the fields in order,
// Content-Length when body is not nil (so an empty, non-nil body sends
// "Content-Length: 0") and Connection: close when closeConn is set. target is the
// request target as sent ("/path?query"). Nothing else is added: callers that want a
// User-Agent pass it as a field.
func NewRequest(method, target, host string, fields []Field, body []byte, closeConn bool) (*Request, error) {
	switch {
	case !isToken(method):
		return nil, fmt.Errorf("%w: method %q", ErrInvalidRequest, method)
	case target == "" || !isVisible(target):
		return nil, fmt.Errorf("%w: target %q", ErrInvalidRequest, target)
	case host == "" || !isVisible(host):
		return nil, fmt.Errorf("%w: host %q", ErrInvalidRequest, host)
	}
	r := &Request{headMethod: method == "HEAD"}
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		r.replayable = true
	}
	b := make([]byte, 0, 256+len(body))
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	for _, f := range fields {
		if !isToken(f.Name) || !isFieldValue(f.Value) {
			return nil, fmt.Errorf("%w: header %q: %q", ErrInvalidRequest, f.Name, f.Value)
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		if f.Stamped {
			r.stamps = append(r.stamps, len(b))
			for range StampLen {
				b = append(b, '0')
			}
		}
		b = append(b, "\r\n"...)
	}
	if body != nil {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	if closeConn {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	if len(body) <= inlineBody {
		b = append(b, body...)
	} else {
		r.body = body
	}
	r.head = b
	return r, nil
}

// isToken reports whether s is an RFC 9110 token (a method or header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || tokenPunct(c)) {
			return false
		}
	}
	return true
}

func tokenPunct(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// isVisible reports whether s has only visible ASCII (no space, no controls).
func isVisible(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// isFieldValue reports whether s may be sent as a header value: no controls but tab.
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
