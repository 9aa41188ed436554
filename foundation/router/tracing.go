package router

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// applyTracing mirrors gorouter's Zipkin handler (tracing enabled) followed
// by its X-Vcap-Request-Id handler, which overwrites any client value:
//
//   - A parsable b3 header keeps the client's trace.
//   - Otherwise X-B3-TraceId plus X-B3-SpanId keep it, and b3 is rebuilt
//     from them; if they do not parse, nothing is kept or set and the
//     request id is random.
//   - Otherwise a new trace is made from a random UUID and X-B3-TraceId,
//     X-B3-SpanId and b3 are set.
//
// A kept trace id becomes the request id in UUID form when, written as
// zipkin-go's TraceID.String() does (16 or 32 lowercase hex digits), it has
// at least 20 digits and passes nu7hatch/gouuid.ParseHex, whose pattern
// wants the 13th digit (the UUID version) in 1-5. So
// "4bf92f3577b34da6a3ce929d0e0e4736" gives
// "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", while a 64-bit trace id, or one
// like "deadbeef0000000100000000000000ff" (version digit 0), gives a
// random request id: gorouter behaves so (see its requestinfo_test.go).
func (ex *exchange) applyTracing(h http.Header) {
	if v := first(h, hdrB3); v != "" {
		if sc, err := parseB3Single(v); err == nil {
			ex.setRequestID(h, traceUUID(sc.trace))
			return
		}
	}
	if tid, sid := first(h, hdrB3TraceID), first(h, hdrB3SpanID); tid != "" && sid != "" {
		sc, err := parseB3Headers(tid, sid, first(h, hdrB3ParentSpanID), first(h, hdrB3Sampled), first(h, hdrB3Flags))
		if err != nil {
			ex.setRequestID(h, newUUID())
			return
		}
		ex.set(h, hdrB3, slotB3, buildB3Single(sc))
		ex.setRequestID(h, traceUUID(sc.trace))
		return
	}
	// A new trace: its id is the request id without dashes, its span id
	// the low 64 bits (zipkin-go's randomID128.SpanID). One string holds
	// the request id and the b3 value; the trace and span ids are slices of
	// the latter.
	var buf [36 + 32 + 1 + 16]byte
	b := appendUUID(buf[:0])
	for _, r := range [...][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}} {
		b = append(b, b[r[0]:r[1]]...)
	}
	b = append(b, '-')
	b = append(b, b[36+16:36+32]...)
	s := string(b)
	ex.set(h, hdrB3TraceID, slotB3TraceID, s[36:68])
	ex.set(h, hdrB3SpanID, slotB3SpanID, s[69:85])
	ex.set(h, hdrB3, slotB3, s[36:85])
	ex.setRequestID(h, s[:36])
}

func (ex *exchange) setRequestID(h http.Header, id string) {
	ex.set(h, hdrVcapRequestID, slotVcapRequestID, id)
}

// first is http.Header.Get for a canonical key.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// traceUUID is gorouter's RequestInfo.SetTraceInfo: the trace id in UUID
// form if gouuid accepts that, else a random UUID.
func traceUUID(t traceID) string {
	var buf [32]byte
	hex := t.append(buf[:0])
	if len(hex) < 20 {
		return newUUID()
	}
	var g [36 + 16]byte
	u := append(g[:0], hex[0:8]...)
	u = append(u, '-')
	u = append(u, hex[8:12]...)
	u = append(u, '-')
	u = append(u, hex[12:16]...)
	u = append(u, '-')
	u = append(u, hex[16:20]...)
	u = append(u, '-')
	u = append(u, hex[20:]...)
	if !gouuidAccepts(u) {
		return newUUID()
	}
	return string(u)
}

// gouuidAccepts reports whether nu7hatch/gouuid.ParseHex accepts s, i.e.
// whether s matches ^([a-z0-9]{8})-([a-z0-9]{4})-([1-5][a-z0-9]{3})-([a-z0-9]{4})-([a-z0-9]{12})$
// and the groups are valid hex (its optional urn/brace forms cannot occur
// here).
func gouuidAccepts(s []byte) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		case 14:
			if c < '1' || c > '5' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// newUUID returns a random version 4 UUID the way gorouter's
// nu7hatch/gouuid.NewV4 makes it: its variant bits come out as 01, so the
// fourth group starts with 4-7 (e.g. a9e2abb2-599c-4ad0-5aaa-2150fda45825).
// math/rand/v2 (ChaCha8, seeded by the OS) stands in for crypto/rand: the
// id must be unique, not secret, and it is made on every request.
func newUUID() string {
	var buf [36]byte
	return string(appendUUID(buf[:0]))
}

func appendUUID(b []byte) []byte {
	var u [16]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		u[i] = byte(hi >> (56 - 8*i))
		u[8+i] = byte(lo >> (56 - 8*i))
	}
	u[8] = (u[8] | 0x40) & 0x7f
	u[6] = (u[6] & 0x0f) | 0x40
	const digits = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&0x0f])
	}
	return b
}

