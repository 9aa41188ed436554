package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
)

// TestTheStoreOutlivesRestartsOfTheTunnelApp: the platform restarts the tunnel app
// (its instance crashes and Diego starts another, on another port, behind the same
// route; the app keeps its key, so the fingerprint stays). The run's tunnel client,
// which reaches the app through the router by its route, reconnects by itself; the
// store's calls that failed while it was away are retryable (Store.Retryable, as the
// runner's db retries them), and every write made before, between and after the
// restarts is there.
func TestTheStoreOutlivesRestartsOfTheTunnelApp(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.DSN(t)
	remote, err := tunnel.DBRemote(dsn)
	if err != nil {
		t.Fatal(err)
	}
	key, err := tunnel.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	auth, err := tunnel.NewAuth()
	if err != nil {
		t.Fatal(err)
	}
	// instance starts the tunnel app's instance on a port of its own.
	instance := func() (*tunnel.Server, *url.URL) {
		s, err := tunnel.NewServer(tunnel.ServerConfig{Addr: "127.0.0.1:0", Remote: remote, Auth: auth, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(); s.Wait() })
		return s, &url.URL{Scheme: "http", Host: s.Addr().String()}
	}
	srv, at := instance()
	var backend atomic.Pointer[url.URL] // the route's one backend, as the router knows it
	backend.Store(at)
	const route = "cfbench-tunnel.apps.localhost"
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != route {
			http.Error(w, "404 Not Found: Requested route ('"+r.Host+"') does not exist.", http.StatusNotFound)
			return
		}
		to := backend.Load()
		(&httputil.ReverseProxy{Rewrite: func(p *httputil.ProxyRequest) { p.SetURL(to) }}).ServeHTTP(w, r)
	}))
	defer router.Close()
	fp, err := tunnel.KeyFingerprint(key)
	if err != nil {
		t.Fatal(err)
	}
	store, closeStore, err := OpenThroughTunnel(ctx, tunnel.ClientConfig{Server: router.URL, Host: route, Auth: auth, Fingerprint: fp,
		MinRetry: 50 * time.Millisecond, MaxRetry: 500 * time.Millisecond, Timeout: 10 * time.Second}, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()

	// write creates a run, retrying as the runner does while the database is away.
	write := func(name string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for failures := 0; ; failures++ {
			run, err := store.CreateRun(ctx, name, "t.yml", "", time.Now())
			if err == nil {
				return run.ID
			}
			if !store.Retryable(ctx, err) {
				t.Fatalf("%s: %v is not retryable", name, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still failing after a minute: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	ids := []string{write("before")}
	for i := range 3 {
		srv.Close() // the instance crashes: its tunnels drop
		if err := srv.Wait(); err != nil {
			t.Fatal(err)
		}
		restarted := make(chan struct{})
		go func() { // Diego starts another a moment later, on another port
			defer close(restarted)
			time.Sleep(300 * time.Millisecond)
			var next *url.URL
			srv, next = instance()
			backend.Store(next)
		}()
		ids = append(ids, write(fmt.Sprintf("during restart %d", i)))
		<-restarted
		ids = append(ids, write(fmt.Sprintf("after restart %d", i)))
	}
	for _, id := range ids {
		if _, err := store.GetRun(ctx, id); err != nil {
			t.Errorf("run %s written through the tunnel: %v", id, err)
		}
	}
}
