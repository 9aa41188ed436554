package accesslog

import (
	"bytes"
	"strconv"
	"time"
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
// The positional part must be complete; the keyed part must hold x_forwarded_for,
// x_forwarded_proto, vcap_request_id, response_time and app_id, and may hold anything
// else (unknown keys go to Extra). Values are quoted as strconv.Quote does, or bare
// numbers; "-" stands for none. A `cf logs` prefix ("2020-07-06T10:45:55.83-0700
// [RTR/0] OUT ") is skipped. Timestamps of older routers (+0000 offsets, day-first
// dates) are accepted.
func ParseGorouter(line []byte) (Record, error) {
	l := newLexer(string(Gorouter), line)
	if len(l.line) == 0 {
		return Record{}, l.fail("an access-log line")
	}
	l.pos = cfLogsPrefix(l.line)
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

// cfLogsPrefix returns the length of a `cf logs` prefix ("   2020-07-06T10:45:55.83-0700
// [RTR/0] OUT ") at the start of b, or 0.
func cfLogsPrefix(b []byte) int {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i == len(b) || b[i] < '0' || b[i] > '9' {
		return 0
	}
	sp := bytes.IndexByte(b[i:], ' ')
	if sp < 0 {
		return 0
	}
	j := i + sp + 1
	if !bytes.HasPrefix(b[j:], []byte("[RTR")) {
		return 0
	}
	end := bytes.IndexByte(b[j:], ']')
	if end < 0 {
		return 0
	}
	k := j + end + 1
	if bytes.HasPrefix(b[k:], []byte(" OUT ")) || bytes.HasPrefix(b[k:], []byte(" ERR ")) {
		return k + 5
	}
	return 0
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
	if n, ok := digits(tok); ok && len(tok) == 3 {
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
	n, ok := digits(tok)
	if !ok {
		return 0, l.errAt(start, what+" (digits)")
	}
	return n, nil
}

// keyedFields reads space-separated key:value fields to the end of the line into r and
// returns the keys seen. Values are quoted strings or bare tokens; without strict,
// key=value is accepted too. With strict set, a
// known key whose value does not parse is an error; otherwise it goes to Extra as is.
// Tokens that are not key:value are an error when strict, else collected into
// Extra["trailing"].
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
			if strict {
				return seen, l.errAt(start, "a key:value field")
			}
			tokenOrQuoted(l)
			trailing = appendField(trailing, l.line[start:l.pos])
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
		f, expected := r.set(key, val)
		if expected != "" {
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

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
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

// set assigns a keyed field. It returns the field's bit (0 for unknown keys, which go
// to Extra) and, when val does not parse, what was expected instead.
func (r *Record) set(key, val string) (Field, string) {
	str := func(f Field, dst *string) (Field, string) {
		*dst = dashed(val)
		r.Present |= f
		return f, ""
	}
	dur := func(f Field, dst *time.Duration) (Field, string) {
		if val == "-" {
			*dst = 0
			r.Present &^= f
			return f, ""
		}
		d, ok := seconds([]byte(val))
		if !ok {
			return f, `seconds (e.g. 0.004512) or "-"`
		}
		*dst = d
		r.Present |= f
		return f, ""
	}
	num := func(f Field, dst *int) (Field, string) {
		if val == "-" {
			*dst = 0
			r.Present &^= f
			return f, ""
		}
		n, ok := digits([]byte(val))
		if !ok || n > 1<<31-1 {
			return f, `a whole number or "-"`
		}
		*dst = int(n)
		r.Present |= f
		return f, ""
	}
	switch key {
	case "x_forwarded_for":
		return str(FieldXForwardedFor, &r.XForwardedFor)
	case "x_forwarded_proto":
		return str(FieldXForwardedProto, &r.XForwardedProto)
	case "vcap_request_id":
		return str(FieldVcapRequestID, &r.VcapRequestID)
	case "response_time":
		return dur(FieldResponseTime, &r.ResponseTime)
	case "gorouter_time":
		return dur(FieldGorouterTime, &r.GorouterTime)
	case "app_id":
		return str(FieldAppID, &r.AppID)
	case "app_index":
		return num(FieldAppIndex, &r.AppIndex)
	case "instance_id":
		return str(FieldInstanceID, &r.InstanceID)
	case "x_cf_routererror":
		return str(FieldRouterError, &r.RouterError)
	case "x_b3_traceid":
		return str(FieldB3TraceID, &r.B3TraceID)
	case "x_b3_spanid":
		return str(FieldB3SpanID, &r.B3SpanID)
	case "x_b3_parentspanid":
		return str(FieldB3ParentSpanID, &r.B3ParentSpanID)
	case "b3":
		return str(FieldB3, &r.B3)
	case "backend_time":
		return dur(FieldBackendTime, &r.BackendTime)
	case "dial_time":
		return dur(FieldDialTime, &r.DialTime)
	case "dns_time":
		return dur(FieldDNSTime, &r.DNSTime)
	case "tls_time":
		return dur(FieldTLSTime, &r.TLSTime)
	case "failed_attempts":
		return num(FieldFailedAttempts, &r.FailedAttempts)
	case "failed_attempts_time":
		return dur(FieldFailedAttemptsTime, &r.FailedAttemptsTime)
	case "local_address":
		return str(FieldLocalAddress, &r.LocalAddress)
	}
	r.setExtra(key, val)
	return 0, ""
}

// FormatSeconds renders d as gorouter does (seconds, 6 decimals), for writers that want
// to reproduce a line's values.
func FormatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}
