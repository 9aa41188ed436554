package router

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
}
