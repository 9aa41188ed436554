package apptimings

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

const traceA = "0a0b0c0d00014001000000000000002a"

func TestDecode(t *testing.T) {
	b, err := Decode(strings.NewReader(`{"instance_index":2,"capacity":10,"dropped":3,"rows":[["` + traceA + `",1763900000123456,5,700,1200]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b.InstanceIndex != 2 || b.Capacity != 10 || b.Dropped != 3 || len(b.Rows) != 1 {
		t.Fatalf("batch %+v", b)
	}
	r := b.Rows[0]
	if r.TraceID.String() != traceA || r.At != time.UnixMicro(1763900000123456).UTC() ||
		r.PoolWait != 5*time.Microsecond || r.Query != 700*time.Microsecond || r.Total != 1200*time.Microsecond {
		t.Fatalf("row %+v", r)
	}
	if b, err := Decode(strings.NewReader(`{"instance_index":0,"rows":[]}`)); err != nil || len(b.Rows) != 0 {
		t.Fatalf("empty batch: %+v, %v", b, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"not json":        {`<html>`, "flush answer: invalid character"},
		"cut short":       {`{"instance_index":0,"rows":[["` + traceA + `",1,`, "cut short"},
		"no index":        {`{"rows":[]}`, "instance_index and rows are required"},
		"no rows":         {`{"instance_index":0}`, "instance_index and rows are required"},
		"short row":       {`{"instance_index":0,"rows":[["` + traceA + `",1,2,3]]}`, "rows[0]: want"},
		"bad trace id":    {`{"instance_index":0,"rows":[["` + traceA + `",1,2,3,4],["xyz",1,2,3,4]]}`, `rows[1]: trace id: trace id "xyz"`},
		"numeric trace":   {`{"instance_index":0,"rows":[[42,1,2,3,4]]}`, "rows[0]: trace id: want a string"},
		"negative":        {`{"instance_index":0,"rows":[["` + traceA + `",1,-2,3,4]]}`, "rows[0]: pool_wait_us: want a non-negative integer, got -2"},
		"fraction":        {`{"instance_index":0,"rows":[["` + traceA + `",1,2,3.5,4]]}`, "rows[0]: query_us: want a non-negative integer, got 3.5"},
		"string duration": {`{"instance_index":0,"rows":[["` + traceA + `",1,2,3,"4"]]}`, `rows[0]: total_us: want a non-negative integer, got "4"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestFlush: the flush goes to Path/flush on the app's route (dialled through
// ConnectTo), names the instance in X-Cf-App-Instance and carries the token; an answer
// from another instance, or an error status, is an error naming the instance.
func TestFlush(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, fmt.Sprintf("%s %s%s %s %s", r.Method, r.Host, r.URL.Path, r.Header.Get("X-Cf-App-Instance"), r.Header.Get("Authorization")))
		_, idx, _ := strings.Cut(r.Header.Get("X-Cf-App-Instance"), ":")
		switch idx {
		case "5":
			http.Error(w, `{"error":"timings need the bearer token of CFBENCH_TIMINGS_TOKEN"}`, http.StatusUnauthorized)
			return
		case "6":
			idx = "0" // the router ignored the header
		}
		fmt.Fprintf(w, `{"instance_index":%s,"capacity":5,"dropped":0,"rows":[["%s",1,2,3,4]]}`, idx, traceA)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c, err := New(Config{URL: "http://bulletin.apps.localhost/", ConnectTo: u.Host, Path: "/_cfbench/timings", Token: "t0k", AppGUID: "guid-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b, err := c.Flush(ctx, 3)
	if err != nil || b.InstanceIndex != 3 || len(b.Rows) != 1 {
		t.Fatalf("flush: %+v, %v", b, err)
	}
	if want := "POST bulletin.apps.localhost/_cfbench/timings/flush guid-1:3 Bearer t0k"; got[0] != want {
		t.Fatalf("request %q, want %q", got[0], want)
	}
	if _, err := c.Flush(ctx, 5); err == nil || !strings.Contains(err.Error(), "flush instance 5") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("401: %v", err)
	}
	if _, err := c.Flush(ctx, 6); err == nil || !strings.Contains(err.Error(), "instance 0 answered") {
		t.Fatalf("wrong instance: %v", err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []Config{{AppGUID: "g", Path: "/t"}, {URL: "http://a", Path: "/t"}, {URL: "http://a", AppGUID: "g", Path: "t"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
