package drain

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/accesslog"
	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/rfc5424"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// benchLines is the router lines per benchmark operation: 4 s of the local router's
// ~13k requests/s.
const benchLines = 50_000

// BenchmarkDrain measures router lines per second from the first byte sent to the last
// row committed in a real results database, on loopback: over HTTP as the syslog
// agent's HTTPS writer sends them (one message per request, 5 keep-alive connections)
// against a server that only reads the bodies (http-discard), and over one mutual-TLS
// connection with octet counting against the store path alone (store-only:
// StoreRouterBatch of the same rows, parsed beforehand, 5,000 per transaction). The
// goal is the local router's ~13k requests/s (BENCHMARKS.md).
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	store, err := resultsdb.Open(ctx, testpg.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	run, err := store.CreateRun(ctx, "bench", "spec.yml", "", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	seq := uint64(0)
	lines := func() [][]byte {
		msgs := make([][]byte, benchLines)
		for i := range msgs {
			msgs[i] = message(appGUID, "[RTR/0]", rtrLine(run.TraceTag, seq, appGUID))
			seq++
		}
		return msgs
	}
	receiver := func(b *testing.B) *Receiver {
		r, err := New(Config{HTTPAddr: "127.0.0.1:0", SyslogAddr: "127.0.0.1:0", User: user, Password: password,
			RunID: run.ID, TraceTag: run.TraceTag, Apps: map[string]string{appGUID: appName}, Store: store, TLS: mustPKI(b).server})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return r
	}
	until := func(b *testing.B, r *Receiver, n int64) {
		for r.Stored() < n {
			if c := r.Counters(); c.Dropped > 0 || c.Foreign > 0 || c.Unparseable > 0 {
				b.Fatalf("lines lost: %+v", c)
			}
			time.Sleep(time.Millisecond)
		}
	}
	report := func(b *testing.B, d time.Duration) {
		b.ReportMetric(float64(benchLines*b.N)/d.Seconds(), "lines/s")
	}

	// post sends msgs as the agent's HTTPS writer does: one POST each, 5 connections.
	post := func(b *testing.B, url string, msgs [][]byte) {
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 5, MaxIdleConnsPerHost: 5}}
		defer client.CloseIdleConnections()
		var wg sync.WaitGroup
		for w := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < len(msgs); j += 5 {
					resp, err := client.Post(url, "text/plain", bytes.NewReader(msgs[j]))
					if err != nil || resp.StatusCode != 200 {
						b.Errorf("post: %v %v", err, resp)
						return
					}
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
	}

	b.Run("http", func(b *testing.B) {
		r := receiver(b)
		url := "http://" + user + ":" + password + "@" + r.HTTPAddr() + "/"
		var total time.Duration
		for i := range b.N {
			msgs := lines()
			start := time.Now()
			post(b, url, msgs)
			until(b, r, int64((i+1)*benchLines))
			total += time.Since(start)
		}
		report(b, total)
	})

	// The peer of http: a server that reads each body and stores nothing, the floor
	// of one POST per line on this machine.
	b.Run("http-discard", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			io.Copy(io.Discard, req.Body)
		})}
		go srv.Serve(ln)
		defer srv.Close()
		var total time.Duration
		for range b.N {
			msgs := lines()
			start := time.Now()
			post(b, "http://"+ln.Addr().String()+"/", msgs)
			total += time.Since(start)
		}
		report(b, total)
	})

	b.Run("tls", func(b *testing.B) {
		r := receiver(b)
		conn := dialSyslog(b, r)
		defer conn.Close()
		var total time.Duration
		for i := range b.N {
			var stream []byte
			for _, m := range lines() {
				stream = rfc5424.AppendFrame(stream, m)
			}
			start := time.Now()
			if _, err := conn.Write(stream); err != nil {
				b.Fatal(err)
			}
			until(b, r, int64((i+1)*benchLines))
			total += time.Since(start)
		}
		report(b, total)
	})

	b.Run("store-only", func(b *testing.B) {
		pull := &resultsdb.LogPull{RunID: run.ID, Source: "bench-store"}
		pull.Cursor = []byte(`{}`)
		var total time.Duration
		for range b.N {
			rows := make([]resultsdb.RouterRequest, 0, benchLines)
			for _, m := range lines() {
				msg, _ := rfc5424.Parse(m)
				rec, err := accesslog.ParseGorouter(msg.Msg)
				if err != nil {
					b.Fatal(err)
				}
				row, _ := routerlogs.RouterRequest(&rec, appGUID, appName, run.TraceTag)
				rows = append(rows, row)
			}
			start := time.Now()
			for len(rows) > 0 {
				n := min(len(rows), batchRows)
				if err := store.StoreRouterBatch(ctx, pull, rows[:n]); err != nil {
					b.Fatal(err)
				}
				rows = rows[n:]
			}
			total += time.Since(start)
		}
		report(b, total)
	})
}
