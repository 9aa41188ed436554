package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nT: x\r\n\r\n",
	"HTTP/1.1 200 OK\r\n\r\nclose-delimited",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
	"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("v", 100) + "\r\n folded\r\nConnection: close\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
	"HTTP/1.1 101 Switching Protocols\r\n\r\n",
}

// FuzzParseResponse feeds any bytes to the parser, as one or more responses over one
// connection, through a buffer small enough to split lines. It must return for every
// input (no panic, no endless loop), with an error that is the connection's end or
// ErrMalformed, and may never count more body bytes than it was given. Where net/http
// also accepts a final response whole, both must agree on its status and body size.
func FuzzParseResponse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var bodyBytes int64
		for i := 0; ; i++ {
			if i > len(data) {
				t.Fatalf("%d responses from %d bytes", i, len(data))
			}
			resp, keep, err := readResponse(br, head)
			bodyBytes += resp.Bytes
			if bodyBytes > int64(len(data)) || resp.Bytes < 0 {
				t.Fatalf("counted %d body bytes in %d bytes of input", bodyBytes, len(data))
			}
			if err != nil {
				if !errors.Is(err, ErrMalformed) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("error %v: neither the end of input nor malformed", err)
				}
				break
			}
			if resp.Status < 100 || resp.Status > 999 {
				t.Fatalf("status %d accepted", resp.Status)
			}
			if i == 0 {
				compareWithNetHTTP(t, data, head, resp)
			}
			if !keep {
				break
			}
		}
	})
}

// compareWithNetHTTP checks resp, our reading of data's first response, against
// net/http's, when net/http reads a final response from it without error.
func compareWithNetHTTP(t *testing.T, data []byte, head bool, resp Response) {
	method := "GET"
	if head {
		method = "HEAD"
	}
	req, _ := http.NewRequest(method, "http://x/", nil)
	theirs, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), req)
	if err != nil || theirs.StatusCode < 200 {
		return // net/http hands 1xx to the caller; we skip them
	}
	n, err := io.Copy(io.Discard, theirs.Body)
	if err != nil {
		return
	}
	if theirs.StatusCode != resp.Status || n != resp.Bytes {
		t.Fatalf("status %d with %d body bytes; net/http reads %d with %d", resp.Status, resp.Bytes, theirs.StatusCode, n)
	}
}

func TestParseChunkSize(t *testing.T) {
	cases := []struct {
		in   string
		n    int64
		okay bool
	}{
		{"0", 0, true}, {"a", 10, true}, {"FF", 255, true}, {"1a;x=y", 26, true}, {"5 ;x", 5, true}, {"5\t", 5, true},
		{"", 0, false}, {";x", 0, false}, {"g", 0, false}, {"5 x", 0, false}, {"-1", 0, false},
		{"4000000000000000", 0, false}, {"3fffffffffffffff", 1<<62 - 1, true},
	}
	for _, c := range cases {
		if n, ok := parseChunkSize([]byte(c.in)); n != c.n || ok != c.okay {
			t.Errorf("parseChunkSize(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.okay)
		}
	}
}
