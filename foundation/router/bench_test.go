package router

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// BenchmarkRouter measures the same tiny backend directly and through the
// router (access log rendered to io.Discard), with keep-alive clients in
// parallel, so the router's added cost per request is the difference of
// the two ns/op (and allocs/op) of one run.
func BenchmarkRouter(b *testing.B) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "2")
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()
	table := newTable(map[string]Route{"bench.local": {AppGUID: appGUID, Backends: []Backend{
		{Addr: backend.Listener.Addr().String(), Index: 0, InstanceGUID: "inst-0"},
	}}})
	rt := New(Config{Listen: "127.0.0.1:0", Table: table, AccessLog: io.Discard})
	if err := rt.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rt.Close() }()

	run := func(b *testing.B, url, host string) {
		client := &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: 1024,
			DisableCompression:  true,
		}}
		defer client.CloseIdleConnections()
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			req, err := http.NewRequest("GET", url, nil)
			if err != nil {
				b.Error(err)
				return
			}
			req.Host = host
			for pb.Next() {
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Errorf("status %d", res.StatusCode)
					return
				}
			}
		})
	}
	b.Run("direct", func(b *testing.B) { run(b, backend.URL+"/", "bench.local") })
	b.Run("router", func(b *testing.B) { run(b, "http://"+rt.Addr()+"/", "bench.local") })

	// One request at a time: the latency a request sees, reported as p50-µs; the
	// router's added latency is the difference of the two in one run.
	latency := func(b *testing.B, url, host string) {
		client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
		defer client.CloseIdleConnections()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Host = host
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	}
	b.Run("direct-latency", func(b *testing.B) { latency(b, backend.URL+"/", "bench.local") })
	b.Run("router-latency", func(b *testing.B) { latency(b, "http://"+rt.Addr()+"/", "bench.local") })
}
