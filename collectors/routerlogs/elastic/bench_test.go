package elastic

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
)

// BenchmarkFilterPath measures documents per second retrieved from the test
// Elasticsearch (the shared data set's 200,000-document window, one full pull per
// variant and iteration) with filter_path and without, and reports both and their
// ratio; scripts/bench-routerlogs.sh runs it. The variants take turns within an
// iteration, after a warm-up pull, so that the node's JIT and caches favour none.
// Informational variants: no _source includes either, no gzip (what compression
// costs on loopback), raw mode.
//
//	go test -run '^$' -bench BenchmarkFilterPath -benchtime 3x ./collectors/routerlogs/elastic
func BenchmarkFilterPath(b *testing.B) {
	c := clusters[0]
	c.Loaded(b)
	d := sharedData()
	type variant struct {
		name  string
		mod   func(*Config)
		gzip  bool
		took  time.Duration
		docs  int64
		bytes atomic.Int64 // read from the connections: on the wire, compressed or not
	}
	variants := []*variant{
		{name: "filter_path", gzip: true},
		{name: "no_filter_path", gzip: true, mod: func(c *Config) { c.NoFilterPath = true }},
		{name: "unfiltered", gzip: true, mod: func(c *Config) { c.NoFilterPath, c.NoSourceFilter = true, true }},
		{name: "filter_path_nogzip"},
		{name: "raw", gzip: true, mod: func(c *Config) { c.Raw = true }},
	}
	pull := func(s *Source) (int64, time.Duration) {
		begin := time.Now()
		res, err := s.Pull(context.Background(), d.Query, routerlogs.Cursor{}, routerlogs.Budget{}, func(routerlogs.Batch) error { return nil })
		took := time.Since(begin)
		if err != nil {
			b.Fatal(err)
		}
		if res.Retrieved != int64(d.Wanted) {
			b.Fatalf("retrieved %d, want %d", res.Retrieved, d.Wanted)
		}
		return res.Retrieved, took
	}
	sources := make([]*Source, len(variants))
	for i, v := range variants {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = !v.gzip
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return countingConn{conn, &v.bytes}, err
		}
		sources[i] = newSource(b, c, func(cfg *Config) {
			cfg.Transport = t
			if v.mod != nil {
				v.mod(cfg)
			}
		})
	}
	pull(sources[0]) // warm-up
	variants[0].bytes.Store(0)
	b.ResetTimer()
	for b.Loop() {
		for i := range variants {
			n, took := pull(sources[i])
			variants[i].docs += n
			variants[i].took += took
		}
	}
	rate := map[string]float64{}
	for _, v := range variants {
		rate[v.name] = float64(v.docs) / v.took.Seconds()
		b.ReportMetric(rate[v.name], v.name+"_docs/s")
		b.ReportMetric(float64(v.bytes.Load())/float64(v.docs), v.name+"_wire_B/doc")
	}
	b.ReportMetric(rate["filter_path"]/rate["no_filter_path"], "filter_path/no_filter_path")
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}
