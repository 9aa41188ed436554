package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/loadgen/h1"
)

// client sends the requests of one user (closed loop) or one sender (open loop), one
// at a time, over its own connection. Only its owner calls do and close; abort may be
// called from any goroutine.
type client interface {
	// do sends request i of the mix as request seq of this worker and reads the whole
	// response. deadline bounds it; ctx aborts it (with abort).
	do(ctx context.Context, i int, seq uint64, deadline time.Time) (status int, bytes int64, err error)
	// abort interrupts a do in progress; the next do is not affected.
	abort()
	// close releases the client's connection.
	close()
}

var (
	_ client = (*leanClient)(nil)
	_ client = stdClient{}
)

// stdClient is the net/http client, shared by all users through the Transport's pool.
type stdClient struct{ g *Generator }

func (c stdClient) do(ctx context.Context, i int, seq uint64, _ time.Time) (int, int64, error) {
	g := c.g
	r := &g.cfg.Requests[i]
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, g.urls[i], body)
	if err != nil {
		return 0, 0, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	id := sample.NewTraceID(g.cfg.TraceTag, g.cfg.WorkerID, seq)
	traceID := id.String()
	req.Header["X-B3-Traceid"] = []string{traceID}
	req.Header["X-B3-Spanid"] = []string{id.SpanID()}
	if g.cfg.CorrelationHeader != "" {
		req.Header.Set(g.cfg.CorrelationHeader, traceID)
	}
	resp, err := g.client.Do(req) // bounded by the client's Timeout
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, n, err
}

func (stdClient) abort() {} // the request's context aborts it
func (stdClient) close() {}

// leanClient is the h1 client: one connection, requests prepared as bytes.
type leanClient struct {
	conn  *h1.Conn
	reqs  []*h1.Request
	stamp [h1.StampLen]byte
}

func (c *leanClient) do(ctx context.Context, i int, seq uint64, deadline time.Time) (int, int64, error) {
	// Trace id = the generator's 16-hex prefix (in the prepared request) + seq; span
	// id = seq.
	const digits = "0123456789abcdef"
	for j := h1.StampLen - 1; j >= 0; j-- {
		c.stamp[j] = digits[seq&15]
		seq >>= 4
	}
	resp, err := c.conn.Do(ctx, c.reqs[i], &c.stamp, deadline)
	return resp.Status, resp.Bytes, err
}

func (c *leanClient) abort() { c.conn.Abort() }
func (c *leanClient) close() { c.conn.Close() }

// lean is the generator's plan for the h1 client.
type lean struct {
	addr   string // dialled: the target's host:port, or Config.ConnectTo
	dialer net.Dialer
	reqs   []*h1.Request

	mu   sync.Mutex
	idle []*leanClient // clients of users and senders that finished, with their connections
}

// leanReservedHeaders are request headers that change how a request is framed or how
// its connection is managed; a mix that sets any of them goes through net/http.
var leanReservedHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Te",
	"Upgrade", "Expect", "Keep-Alive", "Proxy-Connection"}

// newLean prepares cfg for the h1 client, or says why the generator must use net/http.
// The bytes are what net/http would send for the same request with this generator's
// Transport (no compression, keep-alive or Connection: close), headers aside from
// order and case.
func newLean(cfg *Config, urls []string) (*lean, error) {
	t := cfg.Target
	switch {
	case t.Scheme != "http":
		return nil, fmt.Errorf("scheme %q", t.Scheme)
	case t.User != nil:
		return nil, errors.New("user info in the target URL")
	case !isASCII(t.Host) || strings.Contains(t.Host, "%"):
		return nil, fmt.Errorf("host %q needs IDNA or zone handling", t.Host)
	}
	port := t.Port()
	if port == "" {
		port = "80"
	}
	corr := ""
	if cfg.CorrelationHeader != "" {
		corr = textproto.CanonicalMIMEHeaderKey(cfg.CorrelationHeader)
	}
	// Every trace id of this worker is one 16-hex prefix and the 16-hex sequence
	// number, which is also the span id: h1 stamps only the sequence number.
	const probe = 0x0123456789abcdef
	id := sample.NewTraceID(cfg.TraceTag, cfg.WorkerID, probe)
	prefix, tail := id.String()[:16], id.String()[16:]
	if tail != fmt.Sprintf("%016x", uint64(probe)) || id.SpanID() != tail {
		return nil, errors.New("trace ids do not end in the sequence number")
	}
	l := &lean{
		addr:   net.JoinHostPort(t.Hostname(), port),
		dialer: net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second},
	}
	if cfg.ConnectTo != "" {
		l.addr = cfg.ConnectTo // the Host header below stays the URL's
	}
	for i, r := range cfg.Requests {
		u, err := url.Parse(urls[i])
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		method := r.Method
		if method == "" {
			method = http.MethodGet
		}
		fields := []h1.Field{{Name: "User-Agent", Value: "Go-http-client/1.1"}}
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ck := textproto.CanonicalMIMEHeaderKey(k)
			switch {
			case slices.Contains(leanReservedHeaders, ck):
				return nil, fmt.Errorf("request %d sets header %s", i, k)
			case ck == "X-B3-Traceid", ck == "X-B3-Spanid", ck == corr:
				continue // replaced by the generator's
			case k == "User-Agent":
				// As net/http: the first value, none when it is empty.
				fields = fields[1:]
				if len(r.Header[k]) > 0 && r.Header[k][0] != "" {
					fields = append(fields, h1.Field{Name: k, Value: r.Header[k][0]})
				}
				continue
			}
			for _, v := range r.Header[k] {
				fields = append(fields, h1.Field{Name: k, Value: textproto.TrimString(v)})
			}
		}
		fields = append(fields, h1.Field{Name: "X-B3-TraceId", Value: prefix, Stamped: true},
			h1.Field{Name: "X-B3-SpanId", Stamped: true})
		if corr != "" {
			fields = append(fields, h1.Field{Name: corr, Value: prefix, Stamped: true})
		}
		// As net/http: Content-Length for a body, and "0" without one for POST, PUT
		// and PATCH.
		body := r.Body
		if len(body) == 0 {
			body = nil
			if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
				body = []byte{}
			}
		}
		req, err := h1.NewRequest(method, u.RequestURI(), u.Host, fields, body, !cfg.KeepAlive)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		l.reqs = append(l.reqs, req)
	}
	return l, nil
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
}

// client returns an idle client or a new one.
func (l *lean) client(keepAlive bool) *leanClient {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle = l.idle[:n-1]
		return c
	}
	return &leanClient{conn: h1.NewConn(l.addr, &l.dialer, keepAlive), reqs: l.reqs}
}

func (l *lean) put(c *leanClient) {
	l.mu.Lock()
	l.idle = append(l.idle, c)
	l.mu.Unlock()
}

func (l *lean) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.idle {
		c.close()
	}
}
