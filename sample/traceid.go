package sample

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// TraceID is the 128-bit B3 trace id a generator puts on every request. It is derived,
// not random, so that a router log line or an in-app timing can be traced back to its
// sample without storing the id with every sample:
//
//	bytes 0-3   the run's trace tag (random per run, so ids differ across results DBs)
//	bytes 4-7   the worker id
//	bytes 8-15  the worker-local sequence number
type TraceID [16]byte

// NewTraceID derives the trace id of request seq of worker in the run tagged tag.
func NewTraceID(tag, worker uint32, seq uint64) TraceID {
	var t TraceID
	binary.BigEndian.PutUint32(t[0:4], tag)
	binary.BigEndian.PutUint32(t[4:8], worker)
	binary.BigEndian.PutUint64(t[8:16], seq)
	return t
}

// Parts returns the tag, worker id and sequence number the id was derived from.
func (t TraceID) Parts() (tag, worker uint32, seq uint64) {
	return binary.BigEndian.Uint32(t[0:4]), binary.BigEndian.Uint32(t[4:8]), binary.BigEndian.Uint64(t[8:16])
}

// String is the 32-hex form sent as X-B3-TraceId.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// SpanID is the 16-hex span id sent as X-B3-SpanId: the sequence half of the trace id,
// which is never zero because sequence numbers start at 1.
func (t TraceID) SpanID() string { return hex.EncodeToString(t[8:16]) }

// UUID is the trace id in the 8-4-4-4-12 form gorouter logs as vcap_request_id when it
// adopts an incoming B3 trace id.
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
