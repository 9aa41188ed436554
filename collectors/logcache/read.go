package logcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Read paging: Log Cache answers at most 1000 envelopes a read; a poll reads at most
// maxPages pages per app (a million envelopes), then goes on next time.
const (
	pageLimit = 1000
	maxPages  = 1000
)

// errNotFound is Log Cache's 404: no such source for this token, or (with no body)
// no valid token at all, which its meta tells apart.
var errNotFound = errors.New("not found")

// read returns the gauge envelopes of source in [start, end), oldest first, following
// pages; an unknown source has none.
func (p *Poller) read(ctx context.Context, sourceID string, start, end int64) ([]envelope, error) {
	var out []envelope
	renewed := false
	for pages := 0; pages < maxPages; {
		sent := time.Now()
		page, err := p.readPage(ctx, sourceID, start, end)
		if errors.Is(err, errNotFound) {
			// Log Cache's auth proxy answers an expired token as it answers a source the
			// token may not read: 404, no body. Meta, with the same token, tells which.
			if !p.tokenRejected(ctx) {
				p.log.Debug("log cache has no such source", "source_id", sourceID)
				return out, nil
			}
			if renewed {
				return out, ErrTokenRejected
			}
			renewed = true
			if err := p.renewToken(ctx, sent); err != nil {
				return out, err
			}
			continue // the same page, with the new token
		}
		if err != nil {
			return out, err
		}
		pages++
		out = append(out, page...)
		if len(page) < pageLimit {
			return out, nil
		}
		// The next page starts at the last timestamp, inclusive: envelopes may share
		// one; those read twice are dropped as seen. A page of one timestamp only
		// moves on past it.
		last := page[len(page)-1].ts
		if last == page[0].ts {
			last++
		}
		start = last
	}
	return out, nil
}

// readPage reads one page, retrying 429, 5xx and failed requests.
func (p *Poller) readPage(ctx context.Context, sourceID string, start, end int64) ([]envelope, error) {
	q := url.Values{"envelope_types": {"GAUGE"}, "start_time": {strconv.FormatInt(start, 10)},
		"end_time": {strconv.FormatInt(end, 10)}, "limit": {strconv.Itoa(pageLimit)}}
	u := p.cfg.URL + "/api/v1/read/" + url.PathEscape(sourceID) + "?" + q.Encode()
	b := backoff.Backoff{First: p.cfg.RetryWait, Max: p.cfg.RetryWait << p.cfg.Retries}
	for attempt := 0; ; attempt++ {
		envs, retryAfter, err := p.get(ctx, u)
		if err == nil || retryAfter < 0 || attempt >= p.cfg.Retries {
			return envs, err
		}
		d := max(b.Next(), retryAfter) // the server's Retry-After wins when longer
		p.log.Debug("log cache read failed, retrying", "source_id", sourceID, "in", d, "err", err)
		if !wait.For(ctx, d) {
			return nil, fmt.Errorf("%w (retry cancelled: %w)", err, ctx.Err())
		}
	}
}

// get sends one read. retryAfter ≥ 0 says the failure is transient and how long the
// server asked to wait (0: not said); -1 that retrying will not help.
func (p *Poller) get(ctx context.Context, u string) (_ []envelope, retryAfter time.Duration, _ error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, -1, fmt.Errorf("log cache read: %w", err)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, fmt.Errorf("log cache read: %w", err)
		}
		return nil, 0, fmt.Errorf("log cache read: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, -1, errNotFound
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		after := time.Duration(0)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return nil, after, fmt.Errorf("log cache read: %s: %s", resp.Status, snippet(body))
	case resp.StatusCode != http.StatusOK:
		return nil, -1, fmt.Errorf("log cache read: %s: %s", resp.Status, snippet(body))
	case err != nil:
		return nil, 0, fmt.Errorf("log cache read: %w", err)
	}
	envs, err := decodeBatch(body)
	if err != nil {
		return nil, -1, fmt.Errorf("log cache read: decode: %w", err)
	}
	return envs, 0, nil
}

// decodeBatch decodes a read's answer, a logcache.v1.ReadResponse in protojson.
func decodeBatch(body []byte) ([]envelope, error) {
	var r struct {
		Envelopes struct {
			Batch []envelope `json:"batch"`
		} `json:"envelopes"`
	}
	err := json.Unmarshal(body, &r)
	return r.Envelopes.Batch, err
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		b = append(b[:200:200], "…"...)
	}
	return string(b)
}

// envelope is what the poller reads of a Loggregator v2 envelope in Log Cache's JSON:
// protojson (int64 as strings, though numbers are taken too; NaN and ±Infinity as
// strings), with unpopulated fields written as log-cache's gateway does or left out
// as protojson does by default.
type envelope struct {
	ts         int64
	instanceID string
	tags       map[string]string
	metrics    map[string]float64
}

