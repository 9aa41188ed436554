package h1

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// A request head larger than the socket takes at once (here 8 MiB, to a server that
// reads only after a pause) is written whole before its response is read, and the
// connection carries the next request as usual.
func TestARequestLargerThanTheSocketBufferGoesOutWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 2)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var buf []byte
		chunk := make([]byte, 64<<10)
		for range 2 {
			time.Sleep(50 * time.Millisecond) // the client's socket fills meanwhile
			for !bytes.Contains(buf, []byte("\r\n\r\n")) {
				n, err := c.Read(chunk)
				if err != nil {
					return
				}
				buf = append(buf, chunk[:n]...)
			}
			end := bytes.Index(buf, []byte("\r\n\r\n")) + 4
			got <- end
			buf = buf[end:]
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	}()
	r, err := NewRequest("GET", "/", "test.local", []Field{{Name: "X-Big", Value: strings.Repeat("b", 8<<20)}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(ln.Addr().String(), &net.Dialer{}, true)
	defer c.Close()
	for i := range 2 {
		resp, err := c.Do(context.Background(), r, stampOf(i), time.Now().Add(10*time.Second))
		if err != nil || resp.Status != 200 || resp.Bytes != 2 {
			t.Fatalf("request %d: %+v, %v", i, resp, err)
		}
		if n := <-got; n != len(r.head) {
			t.Fatalf("request %d: the server read a head of %d bytes, want %d", i, n, len(r.head))
		}
	}
}
