package router

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// maxAttempts is routing-release's router.backends.max_attempts
	// default; attempts are also capped by the number of backends.
	maxAttempts = 3
	// badGatewayMessage and cancelledMessage are gorouter's bodies for
	// endpoint_failure.
	badGatewayMessage = "502 Bad Gateway: Registered endpoint failed to handle the request."
	cancelledMessage  = "499 Request Cancelled"
	statusCancelled   = 499
)

// newBackendTransport returns the pooled keep-alive client to app
// instances: gorouter's backend template (5 s dial timeout, 1 s TCP
// keep-alive probes, no compression) without its low idle-connection cap,
// and never a proxy from the environment.
func newBackendTransport() *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          0, // no overall limit
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// director mirrors gorouter's setupProxyRequest: the request URI goes to
// the backend exactly as received, X-Request-Start is added unless present
// and X-Cf-App-Instance is dropped. httputil.ReverseProxy then removes
// hop-by-hop headers and appends the client address to X-Forwarded-For.
func (rt *Router) director(out *http.Request) {
	ex := exchangeFrom(out.Context())
	ex.backendHeader = out.Header

	out.URL.Scheme = "http"
	out.URL.Host = out.Host
	out.URL.ForceQuery = false
	out.URL.Opaque = out.RequestURI
	if strings.HasPrefix(out.RequestURI, "//") {
		out.URL.Opaque = "//" + out.Host + escapePathAndPreserveSlashes(out.URL.Path)
		if q := out.URL.Query(); len(q) > 0 {
			out.URL.Opaque += "?" + q.Encode()
		}
	}
	out.URL.RawQuery = ""

	if _, ok := out.Header[hdrRequestStart]; !ok {
		ex.set(out.Header, hdrRequestStart, slotRequestStart, strconv.FormatInt(rt.now().UnixMilli(), 10))
	}
	delete(out.Header, hdrAppInstance)
}

