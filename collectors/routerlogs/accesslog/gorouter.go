package accesslog

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/decimal"
)

// requiredKeys are the keyed fields every gorouter since cf-release v250 writes.
var requiredKeys = [...]struct {
	f    Field
	name string
}{
	{FieldXForwardedFor, "x_forwarded_for"},
	{FieldXForwardedProto, "x_forwarded_proto"},
	{FieldVcapRequestID, "vcap_request_id"},
	{FieldResponseTime, "response_time"},
	{FieldAppID, "app_id"},
}

// ParseGorouter parses one gorouter access-log line:
//
//	<host> - [<time>] "<method> <uri> <proto>" <status> <bytes received> <bytes sent>
//	"<referer>" "<user agent>" "<remote addr>" "<backend addr>" key:value …
//
// The positional part must be complete (the host may be empty: a request without a
// Host header); the keyed part must hold x_forwarded_for, x_forwarded_proto,
// vcap_request_id, response_time and app_id, and may hold anything else: unknown keys,
// such as extra headers, go to Extra, and so does a known key's second occurrence (an
// extra header may be named like one of gorouter's fields; gorouter writes its own
// first). Values are quoted as strconv.Quote does, or bare numbers; "-" stands for
// none. The marker gorouter writes when it drops extra headers to keep a line within
// a UDP packet ("...EXTRA-REQUEST-HEADERS-TOO-LONG-TO-LOG--TRUNCATED") goes to
// Extra["truncated"]. A `cf logs` prefix ("2020-07-06T10:45:55.83-0700 [RTR/0] OUT ")
// is skipped; a `cf logs` line of another source ([APP/PROC/WEB/0], [CELL/0], …) is an
// error at its source tag. So is a syslog frame as a drain receives it (see
// SyslogFrame): its header is checked and skipped, and a message of another source
// is an error at its proc-id. Timestamps of older routers (milliseconds with a -0700
// offset, day-first dates) are accepted. Routers from before the end of 2016 wrote the
// remote address unquoted and no backend address; their lines are not accepted.
func ParseGorouter(line []byte) (Record, error) {
	l := newLexer(string(Gorouter), line)
	if len(l.line) == 0 {
		return Record{}, l.fail("an access-log line")
	}
	n, source := cfLogsPrefix(l.line)
	if n > 0 && !bytes.HasPrefix(source, []byte("[RTR")) {
		// `cf logs APP` interleaves the app's own lines, staging, cell and API events.
		return Record{}, l.errAt(n-len(" OUT ")-len(source), `a router line ("[RTR/N]") of cf logs`)
	}
	if n == 0 {
		m, at, framed, err := SyslogFrame(l.line)
		if err != nil {
			return Record{}, err
		}
		if framed && !m.IsRouter() {
			// A drain gets the app's own lines, staging, cell and API events too.
			return Record{}, l.errAt(at+bytes.Index(l.line[at:], []byte(m.ProcID)), `a router message ("[RTR/N]") of a syslog drain`)
		}
		if framed {
			n = at + m.MsgOffset
		}
	}
	l.pos = n
	var r Record

	r.Host = string(l.token())
	if err := l.lit(" - [", `" - [" after the host`); err != nil {
		return Record{}, err
	}
	tsStart := l.pos
	ts, err := l.until(']', "']' closing the timestamp")
	if err != nil {
		return Record{}, err
	}
	var ok bool
	if r.Time, ok = parseTime(ts); !ok {
		return Record{}, l.errAt(tsStart, "a timestamp like 2020-07-06T17:45:55.805305000Z")
	}
	if err := l.space("the request"); err != nil {
		return Record{}, err
	}
	reqStart := l.pos
	req, err := l.quoted(`request "METHOD URI PROTO"`)
	if err != nil {
		return Record{}, err
	}
	if r.Method, r.URI, r.Proto = splitRequest(req); r.Method == "" || r.Proto == "" {
		return Record{}, l.errAt(reqStart, `request "METHOD URI PROTO"`)
	}
	if r.Status, err = status(l); err != nil {
		return Record{}, err
	}
	if r.BytesReceived, err = byteCount(l, "bytes received"); err != nil {
		return Record{}, err
	}
	if r.BytesSent, err = byteCount(l, "bytes sent"); err != nil {
		return Record{}, err
	}
	for _, f := range [...]struct {
		dst  *string
		name string
	}{
		{&r.Referer, "referer"},
		{&r.UserAgent, "user agent"},
		{&r.RemoteAddr, "remote address"},
		{&r.BackendAddr, "backend address"},
	} {
		if err := l.space(f.name); err != nil {
			return Record{}, err
		}
		v, err := l.quoted(f.name)
		if err != nil {
			return Record{}, err
		}
		*f.dst = dashed(v)
	}

	seen, err := keyedFields(l, &r, true)
	if err != nil {
		return Record{}, err
	}
	for _, k := range requiredKeys {
		if seen&k.f == 0 {
			return Record{}, l.errAt(len(l.line), k.name+":… (every gorouter line has it)")
		}
	}
	return r, nil
}

