package elastic

import (
	"encoding/json"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
)

// sourceIncludes are the _source paths a pull needs.
func sourceIncludes(f Fields, raw bool) []string {
	paths := []string{f.Timestamp, f.App, f.AppID}
	if raw {
		paths = append(paths, f.Message)
	} else {
		paths = append(paths, f.RequestTime, f.Host, f.Method, f.Path, f.Proto, f.Status,
			f.BytesReceived, f.BytesSent, f.Referer, f.UserAgent, f.RemoteAddr, f.BackendAddr,
			f.XForwardedFor, f.XForwardedProto, f.VcapRequestID, f.ResponseTimeSec,
			f.ResponseTimeMS, f.GorouterTimeSec, f.GorouterTimeMS, f.RouterAppID, f.AppIndex, f.Extra)
	}
	seen := map[string]bool{}
	out := paths[:0]
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// decodeEntry makes an Entry of a hit. at is the document's timestamp (its sort
// value). ok is false for a document that is not a readable router request.
func decodeEntry(s *schema, f *Fields, raw bool, h *hit, at time.Time) (e routerlogs.Entry, ok bool) {
	get := func(path string) (any, bool) { return s.get(h, path) }
	e.App = textAt(get, f.App)
	e.AppGUID = textAt(get, f.AppID)
	if raw {
		rec, err := accesslog.ParseGorouter([]byte(textAt(get, f.Message)))
		if err != nil {
			return e, false
		}
		e.Record = rec
	} else if !decodeRecord(f, get, at, &e.Record) {
		return e, false
	}
	if e.AppGUID == "" {
		e.AppGUID = e.AppID
	}
	return e, true
}

// decodeRecord fills r from the parsed router fields as logsearch-for-cloudfoundry's
// pipeline (and foundation/logship) writes them, undoing what it did to the line: "-"
// reads as "", x_forwarded_for lists are joined with ", ", rtr.src/dst host and port
// become ip:port. Absent fields stay zero (and out of r.Present). It returns false for
// a field of the wrong type or a request time that does not parse.
func decodeRecord(f *Fields, get func(string) (any, bool), at time.Time, r *accesslog.Record) bool {
	okAll := true
	text := func(path string, dst *string, bit accesslog.Field) {
		v, present := get(path)
		if !present {
			return
		}
		s, ok := str(v)
		if !ok {
			okAll = false
			return
		}
		*dst = dash(s)
		r.Present |= bit
	}
	text(f.Host, &r.Host, 0)
	text(f.Method, &r.Method, 0)
	text(f.Path, &r.URI, 0)
	text(f.Proto, &r.Proto, 0)
	text(f.Referer, &r.Referer, 0)
	text(f.UserAgent, &r.UserAgent, 0)
	text(f.XForwardedProto, &r.XForwardedProto, accesslog.FieldXForwardedProto)
	text(f.VcapRequestID, &r.VcapRequestID, accesslog.FieldVcapRequestID)
	text(f.RouterAppID, &r.AppID, accesslog.FieldAppID)
	if v, present := get(f.XForwardedFor); present {
		r.XForwardedFor = dash(joinList(v))
		r.Present |= accesslog.FieldXForwardedFor
	}
	r.RemoteAddr = addr(get(f.RemoteAddr))
	r.BackendAddr = addr(get(f.BackendAddr))

	whole := func(path string) (int64, bool) {
		v, present := get(path)
		if !present {
			return 0, false
		}
		n, ok := number(v)
		if !ok || n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			okAll = okAll && isDash(v)
			return 0, false
		}
		return int64(n), true
	}
	if n, ok := whole(f.Status); ok {
		r.Status = int(n)
	}
	r.BytesReceived, _ = whole(f.BytesReceived)
	r.BytesSent, _ = whole(f.BytesSent)
	if n, ok := whole(f.AppIndex); ok && n >= 0 && n <= math.MaxInt32 {
		r.AppIndex = int(n)
		r.Present |= accesslog.FieldAppIndex
	}

	duration := func(secPath, msPath string, dst *time.Duration, bit accesslog.Field) {
		for _, c := range [...]struct {
			path string
			unit float64
		}{{secPath, 1e9}, {msPath, 1e6}} {
			v, present := get(c.path)
			if !present {
				continue
			}
			n, ok := number(v)
			if !ok || n < 0 {
				okAll = okAll && isDash(v)
				continue
			}
			*dst = time.Duration(math.Round(n * c.unit))
			r.Present |= bit
			return
		}
	}
	duration(f.ResponseTimeSec, f.ResponseTimeMS, &r.ResponseTime, accesslog.FieldResponseTime)
	duration(f.GorouterTimeSec, f.GorouterTimeMS, &r.GorouterTime, accesslog.FieldGorouterTime)

	if v, ok := get(f.Extra); ok {
		if m, ok := v.(map[string]any); ok {
			extra(m, r)
		}
	}

	if v, present := get(f.RequestTime); present {
		s, _ := str(v)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return false
		}
		r.Time = t
	} else {
		// No request time: the document's time (when the response finished, in CF)
		// less the response time.
		r.Time = at.Add(-r.ResponseTime)
	}
	return okAll
}

