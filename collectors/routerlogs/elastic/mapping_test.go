package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/routerlogstest"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// customFields maps a pipeline of another shape (customDoc's): other names, the
// request time as a date_nanos timestamp, milliseconds instead of seconds, text where
// logsearch has numbers and lists, dotted keys beside nested objects.
const customFields = "timestamp=ts, request_time=ts, app=app.name, app_id=app.guid, message=msg," +
	"host=request.host, method=request.method, path=request.uri, proto=request.protocol," +
	"status=request.status, bytes_received=request.bytes_in, bytes_sent=request.bytes_out," +
	"referer=request.referer, user_agent=request.agent, remote_addr=request.client," +
	"backend_addr=request.backend, x_forwarded_for=request.forwarded_for," +
	"x_forwarded_proto=request.forwarded_proto, vcap_request_id=request.id," +
	"response_time_sec=-, response_time_ms=request.latency_ms, gorouter_time_sec=-," +
	"gorouter_time_ms=router.overhead_ms, router_app_id=request.app_id, app_index=request.instance, extra=more"

// customDoc renders a request the way customFields reads it.
func customDoc(req *routerlogstest.Request) map[string]any {
	r := &req.Record
	request := map[string]any{
		"host": r.Host, "method": r.Method, "uri": r.URI, "protocol": r.Proto,
		"bytes_in": r.BytesReceived, "bytes_out": r.BytesSent, "referer": orDash(r.Referer),
		"agent": orDash(r.UserAgent), "client": orDash(r.RemoteAddr), "backend": orDash(r.BackendAddr),
		"forwarded_for": orDash(r.XForwardedFor), "forwarded_proto": orDash(r.XForwardedProto),
		"id": orDash(r.VcapRequestID), "app_id": orDash(r.AppID),
	}
	request["time"] = r.Time.UTC().Format(time.RFC3339Nano)
	doc := map[string]any{
		"ts":      r.Time.UTC().Format(time.RFC3339Nano),
		"app":     map[string]any{"name": req.App, "guid": req.AppGUID},
		"msg":     req.Line,
		"request": request,
	}
	if r.Status != 0 {
		doc["request.status"] = strconv.Itoa(r.Status) // a dotted key, and text
	}
	if r.Has(accesslog.FieldResponseTime) {
		request["latency_ms"] = float64(r.ResponseTime) / 1e6
	}
	if r.Has(accesslog.FieldGorouterTime) {
		doc["router.overhead_ms"] = float64(r.GorouterTime) / 1e6
	}
	if r.Has(accesslog.FieldAppIndex) {
		request["instance"] = r.AppIndex
	}
	more := map[string]any{}
	for k, v := range r.Extra {
		more[k] = v
	}
	for _, f := range []struct {
		f    accesslog.Field
		name string
		v    string
	}{
		{accesslog.FieldInstanceID, "instance_id", r.InstanceID},
		{accesslog.FieldRouterError, "x_cf_routererror", r.RouterError},
		{accesslog.FieldB3TraceID, "x_b3_traceid", r.B3TraceID},
		{accesslog.FieldB3SpanID, "x_b3_spanid", r.B3SpanID},
		{accesslog.FieldB3ParentSpanID, "x_b3_parentspanid", r.B3ParentSpanID},
		{accesslog.FieldB3, "b3", r.B3},
	} {
		if r.Has(f.f) {
			more[f.name] = orDash(f.v)
		}
	}
	if r.Has(accesslog.FieldBackendTime) {
		more["backend_time"] = accesslog.FormatSeconds(r.BackendTime)
	}
	if r.Has(accesslog.FieldFailedAttempts) {
		more["failed_attempts"] = r.FailedAttempts // a number here, text in logsearch
	}
	doc["more"] = more
	return doc
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// indexCustom indexes d's requests as customDoc renders them into a new index with
// three shards and returns its name. A non-zero ts replaces the ts of every document
// in d's window.
func indexCustom(t *testing.T, c *cluster, d *routerlogstest.Dataset, ts time.Time) string {
	t.Helper()
	url := c.URL(t)
	index := fmt.Sprintf("custom-rtr-%d", time.Now().UnixNano())
	if err := httpDo("PUT", url+"/"+index, map[string]any{
		"settings": map[string]any{"number_of_shards": 3, "number_of_replicas": 0, "refresh_interval": "-1"},
		"mappings": map[string]any{"properties": map[string]any{
			"ts":  map[string]any{"type": "date_nanos"},
			"app": map[string]any{"properties": map[string]any{"name": map[string]any{"type": "keyword"}, "guid": map[string]any{"type": "keyword"}}},
		}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	flush := func() {
		req, _ := http.NewRequest("POST", url+"/"+index+"/_bulk?filter_path=errors", bytes.NewReader(body.Bytes()))
		req.Header.Set("Content-Type", "application/x-ndjson")
		res, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Equal(b, []byte(`{"errors":false}`)) {
			t.Fatalf("bulk: %s %.500s", res.Status, b)
		}
		body.Reset()
	}
	for i := range d.Requests {
		m := customDoc(&d.Requests[i])
		if !ts.IsZero() && d.Query.InWindow(d.Requests[i].Record.Time) {
			m["ts"] = ts.Format(time.RFC3339Nano)
		}
		doc, _ := json.Marshal(m)
		body.WriteString(`{"index":{}}` + "\n")
		body.Write(doc)
		body.WriteByte('\n')
		if body.Len() > 4<<20 {
			flush()
		}
	}
	flush()
	if err := httpDo("POST", url+"/"+index+"/_refresh", nil, nil); err != nil {
		t.Fatal(err)
	}
	return index
}

// TestFieldMapping reads documents of another shape through a field mapping, parsed
// fields and raw line alike. Like TestManyDocumentsShareATimestamp it indexes its own
// documents and is not parallel: it runs before the parallel tests, while the shared
// data set loads (cluster.URL).
func TestFieldMapping(t *testing.T) {
	d := routerlogstest.Generate(6000, 99)
	forEachCluster(t, func(t *testing.T, c *cluster) {
		index := indexCustom(t, c, d, time.Time{})
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
				var fields Fields
				if err := fields.Set(customFields); err != nil {
					t.Fatal(err)
				}
				s, err := New(Config{URLs: []string{c.URL(t)}, Index: "custom-rtr-nomatch-*," + index, Fields: fields, Raw: raw, PageSize: 700})
				if err != nil {
					t.Fatal(err)
				}
				routerlogstest.InterruptAndResume(t, d, func(*testing.T) routerlogs.Source { return s }, []int{2, 3}, nil)
			})
		}
	})
}

// TestManyDocumentsShareATimestamp puts thousands of documents on three shards at one
// timestamp, more than a page, and pulls them in pulls interrupted inside that
// timestamp, with the contexts deleted between pulls and under a running one: the
// position's list of documents already emitted carries the pull across.
func TestManyDocumentsShareATimestamp(t *testing.T) {
	d := routerlogstest.Generate(2500, 123)
	at := routerlogstest.WindowStart.Add(10 * time.Minute)
	forEachCluster(t, func(t *testing.T, c *cluster) {
		index := indexCustom(t, c, d, at)
		var fields Fields
		if err := fields.Set(customFields + ",request_time=request.time"); err != nil {
			t.Fatal(err)
		}
		for _, paging := range []Paging{PagingAuto, PagingScroll} {
			t.Run("paging="+string(paging), func(t *testing.T) {
				tp := newTap()
				source := func(*testing.T) routerlogs.Source {
					s, err := New(Config{URLs: []string{c.URL(t)}, Index: index, Fields: fields, PageSize: 700, Paging: paging, Transport: tp,
						RetryBackoff: time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				routerlogstest.InterruptAndResume(t, d, source, []int{1, 2}, func(t *testing.T) { tp.dropContexts(t, c) })

				coll := routerlogstest.NewCollector(d)
				batches := 0
				if _, err := source(t).Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(b routerlogs.Batch) error {
					if batches++; batches == 2 {
						tp.dropContexts(t, c)
					}
					return coll.Emit(b)
				}); err != nil {
					t.Fatal(err)
				}
				coll.CheckComplete(t)
			})
		}
	})
}
