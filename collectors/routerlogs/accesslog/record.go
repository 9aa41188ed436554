// Package accesslog parses HTTP access-log lines into Records: gorouter's format (every
// variant Cloud Foundry routers have written since the end of 2016, also as printed by
// `cf logs`) and Apache's common and combined formats, which some Java servers emit.
// A Record has a stable JSON form for output (see Record.MarshalJSON).
//
// Parsers are strict about a format's positional structure (a line that does not fit
// yields a *ParseError naming the column and what was expected there) and tolerant of
// what routers append: unknown key:value fields land in Record.Extra. Parsers are pure
// functions, safe for concurrent use; they never panic on any input.
package accesslog

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Record is one parsed access-log line. Zero values stand for what the line did not
// carry or carried as "-"; Has tells which keyed gorouter fields were there.
type Record struct {
	// Time is when the router (or server) received the request, in the line's zone.
	Time time.Time
	// Host is the request's Host header (gorouter); empty for Apache formats.
	Host string
	// Method, URI and Proto come from the request line; URI is the request target as
	// logged (path and query), what Logstash calls rtr.path.
	Method, URI, Proto string
	// Status is the HTTP status; 0 when the line has "-" (no response was written).
	Status int
	// BytesReceived is the request body size (gorouter only); BytesSent the response
	// body size.
	BytesReceived, BytesSent int64
	Referer, UserAgent       string
	// RemoteAddr is the client's address as the router saw it (gorouter: ip:port) or
	// the first field of an Apache line. BackendAddr is the app instance (ip:port).
	RemoteAddr, BackendAddr string

	XForwardedFor, XForwardedProto, VcapRequestID string
	// ResponseTime is receipt to finish; GorouterTime is the part not spent in the app
	// (Has(FieldGorouterTime) says whether the line carried it).
	ResponseTime, GorouterTime time.Duration
	AppID                      string
	// AppIndex is the instance index; Has(FieldAppIndex) says whether there was one.
	AppIndex   int
	InstanceID string
	// RouterError is x_cf_routererror, e.g. "unknown_route" or "endpoint_failure (…)".
	RouterError string
	// Zipkin/B3 headers gorouter logs with tracing enabled.
	B3TraceID, B3SpanID, B3ParentSpanID, B3 string
	// Optional fields gorouter logs when enabled (router.logging.extra_access_log_fields).
	BackendTime, DialTime, DNSTime, TLSTime, FailedAttemptsTime time.Duration
	FailedAttempts                                              int
	LocalAddress                                                string

	// Present holds the keyed fields the line carried: for durations and numbers only
	// when they had a value (not "-"); for strings whenever the key was there, "-"
	// then reading as "".
	Present Field
	// Extra holds every other key:value field (extra headers such as traceparent,
	// route_service_url, app_time, …) with "-" kept as written. Nil when there are none.
	Extra map[string]string
}

// Field names keyed gorouter fields for Record.Has.
type Field uint32

// Keyed fields of a gorouter line.
const (
	FieldXForwardedFor Field = 1 << iota
	FieldXForwardedProto
	FieldVcapRequestID
	FieldResponseTime
	FieldGorouterTime
	FieldAppID
	FieldAppIndex
	FieldInstanceID
	FieldRouterError
	FieldB3TraceID
	FieldB3SpanID
	FieldB3ParentSpanID
	FieldB3
	FieldBackendTime
	FieldDialTime
	FieldDNSTime
	FieldTLSTime
	FieldFailedAttempts
	FieldFailedAttemptsTime
	FieldLocalAddress
)

// Has reports whether the line carried all of fs (see Record.Present).
func (r *Record) Has(fs Field) bool { return r.Present&fs == fs }

// Format names a log format accepted by Parser.
type Format string

// The supported formats.
const (
	Gorouter Format = "gorouter"
	Common   Format = "common"
	Combined Format = "combined"
)

// ParseFunc parses one line (a trailing newline is allowed) into a Record.
type ParseFunc func(line []byte) (Record, error)

var parsers = map[Format]ParseFunc{
	Gorouter: ParseGorouter,
	Common:   ParseCommon,
	Combined: ParseCombined,
}

// ErrUnknownFormat is returned (wrapped) by Parser for a name it does not know.
var ErrUnknownFormat = errors.New("unknown access-log format")

// Parser returns the parser of the format called name (see Formats).
func Parser(name string) (func([]byte) (Record, error), error) {
	if p, ok := parsers[Format(name)]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownFormat, name, Formats())
}

// Parse parses line in format f.
func (f Format) Parse(line []byte) (Record, error) {
	p, err := Parser(string(f))
	if err != nil {
		return Record{}, err
	}
	return p(line)
}

// Formats lists the names Parser accepts, sorted.
func Formats() []string {
	names := make([]string, 0, len(parsers))
	for f := range parsers {
		names = append(names, string(f))
	}
	sort.Strings(names)
	return names
}

// ParseError says where a line stopped fitting its format.
type ParseError struct {
	Format string
	// Column is the 1-based byte offset in the line as given (a `cf logs` prefix
	// included).
	Column int
	// Expected describes what the format wants at Column; Found quotes what is there.
	Expected, Found string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s: column %d: expected %s, found %s", e.Format, e.Column, e.Expected, e.Found)
}

// excerpt quotes up to 24 bytes of b for an error message.
func excerpt(b []byte) string {
	if len(b) == 0 {
		return "end of line"
	}
	if len(b) > 24 {
		return strconv.Quote(string(b[:24])) + "…"
	}
	return strconv.Quote(string(b))
}
