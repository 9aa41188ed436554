package router

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Canonical header keys, used to index http.Header directly.
const (
	hdrAppInstance    = "X-Cf-App-Instance"
	hdrRouterError    = "X-Cf-Routererror"
	hdrVcapRequestID  = "X-Vcap-Request-Id"
	hdrRequestStart   = "X-Request-Start"
	hdrForwardedFor   = "X-Forwarded-For"
	hdrForwardedProto = "X-Forwarded-Proto"
	hdrApplicationID  = "X-Cf-Applicationid"
	hdrInstanceIndex  = "X-Cf-Instanceindex"
	hdrInstanceID     = "X-Cf-Instanceid"
	hdrB3             = "B3"
	hdrB3TraceID      = "X-B3-Traceid"
	hdrB3SpanID       = "X-B3-Spanid"
	hdrB3ParentSpanID = "X-B3-Parentspanid"
	hdrB3Sampled      = "X-B3-Sampled"
	hdrB3Flags        = "X-B3-Flags"
)

// Slots of exchange.hdr: header values the router sets, kept in the
// exchange so that setting them costs no allocation.
const (
	slotVcapRequestID = iota
	slotB3TraceID
	slotB3SpanID
	slotB3
	slotForwardedProto
	slotRequestStart
	slotApplicationID
	slotInstanceIndex
	slotInstanceID
	numSlots
)

// exchange is the state of one request, gorouter's RequestInfo. It is also
// the context of the request handed to the reverse proxy, so the director
// and the transport find it without another allocation.
type exchange struct {
	context.Context // the inbound request's context

	req  *http.Request // as received (headers amended by tracing)
	w    responseWriter
	body countingBody

	route           Route
	pinned          bool // X-Cf-App-Instance chose pin
	pin             Backend
	backend         Backend // last endpoint tried, for the log
	hasBackend      bool
	endpointFailure bool        // the transport gave up on every attempt
	backendHeader   http.Header // headers as sent to the backend

	receivedAt, appStartedAt, appFinishedAt, finishedAt time.Time
	gorouterTime                                        float64

	hdr [numSlots]string
}

type exchangeKey struct{}

// Value makes the exchange findable from contexts derived from it.
func (ex *exchange) Value(key any) any {
	if key == (exchangeKey{}) {
		return ex
	}
	return ex.Context.Value(key)
}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// set stores v in slot i and sets it as the only value of h[key].
func (ex *exchange) set(h http.Header, key string, i int, v string) {
	ex.hdr[i] = v
	h[key] = ex.hdr[i : i+1 : i+1]
}

// serveHTTP follows gorouter's handler chain: request info, tracing, vcap
// request id, access log, reporter, lookup, X-Forwarded-Proto, proxy.
func (rt *Router) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rt.active.Add(1)
	defer rt.active.Add(-1)

	ex := &exchange{Context: r.Context(), req: r}
	ex.receivedAt = rt.now()
	ex.w.rw = w
	ex.w.now = rt.now
	ex.applyTracing(r.Header)
	if r.Body != nil && r.Body != http.NoBody {
		ex.body.rc = r.Body
		r.Body = &ex.body
	}

	rt.route(ex, r)

	// As in gorouter's reporter handler: gorouter_time stays 0 unless an
	// endpoint was chosen, and is response time minus app time, where app
	// time spans the whole reverse-proxy call including body streaming.
	ex.finishedAt = rt.responseEnd(ex)
	if ex.hasBackend && !ex.appFinishedAt.IsZero() {
		ex.gorouterTime = -1
		appTime := ex.appFinishedAt.Sub(ex.appStartedAt).Seconds()
		rtTime := ex.finishedAt.Sub(ex.receivedAt).Seconds()
		if rtTime >= 0 && appTime >= 0 {
			ex.gorouterTime = rtTime - appTime
		}
	}
	// If the reverse proxy panicked with http.ErrAbortHandler (the client
	// went away mid-response) we never get here: gorouter loses that line
	// too.
	rt.writeAccessLog(ex)
}

