package router

import (
	"log/slog"
	"strconv"
	"sync"
)

// accessLogTime is gorouter's formatStartedAt layout. gorouter formats its
// local time with a literal Z (its VMs run in UTC); we convert to UTC so the
// Z is true.
const accessLogTime = "2006-01-02T15:04:05.000000000Z"

// extraHeadersToLog is what gorouter appends with Zipkin tracing enabled
// (handlers.Zipkin.HeadersToLog), as log name and canonical header key.
var extraHeadersToLog = [...]struct{ name, key string }{
	{"x_b3_traceid", hdrB3TraceID},
	{"x_b3_spanid", hdrB3SpanID},
	{"x_b3_parentspanid", hdrB3ParentSpanID},
	{"b3", hdrB3},
}

var logBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (rt *Router) writeAccessLog(ex *exchange) {
	if rt.cfg.AccessLog == nil {
		return
	}
	bp := logBuffers.Get().(*[]byte)
	b := appendRecord((*bp)[:0], ex)
	b = append(b, '\n')
	rt.logMu.Lock()
	_, err := rt.cfg.AccessLog.Write(b)
	rt.logMu.Unlock()
	if err != nil {
		rt.logger.Error("access-log-write-failed", slog.Any("error", err))
	}
	if cap(b) <= 64<<10 {
		*bp = b
		logBuffers.Put(bp)
	}
}

// appendRecord renders ex as gorouter's AccessLogRecord.makeRecord does for
// its file writer (no truncation): quoted values via strconv.Quote, "-" for
// empty strings and a zero status, durations in seconds with 6 decimals.
// With no extra fields configured, x_cf_routererror follows instance_id
// and the Zipkin headers end the line.
func appendRecord(b []byte, ex *exchange) []byte {
	r := ex.req
	// Referer, User-Agent and the forwarding headers are logged as sent to
	// the backend when the request got that far, else as received.
	headers := r.Header
	if ex.backendHeader != nil {
		headers = ex.backendHeader
	}
	var appID, addr, appIndex, instanceID string
	if ex.hasBackend {
		appID = ex.route.AppGUID
		addr = ex.backend.Addr
		appIndex = strconv.Itoa(ex.backend.Index)
		instanceID = ex.backend.InstanceGUID
	}

	b = append(b, r.Host...)
	b = append(b, " - ["...)
	b = ex.receivedAt.UTC().AppendFormat(b, accessLogTime)
	b = append(b, "] "...)

	b = append(b, '"')
	b = appendQuotedInner(b, r.Method)
	b = append(b, ' ')
	b = appendQuotedInner(b, r.URL.RequestURI())
	b = append(b, ' ')
	b = appendQuotedInner(b, r.Proto)
	b = append(b, '"', ' ')

	if ex.w.status == 0 {
		b = append(b, `"-" `...)
	} else {
		b = strconv.AppendInt(b, int64(ex.w.status), 10)
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, ex.body.n.Load(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ex.w.size, 10)
	b = append(b, ' ')

	b = appendDashOrQuoted(b, first(headers, "Referer"))
	b = append(b, ' ')
	b = appendDashOrQuoted(b, first(headers, "User-Agent"))
	b = append(b, ' ')
	b = appendDashOrQuoted(b, r.RemoteAddr)
	b = append(b, ' ')
	b = appendDashOrQuoted(b, addr)
	b = append(b, " x_forwarded_for:"...)
	b = appendDashOrQuoted(b, first(headers, hdrForwardedFor))
	b = append(b, " x_forwarded_proto:"...)
	b = appendDashOrQuoted(b, first(headers, hdrForwardedProto))
	b = append(b, " vcap_request_id:"...)
	b = appendDashOrQuoted(b, first(headers, hdrVcapRequestID))
	b = append(b, " response_time:"...)
	b = appendDashOrSeconds(b, ex.finishedAt.Sub(ex.receivedAt).Seconds())
	b = append(b, " gorouter_time:"...)
	b = appendDashOrSeconds(b, ex.gorouterTime)
	b = append(b, " app_id:"...)
	b = appendDashOrQuoted(b, appID)
	b = append(b, " app_index:"...)
	b = appendDashOrQuoted(b, appIndex)
	b = append(b, " instance_id:"...)
	b = appendDashOrQuoted(b, instanceID)
	b = append(b, " x_cf_routererror:"...)
	b = appendDashOrQuoted(b, first(ex.w.Header(), hdrRouterError))

	// Extra headers come from the request as received, after tracing
	// amended it.
	for _, eh := range extraHeadersToLog {
		b = append(b, ' ')
		b = append(b, eh.name...)
		b = append(b, ':')
		b = appendDashOrQuoted(b, first(r.Header, eh.key))
	}
	return b
}

func appendDashOrQuoted(b []byte, s string) []byte {
	if s == "" {
		return append(b, `"-"`...)
	}
	return strconv.AppendQuote(b, s)
}

func appendDashOrSeconds(b []byte, v float64) []byte {
	if v < 0 {
		return append(b, `"-"`...)
	}
	return strconv.AppendFloat(b, v, 'f', 6, 64)
}

// appendQuotedInner appends s escaped as strconv.Quote escapes it, without
// the surrounding quotes. strconv escapes rune by rune, so quoting the
// parts of "METHOD URI PROTO" one by one equals gorouter's quoting of the
// joined string.
func appendQuotedInner(b []byte, s string) []byte {
	start := len(b)
	b = strconv.AppendQuote(b, s)
	copy(b[start:], b[start+1:len(b)-1])
	return b[:len(b)-2]
}
