// Package logcache is the local foundation's Log Cache: a bounded in-memory store of
// Loggregator v2 envelopes per source id, and the Log Cache HTTP read API over it
// (GET /api/v1/read/:source_id, /api/v1/meta and /api/v1/info), answering in the JSON
// that log-cache's gateway and CF auth proxy produce, so that Log Cache clients (the
// cf CLI, the cpu-entitlement plugin, go-log-cache, the toolkit's collector) read it
// as they read a real one.
//
// What log-cache-release does and this package copies (src/internal/routing,
// src/internal/cache/store, src/internal/auth, src/internal/gateway):
//   - the time range is [start_time, end_time) in Unix nanoseconds; end_time defaults
//     to now; limit defaults to 100 and may be at most 1000; envelope_types may be
//     given more than once; descending=true reads newest first;
//   - each source keeps at most a fixed number of envelopes, dropping its oldest, which
//     meta counts as expired;
//   - a read without a valid token, or of a source the token may not read, is a 404
//     with an empty body (the CF auth proxy's answer), not a 401; meta lists only
//     the sources the token may read;
//   - a limit out of range or a start after the end fails the gRPC read, which the
//     gateway turns into a 500 with a google.rpc.Status body; an unparsable query
//     parameter is a 400 with one.
//
// PromQL and the other envelope types' producers (counters, timers, events) are
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
	src map[string]*source
}

// source is what the store holds of one source id.
type source struct {
	envs    []*Envelope // by timestamp
	expired int64       // envelopes dropped at the cap
	newest  int64       // the greatest timestamp ever put
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
	return &Store{max: maxPerSource, src: map[string]*source{}}
}

// Put stores envelopes under their SourceID. A source at its cap drops its oldest
// envelope for each new one, as log-cache does, and counts it as expired.
func (s *Store) Put(envs ...Envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range envs {
		e := &envs[i]
		src := s.src[e.SourceID]
		if src == nil {
			src = &source{newest: e.Timestamp}
			s.src[e.SourceID] = src
		}
		if n := len(src.envs) - s.max + 1; n > 0 {
			src.envs = slices.Delete(src.envs, 0, n)
			src.expired += int64(n)
		}
		// Envelopes come in time order nearly always: search from the end.
		at := sort.Search(len(src.envs), func(j int) bool { return src.envs[j].Timestamp > e.Timestamp })
		src.envs = slices.Insert(src.envs, at, e)
		src.newest = max(src.newest, e.Timestamp)
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
	var list []*Envelope
	if src := s.src[q.SourceID]; src != nil {
		list = src.envs
	}
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
	if src := s.src[sourceID]; src != nil {
		return len(src.envs)
	}
	return 0
}

// MetaInfo is what Log Cache's meta endpoint says of one source.
type MetaInfo struct {
	Count   int64 // envelopes held
	Expired int64 // envelopes dropped at the cap
	// Oldest is the oldest timestamp held, Newest the newest ever put (log-cache does
	// not lower it when envelopes expire), Unix nanoseconds.
	Oldest, Newest int64
}

// Meta describes every source that holds envelopes.
func (s *Store) Meta() map[string]MetaInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]MetaInfo{}
	for id, src := range s.src {
		if len(src.envs) == 0 {
			continue
		}
		out[id] = MetaInfo{Count: int64(len(src.envs)), Expired: src.expired, Oldest: src.envs[0].Timestamp, Newest: src.newest}
	}
	return out
}

// Forget drops a source's envelopes (its app was deleted).
func (s *Store) Forget(sourceID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.src, sourceID)
}
