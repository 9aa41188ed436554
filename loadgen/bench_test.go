package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// benchServerEnv makes the test binary a target for the benchmarks instead: it serves
// on 127.0.0.1 in its own process, so that the benchmark's CPU time is the generator's
// alone.
const benchServerEnv = "LOADGEN_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		benchServerMain()
		return
	}
	os.Exit(m.Run())
}

// benchResponse is what nginx answers for the bench harness's 100-byte file.
var benchResponse = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 22 Nov 2026 19:22:00 GMT\r\n" +
	"Content-Type: text/plain\r\nContent-Length: 100\r\nLast-Modified: Sun, 22 Nov 2026 19:00:00 GMT\r\n" +
	"Connection: keep-alive\r\nETag: \"6740d7a0-64\"\r\nAccept-Ranges: bytes\r\n\r\n" + strings.Repeat("x", 99) + "\n"

// benchServerMain answers every request head (requests without bodies) with
// benchResponse, prints its address and serves until stdin closes.
func benchServerMain() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 16<<10)
			var out []byte
			matched := 0
			for {
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				out = out[:0]
				for _, b := range buf[:n] {
					switch {
					case b == "\r\n\r\n"[matched]:
						matched++
					case b == '\r':
						matched = 1
					default:
						matched = 0
					}
					if matched == 4 {
						matched = 0
						out = append(out, benchResponse...)
					}
				}
				if len(out) > 0 {
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}
		}()
	}
}

// benchServer starts the target process and returns its address.
func benchServer(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1", "GOMAXPROCS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return strings.TrimSpace(addr)
}

// countingRecorder stands in for the results DB writer: a lock per sample.
type countingRecorder struct {
	mu     sync.Mutex
	n      int
	lag    int64 // sum of the send lags, µs
	failed atomic.Int64
}

func (r *countingRecorder) Add(s sample.Sample) {
	r.mu.Lock()
	r.n++
	r.lag += int64(s.StartDelayUS)
	r.mu.Unlock()
	if s.Failed() {
		r.failed.Add(1)
	}
}