// extraKeys are the keyed fields the pipeline leaves under rtr.extra that Record has
// typed fields for.
var extraText = map[string]struct {
	bit accesslog.Field
	dst func(*accesslog.Record) *string
}{
	"instance_id":       {accesslog.FieldInstanceID, func(r *accesslog.Record) *string { return &r.InstanceID }},
	"x_cf_routererror":  {accesslog.FieldRouterError, func(r *accesslog.Record) *string { return &r.RouterError }},
	"x_b3_traceid":      {accesslog.FieldB3TraceID, func(r *accesslog.Record) *string { return &r.B3TraceID }},
	"x_b3_spanid":       {accesslog.FieldB3SpanID, func(r *accesslog.Record) *string { return &r.B3SpanID }},
	"x_b3_parentspanid": {accesslog.FieldB3ParentSpanID, func(r *accesslog.Record) *string { return &r.B3ParentSpanID }},
	"b3":                {accesslog.FieldB3, func(r *accesslog.Record) *string { return &r.B3 }},
	"local_address":     {accesslog.FieldLocalAddress, func(r *accesslog.Record) *string { return &r.LocalAddress }},
}

var extraDurations = map[string]struct {
	bit accesslog.Field
	dst func(*accesslog.Record) *time.Duration
}{
	"backend_time":         {accesslog.FieldBackendTime, func(r *accesslog.Record) *time.Duration { return &r.BackendTime }},
	"dial_time":            {accesslog.FieldDialTime, func(r *accesslog.Record) *time.Duration { return &r.DialTime }},
	"dns_time":             {accesslog.FieldDNSTime, func(r *accesslog.Record) *time.Duration { return &r.DNSTime }},
	"tls_time":             {accesslog.FieldTLSTime, func(r *accesslog.Record) *time.Duration { return &r.TLSTime }},
	"failed_attempts_time": {accesslog.FieldFailedAttemptsTime, func(r *accesslog.Record) *time.Duration { return &r.FailedAttemptsTime }},
}

// extra sorts the key:value leftovers into r's typed fields and r.Extra, as
// accesslog.ParseGorouter does with the line's.
func extra(m map[string]any, r *accesslog.Record) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		if t, ok := extraText[k]; ok {
			if s, ok := str(v); ok {
				*t.dst(r) = dash(s)
				r.Present |= t.bit
			}
			continue
		}
		if d, ok := extraDurations[k]; ok {
			if n, ok := number(v); ok && n >= 0 {
				*d.dst(r) = time.Duration(math.Round(n * 1e9))
				r.Present |= d.bit
			}
			continue
		}
		if k == "failed_attempts" {
			if n, ok := number(v); ok && n >= 0 && n == math.Trunc(n) && n <= math.MaxInt32 {
				r.FailedAttempts = int(n)
				r.Present |= accesslog.FieldFailedAttempts
			}
			continue
		}
		s, ok := str(v)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if r.Extra == nil {
			r.Extra = make(map[string]string, len(m))
		}
		r.Extra[k] = s
	}
}

// lookup finds a dotted path in a _source, through nested objects, dotted keys or a
// mix of both. An empty path is never present; neither is a JSON null.
func lookup(m map[string]any, path string) (any, bool) {
	if path == "" || m == nil {
		return nil, false
	}
	if v, ok := m[path]; ok {
		return v, v != nil
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if sub, ok := m[path[:i]].(map[string]any); ok {
			if v, ok := lookup(sub, path[i+1:]); ok {
				return v, true
			}
		}
	}
	return nil, false
}

// textAt is the text at path, "" when absent or not text.
func textAt(get func(string) (any, bool), path string) string {
	v, ok := get(path)
	if !ok {
		return ""
	}
	s, _ := str(v)
	return s
}

// str reads text (a number's JSON rendering too); a one-element list is its element.
func str(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case []any:
		if len(x) == 1 {
			return str(x[0])
		}
	}
	return "", false
}

// number reads a JSON number or a numeric text.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return n, err == nil && !math.IsNaN(n) && !math.IsInf(n, 0)
	case []any:
		if len(x) == 1 {
			return number(x[0])
		}
	}
	return 0, false
}

func isDash(v any) bool {
	s, ok := v.(string)
	return ok && (s == "-" || s == "")
}

// joinList reads x_forwarded_for: a list (the pipeline splits at commas) or text.
func joinList(v any) string {
	if l, ok := v.([]any); ok {
		parts := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := str(x); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
	s, _ := str(v)
	return s
}

// addr reads an address: {host, port} (the pipeline's rtr.src and rtr.dst) or text.
func addr(v any, present bool) string {
	if !present {
		return ""
	}
	if m, ok := v.(map[string]any); ok {
		host, _ := str(m["host"])
		host = dash(host)
		port, ok := number(m["port"])
		if host == "" || !ok || port <= 0 {
			return host
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	s, _ := str(v)
	return dash(s)
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}