// traceID is zipkin-go's model.TraceID.
type traceID struct{ high, low uint64 }

func (t traceID) empty() bool { return t.high == 0 && t.low == 0 }

// append writes t as model.TraceID.String does: 16 hex digits when the
// high half is zero, else 32.
func (t traceID) append(b []byte) []byte {
	if t.high != 0 {
		b = appendHex16(b, t.high)
	}
	return appendHex16(b, t.low)
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[(v>>uint(shift))&0x0f])
	}
	return b
}

// traceIDFromHex is model.TraceIDFromHex.
func traceIDFromHex(h string) (t traceID, err error) {
	if len(h) > 16 {
		if t.high, err = strconv.ParseUint(h[:len(h)-16], 16, 64); err != nil {
			return t, err
		}
		t.low, err = strconv.ParseUint(h[len(h)-16:], 16, 64)
		return t, err
	}
	t.low, err = strconv.ParseUint(h, 16, 64)
	return t, err
}

// spanContext is the part of zipkin-go's model.SpanContext B3 carries.
type spanContext struct {
	trace     traceID
	id        uint64
	parent    uint64
	hasParent bool
	sampled   int8 // -1 unset, 0 false, 1 true
	debug     bool
}

var errB3 = errors.New("invalid b3 headers")

// parseB3Headers is zipkin-go's b3.ParseHeaders, called (as gorouter
// does) only when both the trace and the span id are present.
func parseB3Headers(traceHex, spanHex, parentHex, sampled, flags string) (spanContext, error) {
	sc := spanContext{sampled: -1}
	switch {
	case sampled == "0" || strings.EqualFold(sampled, "false"):
		sc.sampled = 0
	case sampled == "1" || strings.EqualFold(sampled, "true"):
		sc.sampled = 1
	case sampled == "":
	default:
		return sc, errB3
	}
	if flags == "1" {
		sc.debug, sc.sampled = true, -1
	}
	var err error
	if sc.trace, err = traceIDFromHex(traceHex); err != nil {
		return sc, errB3
	}
	if sc.id, err = strconv.ParseUint(spanHex, 16, 64); err != nil {
		return sc, errB3
	}
	if parentHex != "" {
		if sc.parent, err = strconv.ParseUint(parentHex, 16, 64); err != nil {
			return sc, errB3
		}
		sc.hasParent = true
	}
	return sc, nil
}

// parseB3Single is zipkin-go's b3.ParseSingleHeader, except that a 128-bit
// trace id followed by fewer than 17 characters is an error here where
// zipkin-go slices out of range and panics.
func parseB3Single(h string) (spanContext, error) {
	sc := spanContext{sampled: -1}
	var sampling string
	n := len(h)
	switch {
	case n == 0:
		return sc, errB3
	case n == 1:
		sampling = h
	case n == 16 || n == 32:
		return sc, errB3
	case n >= 16+16+1:
		pos := 0
		var err error
		if h[16] != '-' {
			if sc.trace.high, err = strconv.ParseUint(h[0:16], 16, 64); err != nil {
				return sc, errB3
			}
			pos = 16
		}
		if n < pos+16+1+16 {
			return sc, errB3
		}
		if sc.trace.low, err = strconv.ParseUint(h[pos:pos+16], 16, 64); err != nil {
			return sc, errB3
		}
		if sc.id, err = strconv.ParseUint(h[pos+17:pos+33], 16, 64); err != nil {
			return sc, errB3
		}
		if n > pos+33 {
			switch n {
			case pos + 34:
				return sc, errB3
			case pos + 35:
				sampling = h[pos+34 : pos+35]
			case pos + 50:
				return sc, errB3
			case pos + 52:
				sampling = h[pos+34 : pos+35]
				if sc.parent, err = strconv.ParseUint(h[pos+36:], 16, 64); err != nil {
					return sc, errB3
				}
				sc.hasParent = true
			default:
				return sc, errB3
			}
		}
	default:
		return sc, errB3
	}
	switch sampling {
	case "d":
		sc.debug = true
	case "1":
		sc.sampled = 1
	case "0":
		sc.sampled = 0
	case "":
	default:
		return sc, errB3
	}
	return sc, nil
}

// buildB3Single is zipkin-go's b3.BuildSingleHeader.
func buildB3Single(sc spanContext) string {
	var buf [32 + 1 + 16 + 2 + 1 + 16]byte
	b := buf[:0]
	if !sc.trace.empty() && sc.id > 0 {
		b = sc.trace.append(b)
		b = append(b, '-')
		b = appendHex16(b, sc.id)
	}
	var flag byte
	switch {
	case sc.debug:
		flag = 'd'
	case sc.sampled == 1:
		flag = '1'
	case sc.sampled == 0:
		flag = '0'
	}
	if flag != 0 {
		if len(b) > 0 {
			b = append(b, '-')
		}
		b = append(b, flag)
	}
	if sc.hasParent {
		if len(b) > 0 {
			b = append(b, '-')
		}
		b = appendHex16(b, sc.parent)
	}
	return string(b)
}