// reportCPU reports CPU per request from cpu, the process CPU time spent on b.N requests.
func reportCPU(b *testing.B, cpu time.Duration, rec *countingRecorder) {
	if f := rec.failed.Load(); f > 0 {
		b.Fatalf("%d of %d requests failed", f, b.N)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/req")
	b.ReportMetric(float64(b.N)/cpu.Seconds(), "req/cpu-s")
}

func benchConfig(b *testing.B, addr string) Config {
	u, err := url.Parse("http://" + addr)
	if err != nil {
		b.Fatal(err)
	}
	return Config{Target: u, Requests: []Request{{Method: "GET", Path: "/", Weight: 1}}, KeepAlive: true,
		Timeout: 10 * time.Second, TraceTag: 1, WorkerID: 1, Epoch: time.Now()}
}

// BenchmarkClosedLoop runs 64 users against a local target, as the load-generator
// benchmark (tools/bench) does, with each client. cpu-ns/req is the generator process's CPU time per request.
func BenchmarkClosedLoop(b *testing.B) {
	addr := benchServer(b)
	for _, client := range clients {
		b.Run(client, func(b *testing.B) {
			cfg := benchConfig(b, addr)
			cfg.Model, cfg.Users, cfg.Count = Count, 64, 64*8
			rec := &countingRecorder{}
			g, err := New(cfg, rec)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			useClient(b, g, client)
			ctx := context.Background()
			g.Run(ctx, Phase{End: time.Now().Add(time.Minute)}) // connect every user
			g.cfg.Count = b.N
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime(b)
			g.Run(ctx, Phase{End: time.Now().Add(time.Hour)})
			cpu = cpuTime(b) - cpu
			b.StopTimer()
			reportCPU(b, cpu, rec)
		})
	}
}

// BenchmarkOpenLoop sends at a constant rate that the target keeps up with; ns/op is
// meaningless (the rate sets it), cpu-ns/req is what counts.
func BenchmarkOpenLoop(b *testing.B) {
	addr := benchServer(b)
	for _, client := range clients {
		b.Run(client, func(b *testing.B) { benchOpenLoop(b, addr, client, 0) })
	}
}

// BenchmarkOpenLoopTick is BenchmarkOpenLoop's h1 run with the open loop's clock
// ticking every Config.Tick (1ns: on every slot): its CPU per request against its send
// lag.
func BenchmarkOpenLoopTick(b *testing.B) {
	addr := benchServer(b)
	for _, d := range []time.Duration{time.Nanosecond, 100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond, time.Millisecond} {
		b.Run(d.String(), func(b *testing.B) { benchOpenLoop(b, addr, "h1", d) })
	}
}

// benchOpenLoop sends b.N requests at 20,000 req/s with the named client and tick (0:
// the default).
func benchOpenLoop(b *testing.B, addr, client string, tick time.Duration) {
	const rate = 20000.0
	cfg := benchConfig(b, addr)
	cfg.Model, cfg.Rate, cfg.MaxInFlight, cfg.Tick = Open, rate, 64, tick
	rec := &countingRecorder{}
	g, err := New(cfg, rec)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	useClient(b, g, client)
	ctx := context.Background()
	start := time.Now()
	g.Run(ctx, Phase{Start: start, End: start.Add(100 * time.Millisecond)}) // spawn senders
	b.ReportAllocs()
	b.ResetTimer()
	sent := g.Sent()
	cpu := cpuTime(b)
	start = time.Now()
	g.Run(ctx, Phase{Start: start, End: start.Add(time.Duration(float64(b.N) / rate * float64(time.Second)))})
	cpu = cpuTime(b) - cpu
	b.StopTimer()
	if n := g.Sent() - sent; n+g.Missed() < uint64(b.N)-1 {
		b.Fatalf("sent %d and missed %d of %d", n, g.Missed(), b.N)
	}
	reportCPU(b, cpu, rec)
	b.ReportMetric(float64(g.Missed()), "missed")
	b.ReportMetric(float64(rec.lag)/float64(rec.n), "lag-mean-µs")
}

// lagRecorder keeps each sample's send lag (start delay), in µs.
type lagRecorder struct {
	mu  sync.Mutex
	lag []float64
}

func (r *lagRecorder) Add(s sample.Sample) {
	r.mu.Lock()
	r.lag = append(r.lag, float64(s.StartDelayUS))
	r.mu.Unlock()
}

// BenchmarkSendLag measures how late an open loop of 200 req/s sends against its
// schedule: the generator (its scheduler waits precisely, pace_linux.go) against a plain
// Go timer keeping the same schedule, the peer it replaced. One op is one request.
func BenchmarkSendLag(b *testing.B) {
	const rate = 200.0
	interval := time.Duration(float64(time.Second) / rate)
	report := func(b *testing.B, lag []float64) {
		if len(lag) == 0 {
			b.Fatal("no requests")
		}
		slices.Sort(lag)
		var sum float64
		for _, l := range lag {
			sum += l
		}
		b.ReportMetric(sum/float64(len(lag)), "lag-mean-µs")
		b.ReportMetric(lag[len(lag)*99/100], "lag-p99-µs")
	}
	b.Run("generator", func(b *testing.B) {
		cfg := benchConfig(b, benchServer(b))
		cfg.Model, cfg.Rate, cfg.MaxInFlight = Open, rate, 8
		rec := &lagRecorder{}
		g, err := New(cfg, rec)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		start := time.Now().Add(10 * time.Millisecond)
		g.Run(context.Background(), Phase{Start: start, End: start.Add(time.Duration(b.N) * interval)})
		report(b, rec.lag)
	})
	b.Run("go-timer", func(b *testing.B) {
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		lag := make([]float64, 0, b.N)
		slot := time.Now().Add(10 * time.Millisecond)
		for range b.N {
			t.Reset(time.Until(slot))
			<-t.C
			lag = append(lag, float64(time.Since(slot).Microseconds()))
			slot = slot.Add(interval)
		}
		report(b, lag)
	})
}
