package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestInstancesOutliveRestartsOfTheRelayApp: the platform restarts the relay app (a
// new instance on another port behind the same route) while an instance streams its
// samples through it. The router answers 502 meanwhile; the instance's writer keeps
// the samples and sends them again, and every sample is stored once.
func TestInstancesOutliveRestartsOfTheRelayApp(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	store, err := resultsdb.OpenPool(ctx, dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	first := New(Config{Store: store, Token: "test-token-0123456789"})
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var backend atomic.Pointer[url.URL] // the route's backend, as the router knows it
	u, _ := url.Parse(first.URL())
	backend.Store(u)
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := backend.Load()
		(&httputil.ReverseProxy{Rewrite: func(p *httputil.ProxyRequest) { p.SetURL(to) }}).ServeHTTP(w, r)
	}))
	defer router.Close()
	c, err := NewClient(router.URL, "test-token-0123456789", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	run, err := store.CreateRun(ctx, "r", "r.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: run.ID, Variant: "v", GeneratorApp: "app", TargetURL: "http://127.0.0.1:1", Workload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	id, err := c.JoinRun(ctx, resultsdb.Worker{RunID: run.ID, Variant: "v", AppName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.NewSampleWriter(id, resultsdb.WriterOptions{FlushEvery: 20 * time.Millisecond, BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	w.Start(ctx)
	seq := uint32(0)
	add := func(n int) {
		for range n {
			seq++
			w.Add(sample.Sample{Seq: seq, Status: 200})
		}
		time.Sleep(50 * time.Millisecond)
	}
	add(200)
	for range 2 {
		first.Close() // the instance stops
		add(200)      // while no instance runs: the router answers 502
		// The new instance's own pool to the same database.
		pool, err := resultsdb.OpenPool(ctx, dsn, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		next := New(Config{Store: pool, Token: "test-token-0123456789"})
		if err := next.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { next.Close() })
		nu, _ := url.Parse(next.URL())
		backend.Store(nu)
		first = next
		add(200)
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.Close(fctx); err != nil {
		t.Fatalf("flush through the restarted relay: %v", err)
	}
	var rows, distinct int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT seq) FROM samples WHERE worker_id = $1`, id).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != int(seq) || distinct != int(seq) || w.Dropped() != 0 {
		t.Errorf("%d rows, %d distinct, %d dropped of %d samples; want each stored once", rows, distinct, w.Dropped(), seq)
	}
}