func (e *envelope) UnmarshalJSON(b []byte) error {
	var raw struct {
		Timestamp  json.RawMessage   `json:"timestamp"`
		InstanceID string            `json:"instance_id"`
		Tags       map[string]string `json:"tags"`
		Gauge      *struct {
			Metrics map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"metrics"`
		} `json:"gauge"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	ts, err := strconv.ParseInt(string(bytes.Trim(raw.Timestamp, `"`)), 10, 64)
	if err != nil && len(raw.Timestamp) > 0 {
		return fmt.Errorf("envelope timestamp %s: %w", raw.Timestamp, err)
	}
	*e = envelope{ts: ts, instanceID: raw.InstanceID, tags: raw.Tags}
	if raw.Gauge == nil {
		return nil
	}
	e.metrics = make(map[string]float64, len(raw.Gauge.Metrics))
	for name, v := range raw.Gauge.Metrics {
		// protojson writes NaN and ±Infinity as strings; such a value is no reading.
		f, err := strconv.ParseFloat(string(bytes.Trim(v.Value, `"`)), 64)
		if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			e.metrics[name] = f
		} else if len(v.Value) == 0 {
			e.metrics[name] = 0 // protojson omits nothing, but a zero may be left out by others
		}
	}
	return nil
}

// cpuWaitGauge is the local foundation's cumulative run-queue wait of a container, in
// the counters envelope (foundation's containerEnvelopes); Diego sends none.
const cpuWaitGauge = "absolute_cpu_wait"

// The metrics of the two container-metric envelopes.
var (
	usageMetrics   = []string{"cpu", "memory", "disk", "memory_quota"}
	counterMetrics = []string{"absolute_usage", "absolute_entitlement", "container_age"}
)

func (e *envelope) has(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { _, ok := e.metrics[n]; return ok })
}

// instance names one container: its process type, index and guid.
func (e *envelope) instance() string {
	return e.tags["process_type"] + "/" + e.instanceID + "/" + e.tags["process_instance_id"]
}

// key identifies an envelope among those of a source.
func (e *envelope) key() string {
	kind := "u"
	if e.has(counterMetrics) {
		kind = "c"
	}
	return e.instance() + "/" + strconv.FormatInt(e.ts, 10) + "/" + kind
}

// pairWindow is how far apart the two envelopes of one sample may be: the rep sends
// them one after the other, microseconds apart.
const pairWindow = int64(time.Second)

// rows turns s's envelopes into rows, skipping those stored before and those that
// are no container metrics (app metrics, log rates). A counters envelope and the
// usage envelope of the same instance within pairWindow make one row, at the
// counters' time. keys are the envelopes used, to remember as seen.
func (p *Poller) rows(s *source, envs []envelope) (rows []resultsdb.ContainerMetric, keys map[string]int64) {
	keys = map[string]int64{}
	var usage, counters []*envelope
	for i := range envs {
		e := &envs[i]
		k := e.key()
		if _, dup := s.seen[k]; dup {
			continue
		}
		if _, dup := keys[k]; dup {
			continue
		}
		if _, err := strconv.Atoi(e.instanceID); err != nil {
			continue
		}
		switch {
		case e.has(counterMetrics):
			counters = append(counters, e)
		case e.has(usageMetrics):
			usage = append(usage, e)
		default:
			continue
		}
		keys[k] = e.ts
	}
	paired := map[*envelope]bool{}
	for _, c := range counters {
		var best *envelope
		for _, u := range usage {
			if paired[u] || u.instance() != c.instance() || abs(u.ts-c.ts) > pairWindow {
				continue
			}
			if best == nil || abs(u.ts-c.ts) < abs(best.ts-c.ts) {
				best = u
			}
		}
		if best != nil {
			paired[best] = true
		}
		rows = append(rows, p.row(s.target, c, best))
	}
	for _, u := range usage {
		if !paired[u] {
			rows = append(rows, p.row(s.target, u, nil))
		}
	}
	slices.SortStableFunc(rows, func(a, b resultsdb.ContainerMetric) int { return a.At.Compare(b.At) })
	return rows, keys
}

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// row is one reading: e's metrics, with those of other (the usage envelope of the same
// sample) where e lacks them. Missing metrics stay null; state, host and isolation
// segment stay empty: Log Cache does not carry them (CC's process stats do). The rates
// (the cpu and cpu_entitlement gauges) are left out too: they are the figures CC's
// stats rows carry already (CC reads them from Log Cache), and between two readings
// the counters give them exactly, so the stats rows' sampled CPU is not counted twice.
func (p *Poller) row(t Target, e, other *envelope) resultsdb.ContainerMetric {
	index, _ := strconv.Atoi(e.instanceID)
	ptype := e.tags["process_type"]
	if ptype == "" {
		ptype = "web"
	}
	m := resultsdb.ContainerMetric{RunID: p.cfg.RunID, At: time.Unix(0, e.ts), AppName: t.AppName, AppGUID: t.AppGUID,
		ProcessType: ptype, InstanceIndex: index, Source: resultsdb.SourceLogCache}
	get := func(name string) (float64, bool) {
		if v, ok := e.metrics[name]; ok {
			return v, true
		}
		if other != nil {
			v, ok := other.metrics[name]
			return v, ok
		}
		return 0, false
	}
	integer := func(name string) *int64 {
		if v, ok := get(name); ok && v >= 0 && v < math.MaxInt64 {
			n := int64(v)
			return &n
		}
		return nil
	}
	m.MemBytes, m.DiskBytes, m.MemQuotaBytes = integer("memory"), integer("disk"), integer("memory_quota")
	m.CPUTimeNS, m.EntitlementNS, m.ContainerAgeNS = integer("absolute_usage"), integer("absolute_entitlement"), integer("container_age")
	m.CPUWaitNS = integer(cpuWaitGauge)
	if age := m.ContainerAgeNS; age != nil {
		up := *age / int64(time.Second)
		m.UptimeSeconds = &up
	}
	return m
}
