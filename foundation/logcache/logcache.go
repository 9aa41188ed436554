// Package logcache is the local foundation's Log Cache: a bounded in-memory store of
// Loggregator v2 envelopes per source id, and the Log Cache HTTP read API over it
// (GET /api/v1/read/:source_id and GET /api/v1/info), answering in the JSON that
// log-cache's gateway produces, so that Log Cache clients (the cf CLI, the
// cpu-entitlement plugin, the toolkit's collector) read it as they read a real one.
//
// What log-cache-release does and this package copies (src/internal/routing,
// src/internal/cache/store, src/internal/auth, src/internal/gateway):
//   - the time range is [start_time, end_time) in Unix nanoseconds; end_time defaults
//     to now; limit defaults to 100 and may be at most 1000; envelope_types may be
//     given more than once; descending=true reads newest first;
//   - each source keeps at most a fixed number of envelopes, dropping its oldest;
//   - a read without a valid token, or of a source the token may not read, is a 404
//     with an empty body (the CF auth proxy's answer), not a 401;
//   - a limit out of range or a start after the end fails the gRPC read, which the
//     gateway turns into a 500 with a google.rpc.Status body; an unparsable query
//     parameter is a 400 with one.
//
// Meta, PromQL and the other envelope types' producers (counters, timers, events) are
// not served.
package logcache

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// Envelope types, as the read API's envelope_types parameter names them.
const (
	TypeLog   = "LOG"
	TypeGauge = "GAUGE"
)

// Envelope is a Loggregator v2 envelope carrying a gauge or a log line; exactly one of
// Gauge and Log is set. Stored envelopes are shared by readers: never change one after
// Put.
type Envelope struct {
	Timestamp  int64 // Unix nanoseconds
	SourceID   string
	InstanceID string
	Tags       map[string]string
	Gauge      map[string]GaugeValue
	Log        *Log
}

// GaugeValue is one metric of a gauge envelope.
type GaugeValue struct {
	Unit  string
	Value float64
}

// Log is a log line. Type is "OUT" or "ERR".
type Log struct {
	Payload []byte
	Type    string
}

// typeName is the envelope's type as envelope_types names it.
func (e *Envelope) typeName() string {
	if e.Log != nil {
		return TypeLog
	}
	return TypeGauge
}

// The envelope's JSON, as protojson writes loggregator.v2.Envelope with proto field
// names and unpopulated fields emitted (log-cache's gateway marshaler).
type (
	jsonEnvelope struct {
		Timestamp      string            `json:"timestamp"` // int64: a string in protojson
		SourceID       string            `json:"source_id"`
		InstanceID     string            `json:"instance_id"`
		DeprecatedTags map[string]any    `json:"deprecated_tags"`
		Tags           map[string]string `json:"tags"`
		Log            *jsonLog          `json:"log,omitempty"` // a oneof: only the set member
		Gauge          *jsonGauge        `json:"gauge,omitempty"`
	}
	jsonLog struct {
		Payload string `json:"payload"` // bytes: base64
		Type    string `json:"type"`    // enum: its name
	}
	jsonGauge struct {
		Metrics map[string]jsonGaugeValue `json:"metrics"`
	}
	jsonGaugeValue struct {
		Unit  string  `json:"unit"`
		Value float64 `json:"value"`
	}
)

// MarshalJSON writes the envelope as log-cache's gateway does: int64 timestamps are
// strings, maps are objects even when empty, a log's payload is base64 and its type an
// enum name ("OUT" when unset, the enum's zero).
func (e Envelope) MarshalJSON() ([]byte, error) {
	out := jsonEnvelope{Timestamp: strconv.FormatInt(e.Timestamp, 10), SourceID: e.SourceID, InstanceID: e.InstanceID,
		DeprecatedTags: map[string]any{}, Tags: e.Tags}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	if e.Log != nil {
		out.Log = &jsonLog{Payload: base64.StdEncoding.EncodeToString(e.Log.Payload), Type: e.Log.Type}
		if out.Log.Type == "" {
			out.Log.Type = "OUT"
		}
	} else {
		out.Gauge = &jsonGauge{Metrics: make(map[string]jsonGaugeValue, len(e.Gauge))}
		for k, v := range e.Gauge {
			out.Gauge.Metrics[k] = jsonGaugeValue(v)
		}
	}
	return json.Marshal(out)
}