func (rt *Router) route(ex *exchange, r *http.Request) {
	w := &ex.w
	// gorouter rejects a missing Host and one equal to the client's own
	// address (what some load balancers put into HTTP/1.0 requests).
	if r.Host == "" || hostWithoutPort(r.Host) == hostWithoutPort(r.RemoteAddr) {
		w.Header().Set("Cache-Control", "public,max-age=2")
		writeError(w, http.StatusBadRequest, "empty_host", "Request had empty Host header")
		return
	}
	host := strings.ToLower(hostWithoutPort(r.Host))

	if v := r.Header[hdrAppInstance]; len(v) > 0 && v[0] != "" {
		guid, idxText, idx, ok := parseAppInstance(v[0])
		if !ok {
			w.Header().Set("Cache-Control", "no-cache, no-store")
			writeError(w, http.StatusBadRequest, "invalid_cf_app_instance_header", "Invalid X-CF-App-Instance Header")
			return
		}
		route, found := rt.cfg.Table.Route(host, r.URL.EscapedPath())
		var b Backend
		if found && route.AppGUID == guid && idx >= 0 {
			b, found = rt.cfg.Table.Instance(guid, idx)
		} else {
			found = false
		}
		if !found {
			w.Header().Set("Cache-Control", "no-cache, no-store")
			writeError(w, http.StatusBadRequest, "unknown_route",
				"Requested instance ('"+idxText+"') with guid ('"+guid+"') does not exist for route ('"+r.Host+"')")
			return
		}
		ex.route, ex.pinned, ex.pin = route, true, b
	} else {
		route, found := rt.cfg.Table.Route(host, r.URL.EscapedPath())
		if !found {
			w.Header().Set("Cache-Control", "no-cache, no-store")
			writeError(w, http.StatusNotFound, "unknown_route", "Requested route ('"+r.Host+"') does not exist.")
			return
		}
		if len(route.Backends) == 0 {
			// routing-release's empty_pool_response_code_503 defaults to true.
			w.Header().Set("Cache-Control", "public,max-age=2")
			writeError(w, http.StatusServiceUnavailable, "no_endpoints", "Requested route ('"+r.Host+"') has no available endpoints.")
			return
		}
		ex.route = route
	}

	// gorouter keeps a client's X-Forwarded-Proto (sanitize_forwarded_proto
	// defaults to false) and otherwise sets the scheme it was reached on.
	if v := r.Header[hdrForwardedProto]; len(v) == 0 || v[0] == "" {
		ex.set(r.Header, hdrForwardedProto, slotForwardedProto, "http")
	}

	ex.appStartedAt = rt.now()
	rt.proxy.ServeHTTP(w, r.WithContext(ex))
	// The app's part ends where the response does when the proxy streamed
	// the body: its last bytes are the app's.
	ex.appFinishedAt = rt.responseEnd(ex)
}

// responseEnd is the end mark of the response: when the router handed its
// last body bytes to the client connection, taken just before that write;
// the time now when it wrote no body (what it buffered goes out after the
// handler returns, so now is still before the last write). gorouter reads
// its clock once the handler chain has returned, after the last write, but
// then the client may have the whole response, and take its own end mark,
// before this goroutine runs again: on one machine, with client and router
// sharing CPUs, that made response_time exceed the client's latency for 3%
// of requests, by up to 9 ms, and a mark read as soon as the last write
// returned still did for 1% (the write itself wakes the client). From
// before the write, the mark precedes any client's end.
func (rt *Router) responseEnd(ex *exchange) time.Time {
	if !ex.w.lastWriteAt.IsZero() {
		return ex.w.lastWriteAt
	}
	return rt.now()
}

// writeError answers like gorouter's plaintext error writer, with the
// X-Cf-Routererror header gorouter's handlers add.
func writeError(w *responseWriter, code int, routerError, msg string) {
	h := w.Header()
	h.Set(hdrRouterError, routerError)
	h.Del("Connection")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, strconv.Itoa(code)+" "+http.StatusText(code)+": "+msg+"\n")
}

// hostWithoutPort cuts at the first colon, as gorouter does.
func hostWithoutPort(host string) string {
	if i := strings.IndexByte(host, ':'); i >= 0 {
		return host[:i]
	}
	return host
}

// parseAppInstance parses X-Cf-App-Instance, which gorouter matches with
// ^[\da-f]{8}-([\da-f]{4}-){3}[\da-f]{12}:\d+$. gorouter compares the
// index as a string, so an index with leading zeros, or too large for an
// int, matches no instance: idx is then -1 while ok stays true.
func parseAppInstance(v string) (guid, idxText string, idx int, ok bool) {
	const guidLen = 36
	if len(v) < guidLen+2 || v[guidLen] != ':' {
		return "", "", 0, false
	}
	guid, idxText = v[:guidLen], v[guidLen+1:]
	for i := 0; i < guidLen; i++ {
		c := guid[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", "", 0, false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return "", "", 0, false
			}
		}
	}
	for i := 0; i < len(idxText); i++ {
		if idxText[i] < '0' || idxText[i] > '9' {
			return "", "", 0, false
		}
	}
	idx, err := strconv.Atoi(idxText)
	if err != nil || (len(idxText) > 1 && idxText[0] == '0') {
		idx = -1
	}
	return guid, idxText, idx, true
}

// counters holds one round-robin counter per app. Reads are lock-free: the
// map is replaced, never changed, when an app is first seen.
type counters struct {
	m  atomic.Pointer[map[string]*atomic.Uint64]
	mu sync.Mutex
}

// next returns the app's counter value and advances it.
func (c *counters) next(app string) uint64 {
	if m := c.m.Load(); m != nil {
		if ctr, ok := (*m)[app]; ok {
			return ctr.Add(1) - 1
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[string]*atomic.Uint64
	if m := c.m.Load(); m != nil {
		old = *m
	}
	ctr, ok := old[app]
	if !ok {
		m := make(map[string]*atomic.Uint64, len(old)+1)
		for k, v := range old {
			m[k] = v
		}
		ctr = new(atomic.Uint64)
		m[app] = ctr
		c.m.Store(&m)
	}
	return ctr.Add(1) - 1
}
