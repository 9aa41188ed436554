package accesslog

// ParseCommon parses an Apache common-log-format line (LogFormat "%h %l %u %t \"%r\" %>s
// %b"):
//
//	203.0.113.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
//
// %h becomes RemoteAddr; a non-"-" %l and %u go to Extra["ident"] and
// Extra["auth_user"]. A request line of "-" (a connection closed before one arrived)
// leaves Method, URI and Proto empty. Fields after %b are kept: key:value or key=value
// ones in Extra (known gorouter keys such as response_time fill their fields), the
// rest, as written, in Extra["trailing"] — so a combined line parses as common too.
func ParseCommon(line []byte) (Record, error) {
	l := newLexer(string(Common), line)
	r, err := commonPart(l)
	if err != nil {
		return Record{}, err
	}
	keyedFields(l, &r, false)
	return r, nil
}

// ParseCombined parses an Apache combined-log-format line: common plus
// "%{Referer}i" "%{User-agent}i". Fields after those are kept as ParseCommon keeps them.
func ParseCombined(line []byte) (Record, error) {
	l := newLexer(string(Combined), line)
	r, err := commonPart(l)
	if err != nil {
		return Record{}, err
	}
	for _, f := range [...]struct {
		dst  *string
		name string
	}{{&r.Referer, "referer"}, {&r.UserAgent, "user agent"}} {
		if err := l.space(f.name); err != nil {
			return Record{}, err
		}
		v, err := l.quoted(f.name)
		if err != nil {
			return Record{}, err
		}
		*f.dst = dashed(v)
	}
	keyedFields(l, &r, false)
	return r, nil
}

func commonPart(l *lexer) (Record, error) {
	var r Record
	host := l.token()
	if len(l.line) == 0 {
		return Record{}, l.fail("an access-log line")
	}
	if len(host) == 0 {
		return Record{}, l.fail("the client host (%h)")
	}
	r.RemoteAddr = dashed(string(host))
	for _, f := range [...]struct{ key, what string }{{"ident", "ident (%l)"}, {"auth_user", "user (%u)"}} {
		if err := l.space(f.what); err != nil {
			return Record{}, err
		}
		start := l.pos
		v := l.token()
		if len(v) == 0 {
			return Record{}, l.errAt(start, f.what)
		}
		if s := string(v); s != "-" {
			r.setExtra(f.key, s)
		}
	}
	if err := l.space("the time"); err != nil {
		return Record{}, err
	}
	if err := l.lit("[", "'[' opening the time"); err != nil {
		return Record{}, err
	}
	tsStart := l.pos
	ts, err := l.until(']', "']' closing the time")
	if err != nil {
		return Record{}, err
	}
	var ok bool
	if r.Time, ok = parseTime(ts); !ok {
		return Record{}, l.errAt(tsStart, "a time like 10/Oct/2000:13:55:36 -0700")
	}
	if err := l.space("the request"); err != nil {
		return Record{}, err
	}
	req, err := l.quoted(`request "METHOD URI PROTO"`)
	if err != nil {
		return Record{}, err
	}
	if req != "-" {
		r.Method, r.URI, r.Proto = splitRequest(req)
	}
	if r.Status, err = status(l); err != nil {
		return Record{}, err
	}
	if r.BytesSent, err = byteCount(l, "bytes sent"); err != nil {
		return Record{}, err
	}
	return r, nil
}
