package sample

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// TraceID is the 128-bit B3 trace id a generator puts on every request. It is derived,
// not random, so that a router log line or an in-app timing can be traced back to its
// sample without storing the id with every sample. In hex digits:
//
//	0-7    the run's trace tag (random per run, so ids differ across results DBs)
//	8-11   worker id bits 27..12
//	12     4, the UUID version digit
//	13-15  worker id bits 11..0
//	16-31  the worker-local sequence number
//
// The version digit is there because gorouter adopts an incoming trace id as the
// request's vcap_request_id only when, written as a UUID, it has a version digit of
// 1 to 5 (it validates with a UUID parser); otherwise it logs a random one.
type TraceID [16]byte

// MaxWorkerID is the largest worker id a trace id carries (28 bits).
const MaxWorkerID = 1<<28 - 1

// NewTraceID derives the trace id of request seq of worker (at most MaxWorkerID; higher
// bits are dropped) in the run tagged tag.
func NewTraceID(tag, worker uint32, seq uint64) TraceID {
	var t TraceID
	binary.BigEndian.PutUint32(t[0:4], tag)
	binary.BigEndian.PutUint16(t[4:6], uint16(worker>>12))
	binary.BigEndian.PutUint16(t[6:8], 0x4000|uint16(worker&0xfff))
	binary.BigEndian.PutUint64(t[8:16], seq)
	return t
}

// Parts returns the tag, worker id and sequence number the id was derived from.
func (t TraceID) Parts() (tag, worker uint32, seq uint64) {
	worker = uint32(binary.BigEndian.Uint16(t[4:6]))<<12 | uint32(binary.BigEndian.Uint16(t[6:8])&0xfff)
	return binary.BigEndian.Uint32(t[0:4]), worker, binary.BigEndian.Uint64(t[8:16])
}

// String is the 32-hex form sent as X-B3-TraceId.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// SpanID is the 16-hex span id sent as X-B3-SpanId: the sequence half of the trace id,
// which is never zero because sequence numbers start at 1.
func (t TraceID) SpanID() string { return hex.EncodeToString(t[8:16]) }

// UUID is the trace id in the 8-4-4-4-12 form gorouter logs as vcap_request_id when it
// adopts an incoming B3 trace id (with tracing on, and an X-B3-SpanId beside it).
func (t TraceID) UUID() string {
	s := t.String()
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

// ParseTraceID accepts the 32-hex form, with or without UUID dashes.
func ParseTraceID(s string) (TraceID, error) {
	var t TraceID
	clean := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			clean = append(clean, s[i])
		}
	}
	if len(clean) != 32 {
		return t, fmt.Errorf("trace id %q: want 32 hex digits", s)
	}
	if _, err := hex.Decode(t[:], clean); err != nil {
		return t, fmt.Errorf("trace id %q: %w", s, err)
	}
	return t, nil
}
