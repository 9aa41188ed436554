package logship

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/faultproxy"
	"github.com/cf-benchmark/cf-benchmark/internal/testes"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func TestMain(m *testing.M) { testes.Main(m) }

// esDo sends a JSON request to Elasticsearch and decodes the answer into out.
func esDo(t *testing.T, method, url string, body any, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		t.Fatalf("%s %s: %s %s", method, url, res.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
}

func esCount(t *testing.T, esURL, pattern string) int {
	t.Helper()
	esDo(t, "POST", esURL+"/"+pattern+"/_refresh", nil, nil)
	var c struct{ Count int }
	esDo(t, "GET", esURL+"/"+pattern+"/_count", nil, &c)
	return c.Count
}

func TestShipsToElasticsearch(t *testing.T) {
	esURL := testes.URL(t)
	prefix := testes.Index("logs-app-ship")
	s := New(Config{URL: esURL, Index: prefix + "-%{+YYYY.MM.dd}", Apps: apps, BatchSize: 64, FlushEvery: 50 * time.Millisecond})
	s.Start(context.Background())
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = routerLine(i)
	}
	// One line per Write, as the router writes, and some Writes of several lines.
	for i := 0; i < 200; {
		n := 1 + i%3
		if i+n > 200 {
			n = 200 - i
		}
		if _, err := s.Write([]byte(strings.Join(lines[i:i+n], "\n") + "\n")); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Shipped != 200 || st.Received != 200 || st.Failed+st.DroppedBuffer+st.DroppedQuota+st.Unparseable+st.NoApp != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n := esCount(t, esURL, prefix+"-*"); n != 200 {
		t.Fatalf("%d documents in %s-*, want 200", n, prefix)
	}

	// One request found by its vcap_request_id, as a reader joins on it.
	const i = 42
	trace := fmt.Sprintf("%032x", 0xabc000+i)
	var found struct {
		Hits struct {
			Hits []struct {
				Index  string         `json:"_index"`
				Source map[string]any `json:"_source"`
			}
		}
	}
	esDo(t, "POST", esURL+"/"+prefix+"-*/_search", map[string]any{
		"query": map[string]any{"term": map[string]any{"rtr.vcap_request_id": uuid(trace)}},
	}, &found)
	if len(found.Hits.Hits) != 1 {
		t.Fatalf("%d hits for vcap_request_id %s, want 1", len(found.Hits.Hits), uuid(trace))
	}
	hit := found.Hits.Hits[0]
	if hit.Index != prefix+"-2024.03.18" {
		t.Errorf("indexed into %s, want %s-2024.03.18", hit.Index, prefix)
	}
	src := hit.Source
	get := func(path string) any {
		var v any = src
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		}
		return v
	}
	start := base.Add(i * 10 * time.Millisecond)
	wantMS := float64(1000+i*37) / 1000
	for path, want := range map[string]any{
		"@timestamp":                 start.Add(time.Duration(1000+i*37) * time.Microsecond).Format("2006-01-02T15:04:05.000Z"),
		"@type":                      "LogMessage",
		"@source.type":               "RTR",
		"@message":                   lines[i],
		"@cf.app":                    "shop",
		"@cf.app_id":                 appIDs[0],
		"@cf.space":                  "prod",
		"@cf.space_id":               "5pace-0001",
		"@cf.org":                    "Acme",
		"@cf.org_id":                 "0rg-0001",
		"rtr.hostname":               "shop.apps.example.com",
		"rtr.timestamp":              start.Format("2006-01-02T15:04:05.000000000Z"),
		"rtr.verb":                   "GET",
		"rtr.path":                   "/items/42?page=2",
		"rtr.http_spec":              "HTTP/1.1",
		"rtr.status":                 float64(200),
		"rtr.request_bytes_received": float64(0),
		"rtr.body_bytes_sent":        float64(142),
		"rtr.referer":                "-",
		"rtr.http_user_agent":        "hey/0.0.1",
		"rtr.remote_addr":            "198.51.100.42",
		"rtr.x_forwarded_proto":      "https",
		"rtr.vcap_request_id":        uuid(trace),
		"rtr.response_time_sec":      wantMS / 1000,
		"rtr.response_time_ms":       wantMS,
		"rtr.gorouter_time_sec":      float64(100+i) / 1e6,
		"rtr.gorouter_time_ms":       float64(100+i) / 1e3,
		"rtr.app.id":                 appIDs[0],
		"rtr.app.index":              float64(i % 4),
		"rtr.extra.instance_id":      "inst-2",
		"rtr.extra.x_b3_traceid":     trace,
		"rtr.extra.x_cf_routererror": "-",
	} {
		if got := get(path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v (%T), want %v", path, got, got, want)
		}
	}
	if xff, _ := get("rtr.x_forwarded_for").([]any); len(xff) != 2 || xff[0] != "198.51.100.42" {
		t.Errorf("rtr.x_forwarded_for = %v", get("rtr.x_forwarded_for"))
	}

	// Field types, as a reader's range queries and aggregations see them.
	var mapping map[string]struct {
		Mappings struct {
			Properties map[string]json.RawMessage
		}
	}
	esDo(t, "GET", esURL+"/"+prefix+"-*/_mapping", nil, &mapping)
	for _, m := range mapping {
		for path, want := range map[string]string{
			"@timestamp": "date", "@type": "keyword", "rtr.status": "long",
			"rtr.response_time_ms": "double", "rtr.gorouter_time_ms": "double",
			"rtr.vcap_request_id": "keyword", "rtr.app.index": "long", "@cf.app": "keyword",
			"rtr.extra.x_b3_traceid": "keyword",
		} {
			if got := fieldType(m.Mappings.Properties, path); got != want {
				t.Errorf("mapping of %s is %q, want %q", path, got, want)
			}
		}
	}

	// Numbers are numbers: a range query and an average over response_time_ms.
	var agg struct {
		Hits struct {
			Total struct{ Value int }
		}
		Aggregations struct {
			Apps struct {
				Buckets []struct {
					Key      string
					DocCount int `json:"doc_count"`
				}
			}
			Avg struct{ Value float64 }
		}
	}
	esDo(t, "POST", esURL+"/"+prefix+"-*/_search", map[string]any{
		"size":  0,
		"query": map[string]any{"range": map[string]any{"rtr.status": map[string]any{"gte": 500}}},
		"aggs": map[string]any{
			"apps": map[string]any{"terms": map[string]any{"field": "@cf.app"}},
			"avg":  map[string]any{"avg": map[string]any{"field": "rtr.response_time_ms"}},
		},
	}, &agg)
	if agg.Hits.Total.Value != 33 { // status 502 for i%6 == 5: 33 of 200
		t.Errorf("%d documents with status ≥ 500, want 33", agg.Hits.Total.Value)
	}
	if agg.Aggregations.Avg.Value <= 1 || len(agg.Aggregations.Apps.Buckets) == 0 {
		t.Errorf("aggregations %+v", agg.Aggregations)
	}
}