// cfLogsPrefix finds a `cf logs` prefix ("   2020-07-06T10:45:55.83-0700 [RTR/0] OUT ")
// at the start of b and returns its length and its source tag ("[RTR/0]"), or 0 and
// nil. Every source counts here; the caller decides which lines are its own.
func cfLogsPrefix(b []byte) (n int, source []byte) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i == len(b) || b[i] < '0' || b[i] > '9' {
		return 0, nil
	}
	sp := bytes.IndexByte(b[i:], ' ')
	if sp < 0 {
		return 0, nil
	}
	j := i + sp + 1
	if j == len(b) || b[j] != '[' {
		return 0, nil
	}
	end := bytes.IndexByte(b[j:], ']')
	if end < 0 {
		return 0, nil
	}
	k := j + end + 1
	if bytes.HasPrefix(b[k:], []byte(" OUT ")) || bytes.HasPrefix(b[k:], []byte(" ERR ")) {
		return k + 5, b[j:k]
	}
	return 0, nil
}

// status reads " <3 digits>" or ` "-"`.
func status(l *lexer) (int, error) {
	if err := l.space("the status"); err != nil {
		return 0, err
	}
	if bytes.HasPrefix(l.rest(), []byte(`"-"`)) {
		l.pos += 3
		return 0, nil
	}
	start := l.pos
	tok := l.token()
	if n, ok := decimal.Parse(tok); ok && len(tok) == 3 {
		return int(n), nil
	}
	if string(tok) == "-" {
		return 0, nil
	}
	return 0, l.errAt(start, `an HTTP status (3 digits) or "-"`)
}

// byteCount reads " <digits>" or " -".
func byteCount(l *lexer, what string) (int64, error) {
	if err := l.space(what); err != nil {
		return 0, err
	}
	start := l.pos
	tok := l.token()
	if string(tok) == "-" || string(tok) == `"-"` {
		return 0, nil
	}
	n, ok := decimal.Parse(tok)
	if !ok {
		return 0, l.errAt(start, what+" (digits)")
	}
	return n, nil
}

// keyedFields reads space-separated key:value fields to the end of the line into r and
// returns the keys seen. Values are quoted strings or bare tokens; without strict,
// key=value is accepted too. The first occurrence of a known key fills its field, later
// ones go to Extra. With strict set, a known key whose value does not parse is an
// error; otherwise it goes to Extra as is. Gorouter's truncation marker goes to
// Extra["truncated"]; other tokens that are not key:value are an error when strict,
// else collected into Extra["trailing"].
func keyedFields(l *lexer, r *Record, strict bool) (Field, error) {
	var seen Field
	var trailing []byte
	for {
		for !l.eol() && l.line[l.pos] == ' ' {
			l.pos++
		}
		if l.eol() {
			break
		}
		start := l.pos
		k := start
		for k < len(l.line) && isKeyByte(l.line[k]) {
			k++
		}
		if k == start || k == len(l.line) || !(l.line[k] == ':' || !strict && l.line[k] == '=') {
			tokenOrQuoted(l)
			tok := l.line[start:l.pos]
			switch {
			case isTruncationMarker(tok):
				r.setExtra("truncated", string(tok))
			case strict:
				return seen, l.errAt(start, "a key:value field")
			default:
				trailing = appendField(trailing, tok)
			}
			continue
		}
		key := string(l.line[start:k])
		l.pos = k + 1
		valStart := l.pos
		var val string
		if !l.eol() && l.line[l.pos] == '"' {
			v, err := l.quoted("value of " + key)
			if err != nil {
				if strict {
					return seen, err
				}
				l.pos = valStart
				val = string(l.token())
			} else {
				val = v
			}
		} else {
			val = string(l.token())
			if val == "" && strict {
				return seen, l.errAt(valStart, "a value for "+key)
			}
		}
		f := keyedFieldsByName[key]
		if f == 0 || seen&f != 0 {
			// Unknown, or a repeat: an operator's extra header can be named like a
			// field gorouter writes itself (X-Forwarded-For), always after it.
			r.setExtra(key, val)
			continue
		}
		if expected := r.set(f, val); expected != "" {
			if strict {
				return seen, l.errAt(valStart, expected)
			}
			r.setExtra(key, val)
		}
		seen |= f
	}
	if len(trailing) > 0 {
		r.setExtra("trailing", string(trailing))
	}
	return seen, nil
}

