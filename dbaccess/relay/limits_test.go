package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/httplimit"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

const token = "test-token-0123456789"

// bound is how long a test waits for the server to close a connection: far beyond the
// short timeouts the tests set, so a loaded machine cannot make them fail; a server that
// never closes fails them.
const bound = 30 * time.Second

func startRelay(t *testing.T, mod func(*Config)) *Server {
	t.Helper()
	store, err := resultsdb.OpenPool(context.Background(), testpg.DSN(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	cfg := Config{Store: store, Token: token}
	if mod != nil {
		mod(&cfg)
	}
	s := New(cfg)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// dial connects to s and gives up on every read after bound.
func dial(t *testing.T, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(bound))
	return conn, bufio.NewReader(conn)
}

// closedByServer reads what is left and fails unless the server closed the connection.
func closedByServer(t *testing.T, br *bufio.Reader) {
	t.Helper()
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", bound)
	}
}

func readResponse(t *testing.T, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestRefusedBeforeTheBody: a request without the token is answered 401 with none of
// its body read, and its connection is closed, whether the body is still coming or
// the client would keep the connection alive.
func TestRefusedBeforeTheBody(t *testing.T) {
	s := startRelay(t, nil) // production timeouts: the close must not wait for them
	for name, req := range map[string]string{
		"slow body":   "POST /v1/workers/1/samples HTTP/1.1\r\nHost: relay\r\nContent-Length: 1000000\r\n\r\nPGCOPY",
		"wrong token": "POST /v1/workers HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer nope\r\nContent-Length: 1000000\r\n\r\n{",
		"keep-alive":  "GET /v1/stats HTTP/1.1\r\nHost: relay\r\nConnection: keep-alive\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, br := dial(t, s)
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			if resp := readResponse(t, br); resp.StatusCode != http.StatusUnauthorized || !resp.Close {
				t.Errorf("answer %d, close %v; want 401 and close", resp.StatusCode, resp.Close)
			}
			closedByServer(t, br)
		})
	}
	if st := s.Stats(); st.BodyBytes != 0 || st.Refused != 3 {
		t.Errorf("read %d bytes of bodies of %d refused requests; want 0 of 3", st.BodyBytes, st.Refused)
	}
}

// TestDeadlines: with the token, a body that stops coming and a kept-alive connection
// left idle are closed once their timeouts pass.
func TestDeadlines(t *testing.T) {
	s := startRelay(t, func(c *Config) {
		c.Timeouts = httplimit.Timeouts{Body: 100 * time.Millisecond, Idle: 100 * time.Millisecond}
	})
	auth := "Authorization: Bearer " + token + "\r\n"
	t.Run("slow body", func(t *testing.T) {
		conn, br := dial(t, s)
		io.WriteString(conn, "POST /v1/workers/1/samples HTTP/1.1\r\nHost: relay\r\n"+auth+"Content-Length: 1000000\r\n\r\nPGCOPY")
		// The server may or may not get an answer out; either way the connection ends.
		closedByServer(t, br)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, br := dial(t, s)
		io.WriteString(conn, "GET /v1/stats HTTP/1.1\r\nHost: relay\r\n"+auth+"\r\n")
		if resp := readResponse(t, br); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("answer %d, close %v; want 200 kept alive", resp.StatusCode, resp.Close)
		}
		closedByServer(t, br)
	})
}

// TestOversizedBody: a post of samples over MaxBody is answered 413, having read no more
// than MaxBody of it, with or without a length announced.
func TestOversizedBody(t *testing.T) {
	const limit = 64 << 10
	s := startRelay(t, func(c *Config) { c.MaxBody = limit })
	before := int64(0)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			conn, br := dial(t, s)
			go func() { // 64 times the limit; the server closes before it is all sent
				hdr := "POST /v1/workers/1/samples HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer " + token + "\r\n"
				if chunked {
					io.WriteString(conn, hdr+"Transfer-Encoding: chunked\r\n\r\n")
				} else {
					io.WriteString(conn, hdr+fmt.Sprintf("Content-Length: %d\r\n\r\n", 64*limit))
				}
				chunk := make([]byte, limit)
				for range 64 {
					if chunked {
						fmt.Fprintf(conn, "%x\r\n", len(chunk))
					}
					if _, err := conn.Write(chunk); err != nil {
						return
					}
					if chunked {
						io.WriteString(conn, "\r\n")
					}
				}
			}()
			if resp := readResponse(t, br); resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("answer %d, want 413", resp.StatusCode)
			}
			closedByServer(t, br)
			if read := s.Stats().BodyBytes - before; read > limit+1 {
				t.Errorf("read %d bytes of the body, want at most the limit, %d", read, limit)
			}
			before = s.Stats().BodyBytes
		})
	}
}

// TestDefaultBodyFitsABatch: the default MaxBody takes the largest batch a worker posts
// (resultsdb's default BatchSize) twice over.
func TestDefaultBodyFitsABatch(t *testing.T) {
	n, err := io.Copy(io.Discard, resultsdb.CopyStream(1, [][]sample.Sample{make([]sample.Sample, 32<<10)}))
	if err != nil {
		t.Fatal(err)
	}
	if limit := New(Config{}).cfg.MaxBody; 2*n > limit {
		t.Errorf("a batch is %d bytes; the default limit %d does not take it twice", n, limit)
	}
}