// fieldType follows a dotted path through mapping properties.
func fieldType(props map[string]json.RawMessage, path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		var f struct {
			Type       string
			Properties map[string]json.RawMessage
		}
		if err := json.Unmarshal(props[p], &f); err != nil {
			return ""
		}
		if i == len(parts)-1 {
			return f.Type
		}
		props = f.Properties
	}
	return ""
}

func TestQuotaWithElasticsearch(t *testing.T) {
	esURL := testes.URL(t)
	prefix := testes.Index("logs-app-quota")
	at := time.Date(2024, 3, 18, 9, 30, 0, 0, time.UTC)
	s := New(Config{URL: esURL, Index: prefix + "-%{+YYYY.MM.dd}", Apps: apps, Quota: 50, QuotaWindow: time.Hour,
		FlushEvery: 50 * time.Millisecond, Clock: func() time.Time { return at }})
	s.Start(context.Background())
	writeLines(t, s, 0, 200)
	s.Close()
	st := s.Stats()
	if st.Shipped != 50 || st.DroppedQuota != 150 {
		t.Errorf("stats %+v, want 50 shipped and 150 dropped by quota", st)
	}
	if n := esCount(t, esURL, prefix+"-*"); n != 50 {
		t.Errorf("%d documents indexed, want exactly 50", n)
	}
}

func TestElasticsearchStopped(t *testing.T) {
	esURL := testes.URL(t)
	prefix := testes.Index("logs-app-down")
	// Cutting the proxy is Elasticsearch going away, as far as the shipper can tell.
	p, err := faultproxy.Start(strings.TrimPrefix(esURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	p.Cut() // Elasticsearch is down to begin with
	defer p.Close()

	// Down for a while, then back: every line arrives, once.
	s := New(Config{URL: "http://" + p.Addr(), Index: prefix + "-%{+YYYY.MM.dd}", Apps: apps,
		FlushEvery: 20 * time.Millisecond, BatchSize: 40, MaxAttempts: 1000, RetryBackoff: 20 * time.Millisecond})
	s.Start(context.Background())
	begin := time.Now()
	writeLines(t, s, 0, 100)
	if d := time.Since(begin); d > time.Second {
		t.Errorf("100 writes took %v with Elasticsearch down", d)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Retries < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := s.Stats(); st.Shipped != 0 || st.Retries < 3 || st.Buffered != 100 {
		t.Fatalf("while down: %+v; want retries and all 100 buffered", st)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st := s.Stats(); st.Shipped != 100 || st.Failed != 0 {
		t.Errorf("after coming back: %+v, want 100 shipped", st)
	}
	if n := esCount(t, esURL, prefix+"-*"); n != 100 {
		t.Errorf("%d documents indexed, want 100", n)
	}

	// Down for good: lines are counted as failed, and Close returns.
	p.Cut()
	s2 := New(Config{URL: "http://" + p.Addr(), Index: prefix + "-%{+YYYY.MM.dd}",
		FlushEvery: 20 * time.Millisecond, MaxAttempts: 3, RetryBackoff: 10 * time.Millisecond, FlushTimeout: 2 * time.Second})
	s2.Start(context.Background())
	writeLines(t, s2, 100, 150)
	begin = time.Now()
	s2.Close()
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if st := s2.Stats(); st.Failed != 50 || st.Shipped != 0 || st.Buffered != 0 {
		t.Errorf("down for good: %+v, want 50 failed", st)
	}
}
