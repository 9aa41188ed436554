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

// A Parser finds a response only once all of it is there, takes exactly its bytes and
// judges the connection as Conn.Do does.
func TestParserWaitsForTheWholeResponse(t *testing.T) {
	full := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	chunked := "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
	var p Parser
	for _, tc := range []struct {
		in         string
		status     int
		bytes      int64
		used       int
		keep       bool
		incomplete bool
	}{
		{in: full, status: 200, bytes: 5, used: len(full), keep: true},
		{in: full + "HTTP/1.1", status: 200, bytes: 5, used: len(full), keep: true},
		{in: chunked, status: 201, bytes: 3, used: len(chunked), keep: true},
		{in: "HTTP/1.1 100 Continue\r\n\r\n" + full, status: 200, bytes: 5, used: len(full) + 25, keep: true},
		{in: "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", status: 204, used: 46},
		{in: full[:len(full)-1], incomplete: true},
		{in: full[:20], incomplete: true},
		{in: chunked[:len(chunked)-2], incomplete: true},
		{in: "HTTP/1.1 200 OK\r\n\r\nuntil close", incomplete: true},
	} {
		resp, used, keep, err := p.Parse([]byte(tc.in), false)
		if tc.incomplete {
			if err != ErrIncomplete {
				t.Errorf("%q: %v, want ErrIncomplete", tc.in, err)
			}
			continue
		}
		if err != nil || resp.Status != tc.status || resp.Bytes != tc.bytes || used != tc.used || keep != tc.keep {
			t.Errorf("%q: %+v used %d keep %t err %v; want status %d, %d bytes, used %d, keep %t", tc.in, resp, used, keep, err,
				tc.status, tc.bytes, tc.used, tc.keep)
		}
	}
	if _, _, _, err := p.Parse([]byte("HTTP/2 200\r\n\r\n"), false); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad status line: %v", err)
	}
	b := []byte(full)
	if n := testing.AllocsPerRun(100, func() { p.Parse(b, false) }); n != 0 {
		t.Errorf("Parse allocates %v times", n)
	}
}