// isKeyByte reports whether c may be part of a key. Gorouter names an extra header's
// field after the header (lowercased, '-' as '_'), so a key is an HTTP token (RFC 9110
// tchar).
func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isTruncationMarker reports whether tok is what gorouter writes instead of the extra
// headers that would push a line sent to loggregator (cf logs, Logstash) over its UDP
// budget: "...EXTRA-REQUEST-HEADERS-TOO-LONG-TO-LOG--TRUNCATED".
func isTruncationMarker(tok []byte) bool {
	return len(tok) > len("...-TOO-LONG-TO-LOG--TRUNCATED") && bytes.HasPrefix(tok, []byte("...")) &&
		bytes.HasSuffix(tok, []byte("-TOO-LONG-TO-LOG--TRUNCATED"))
}

// tokenOrQuoted skips a quoted value (when it closes) or a bare token.
func tokenOrQuoted(l *lexer) {
	if l.line[l.pos] == '"' {
		save := l.pos
		if _, err := l.quoted(""); err == nil {
			return
		}
		l.pos = save
	}
	l.token()
}

func appendField(b, f []byte) []byte {
	if len(b) > 0 {
		b = append(b, ' ')
	}
	return append(b, f...)
}

func (r *Record) setExtra(key, val string) {
	if r.Extra == nil {
		r.Extra = make(map[string]string, 4)
	}
	r.Extra[key] = val
}

// keyedFieldsByName maps a gorouter key to its Field; keys not listed go to Extra.
var keyedFieldsByName = map[string]Field{
	"x_forwarded_for":      FieldXForwardedFor,
	"x_forwarded_proto":    FieldXForwardedProto,
	"vcap_request_id":      FieldVcapRequestID,
	"response_time":        FieldResponseTime,
	"gorouter_time":        FieldGorouterTime,
	"app_id":               FieldAppID,
	"app_index":            FieldAppIndex,
	"instance_id":          FieldInstanceID,
	"x_cf_routererror":     FieldRouterError,
	"x_b3_traceid":         FieldB3TraceID,
	"x_b3_spanid":          FieldB3SpanID,
	"x_b3_parentspanid":    FieldB3ParentSpanID,
	"b3":                   FieldB3,
	"backend_time":         FieldBackendTime,
	"dial_time":            FieldDialTime,
	"dns_time":             FieldDNSTime,
	"tls_time":             FieldTLSTime,
	"failed_attempts":      FieldFailedAttempts,
	"failed_attempts_time": FieldFailedAttemptsTime,
	"local_address":        FieldLocalAddress,
}

// set assigns the keyed field f (one bit) from val and marks it present. When val does
// not parse it leaves r alone and returns what was expected instead.
func (r *Record) set(f Field, val string) (expected string) {
	str := func(dst *string) string {
		*dst = dashed(val)
		r.Present |= f
		return ""
	}
	dur := func(dst *time.Duration) string {
		if val == "-" {
			return ""
		}
		d, ok := seconds([]byte(val))
		if !ok {
			return `seconds (e.g. 0.004512) or "-"`
		}
		*dst = d
		r.Present |= f
		return ""
	}
	num := func(dst *int) string {
		if val == "-" {
			return ""
		}
		n, ok := decimal.Parse([]byte(val))
		if !ok || n > 1<<31-1 {
			return `a whole number or "-"`
		}
		*dst = int(n)
		r.Present |= f
		return ""
	}
	switch f {
	case FieldXForwardedFor:
		return str(&r.XForwardedFor)
	case FieldXForwardedProto:
		return str(&r.XForwardedProto)
	case FieldVcapRequestID:
		return str(&r.VcapRequestID)
	case FieldResponseTime:
		return dur(&r.ResponseTime)
	case FieldGorouterTime:
		return dur(&r.GorouterTime)
	case FieldAppID:
		return str(&r.AppID)
	case FieldAppIndex:
		return num(&r.AppIndex)
	case FieldInstanceID:
		return str(&r.InstanceID)
	case FieldRouterError:
		return str(&r.RouterError)
	case FieldB3TraceID:
		return str(&r.B3TraceID)
	case FieldB3SpanID:
		return str(&r.B3SpanID)
	case FieldB3ParentSpanID:
		return str(&r.B3ParentSpanID)
	case FieldB3:
		return str(&r.B3)
	case FieldBackendTime:
		return dur(&r.BackendTime)
	case FieldDialTime:
		return dur(&r.DialTime)
	case FieldDNSTime:
		return dur(&r.DNSTime)
	case FieldTLSTime:
		return dur(&r.TLSTime)
	case FieldFailedAttempts:
		return num(&r.FailedAttempts)
	case FieldFailedAttemptsTime:
		return dur(&r.FailedAttemptsTime)
	case FieldLocalAddress:
		return str(&r.LocalAddress)
	}
	return "" // not reached: TestKeyedFieldsByName keeps the table and this switch in step
}

// FormatSeconds renders d as gorouter does (seconds, 6 decimals), for writers that want
// to reproduce a line's values.
func FormatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}