// Store keeps the newest envelopes of each source, at most MaxPerSource of them, sorted
// by timestamp. Its methods may be called concurrently.
type Store struct {
	max int
	mu  sync.RWMutex
	src map[string][]*Envelope
}

// DefaultMaxPerSource bounds a source's envelopes. log-cache keeps up to 100,000 per
// source on a VM sized for it; a tenth of that holds well over an hour of one
// instance's container metrics at the local foundation's 1 s interval, far more than a
// poller reading every few seconds needs, in a few MB.
const DefaultMaxPerSource = 10000

// NewStore returns an empty store keeping at most maxPerSource envelopes per source
// (DefaultMaxPerSource when ≤ 0).
func NewStore(maxPerSource int) *Store {
	if maxPerSource <= 0 {
		maxPerSource = DefaultMaxPerSource
	}
	return &Store{max: maxPerSource, src: map[string][]*Envelope{}}
}

// Put stores envelopes under their SourceID. A source at its cap drops its oldest
// envelope for each new one, as log-cache does.
func (s *Store) Put(envs ...Envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range envs {
		e := &envs[i]
		list := s.src[e.SourceID]
		if len(list) >= s.max {
			list = slices.Delete(list, 0, len(list)-s.max+1)
		}
		// Envelopes come in time order nearly always: search from the end.
		at := sort.Search(len(list), func(j int) bool { return list[j].Timestamp > e.Timestamp })
		list = slices.Insert(list, at, e)
		s.src[e.SourceID] = list
	}
}

// Query is a read of one source.
type Query struct {
	SourceID string
	// Start and End bound the timestamps read: [Start, End), Unix nanoseconds.
	Start, End int64
	// Types are the envelope types read (TypeLog, TypeGauge); none means every type.
	Types      []string
	Limit      int // at most this many envelopes, > 0
	Descending bool
	// NameFilter, if set, keeps only the gauge metrics it matches, and only the gauges
	// with one left (as log-cache's name_filter, a regular expression).
	NameFilter func(name string) bool
}

// Read returns the envelopes of q in time order (newest first when q.Descending),
// nil for an unknown source.
func (s *Store) Read(q Query) []Envelope {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := s.src[q.SourceID]
	lo := sort.Search(len(list), func(i int) bool { return list[i].Timestamp >= q.Start })
	hi := sort.Search(len(list), func(i int) bool { return list[i].Timestamp >= q.End })
	var out []Envelope
	take := func(e *Envelope) bool {
		if len(q.Types) > 0 && !slices.Contains(q.Types, e.typeName()) {
			return true
		}
		env := *e
		if q.NameFilter != nil {
			if e.Gauge == nil {
				return true
			}
			env.Gauge = map[string]GaugeValue{}
			for k, v := range e.Gauge {
				if q.NameFilter(k) {
					env.Gauge[k] = v
				}
			}
			if len(env.Gauge) == 0 {
				return true
			}
		}
		out = append(out, env)
		return len(out) < q.Limit
	}
	if q.Descending {
		for i := hi - 1; i >= lo && take(list[i]); i-- {
		}
	} else {
		for i := lo; i < hi && take(list[i]); i++ {
		}
	}
	return out
}

// Len is how many envelopes the source holds.
func (s *Store) Len(sourceID string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.src[sourceID])
}

// Forget drops a source's envelopes (its app was deleted).
func (s *Store) Forget(sourceID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.src, sourceID)
}