func escapePathAndPreserveSlashes(unescaped string) string {
	parts := strings.Split(unescaped, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// roundTripper picks the backend and retries, as gorouter's round tripper:
// up to maxAttempts distinct backends while the failure is a dial error
// (nothing was sent, so a retry is safe). Like gorouter's pool, which endpoints
// join and leave while a request is retried, a retry picks from the route as the
// table has it then: an instance a rolling deployment stopped after the request
// was routed gives way to the one that replaced it.
type roundTripper struct {
	rt   *Router
	base http.RoundTripper
	h2c  http.RoundTripper // HTTP/2 without TLS, for Route.HTTP2
}

var _ http.RoundTripper = (*roundTripper)(nil)

var errNoExchange = errors.New("request has no router exchange")

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := exchangeFrom(req.Context())
	if ex == nil {
		return nil, errNoExchange
	}
	attempts := 1
	var first uint64
	if !ex.pinned {
		attempts = maxAttempts
		first = t.rt.counters.next(ex.route.AppGUID)
	}
	tried := make(map[string]bool, attempts)
	var err error
	for i := 0; i < attempts; i++ {
		b := ex.pin
		if !ex.pinned {
			if i > 0 {
				t.refresh(ex)
			}
			var ok bool
			if b, ok = untried(ex.route.Backends, first+uint64(i), tried); !ok {
				break
			}
		}
		tried[b.Addr] = true
		ex.backend, ex.hasBackend = b, true
		req.URL.Host = b.Addr
		ex.set(req.Header, hdrApplicationID, slotApplicationID, ex.route.AppGUID)
		ex.set(req.Header, hdrInstanceIndex, slotInstanceIndex, strconv.Itoa(b.Index))
		id := b.InstanceGUID
		if id == "" {
			id = b.Addr
		}
		ex.set(req.Header, hdrInstanceID, slotInstanceID, id)

		base := t.base
		if ex.route.HTTP2 {
			base = t.h2c
		}
		var res *http.Response
		res, err = base.RoundTrip(req)
		if err == nil {
			// gorouter's SetStatus: a 101 never reaches WriteHeader.
			ex.w.status = res.StatusCode
			return res, nil
		}
		var opErr *net.OpError
		retriable := errors.As(err, &opErr) && opErr.Op == "dial" && req.Context().Err() == nil
		t.rt.logger.Error("backend-endpoint-failed",
			slog.String("host", req.Host),
			slog.String("backend", b.Addr),
			slog.Int("attempt", i+1),
			slog.Bool("retriable", retriable),
			slog.String("vcap_request_id", ex.hdr[slotVcapRequestID]),
			slog.Any("error", err))
		if !retriable {
			break
		}
	}
	ex.endpointFailure = true
	return nil, err
}

// refresh gives the exchange the route as the table has it now, if it still has one
// with backends.
func (t *roundTripper) refresh(ex *exchange) {
	if r, ok := t.rt.cfg.Table.Route(strings.ToLower(hostWithoutPort(ex.req.Host)), ex.req.URL.EscapedPath()); ok && len(r.Backends) > 0 && r.AppGUID == ex.route.AppGUID {
		ex.route = r
	}
}

// untried is the first backend from index from on (round robin) not tried yet.
func untried(backends []Backend, from uint64, tried map[string]bool) (Backend, bool) {
	n := uint64(len(backends))
	for k := range n {
		if b := backends[(from+k)%n]; !tried[b.Addr] {
			return b, true
		}
	}
	return Backend{}, false
}

// modifyResponse gives the client the request id unless the app set one.
func modifyResponse(res *http.Response) error {
	if v := res.Header[hdrVcapRequestID]; len(v) == 0 || v[0] == "" {
		if ex := exchangeFrom(res.Request.Context()); ex != nil {
			res.Header[hdrVcapRequestID] = ex.hdr[slotVcapRequestID : slotVcapRequestID+1 : slotVcapRequestID+1]
		}
	}
	return nil
}

// proxyError answers a failed round trip as gorouter's error handler:
// 502 (499 when the client went away) with X-Cf-Routererror:
// endpoint_failure (<error>). Failures of the reverse proxy itself (a
// backend switching to another protocol than asked, say) get its bare 502.
func (rt *Router) proxyError(rw http.ResponseWriter, req *http.Request, err error) {
	ex := exchangeFrom(req.Context())
	if ex == nil || !ex.endpointFailure {
		rt.logger.Warn("proxy-error", slog.String("host", req.Host), slog.Any("error", err))
		if ex == nil || !ex.w.hijacked {
			rw.WriteHeader(http.StatusBadGateway)
		}
		return
	}
	if cerr := ex.Context.Err(); errors.Is(cerr, context.Canceled) && !errors.Is(err, context.Canceled) {
		err = cerr
	}
	h := rw.Header()
	h.Set(hdrRouterError, "endpoint_failure ("+err.Error()+")")
	h.Del("Connection")
	if errors.Is(err, context.Canceled) {
		http.Error(rw, cancelledMessage, statusCancelled)
		return
	}
	http.Error(rw, badGatewayMessage, http.StatusBadGateway)
}

// responseWriter is gorouter's ProxyResponseWriter: it records the status
// and the body bytes written, for the access log, and when the last body
// write began (Router.responseEnd). The reverse proxy may flush from a
// timer goroutine, but under the lock that also serialises its writes.
type responseWriter struct {
	rw          http.ResponseWriter
	now         func() time.Time
	status      int
	size        int64
	hijacked    bool
	lastWriteAt time.Time // zero until a body write
}

var (
	_ http.ResponseWriter = (*responseWriter)(nil)
	_ http.Flusher        = (*responseWriter)(nil)
	_ http.Hijacker       = (*responseWriter)(nil)
)

func (w *responseWriter) Header() http.Header { return w.rw.Header() }

func (w *responseWriter) WriteHeader(code int) {
	h := w.rw.Header()
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no content sniffing, as gorouter
	}
	w.rw.WriteHeader(code)
	if w.status == 0 || (w.status >= 100 && w.status <= 199) {
		w.status = code
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(b) > 0 {
		// Before the write: it may reach the client at once (see
		// Router.responseEnd).
		w.lastWriteAt = w.now()
	}
	n, err := w.rw.Write(b)
	w.size += int64(n)
	return n, err
}

func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError lets http.ResponseController flush without allocating.
func (w *responseWriter) FlushError() error {
	switch f := w.rw.(type) {
	case interface{ FlushError() error }:
		return f.FlushError()
	case http.Flusher:
		f.Flush()
		return nil
	}
	return http.NewResponseController(w.rw).Flush()
}

func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.rw).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, brw, err
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.rw }

// countingBody counts request body bytes read; the transport reads it on
// its own goroutine, hence the atomic.
type countingBody struct {
	rc io.ReadCloser
	n  atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return c.rc.Close() }

// copyBuffers recycles the reverse proxy's body-copy buffers.
type copyBuffers struct{ p sync.Pool }

const copyBufferSize = 32 << 10

func (c *copyBuffers) Get() []byte {
	if b, ok := c.p.Get().(*[copyBufferSize]byte); ok {
		return b[:]
	}
	return make([]byte, copyBufferSize)
}

func (c *copyBuffers) Put(b []byte) {
	if cap(b) >= copyBufferSize {
		c.p.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}
