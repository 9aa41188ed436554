package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string
		env        map[string]string
		listen     string
		upstream   string
		concurrent int
		rate       float64
		wait       time.Duration
		connectTo  string
		err        string
	}{
		{name: "environment, as pushed", env: map[string]string{"UPSTREAM_URL": "http://app.apps.internal:8080", "MAX_CONCURRENT": "8",
			"MAX_RPS": "400", "MAX_WAIT": "2s", "CONNECT_TO": "10.0.0.1:80", "PORT": "8081"},
			listen: "0.0.0.0:8081", upstream: "http://app.apps.internal:8080", concurrent: 8, rate: 400, wait: 2 * time.Second, connectTo: "10.0.0.1:80"},
		{name: "flags win", args: []string{"--upstream", "http://b", "--max-concurrent", "2", "--max-rps", "0.5", "--max-wait", "1ms", "--listen", "127.0.0.1:9"},
			env:    map[string]string{"UPSTREAM_URL": "http://a", "MAX_CONCURRENT": "8", "MAX_RPS": "400", "PORT": "8081"},
			listen: "127.0.0.1:9", upstream: "http://b", concurrent: 2, rate: 0.5, wait: time.Millisecond},
		{name: "no PORT", args: []string{"--upstream", "http://a"}, listen: "127.0.0.1:8080", upstream: "http://a"},
		{name: "no upstream", err: "no upstream"},
		{name: "bad MAX_CONCURRENT", env: map[string]string{"UPSTREAM_URL": "http://a", "MAX_CONCURRENT": "many"}, err: "MAX_CONCURRENT"},
		{name: "bad MAX_RPS", env: map[string]string{"UPSTREAM_URL": "http://a", "MAX_RPS": "fast"}, err: "MAX_RPS"},
		{name: "bad MAX_WAIT", env: map[string]string{"UPSTREAM_URL": "http://a", "MAX_WAIT": "10"}, err: "MAX_WAIT"},
		{name: "bad flag", args: []string{"--max-concurrent", "x"}, err: "invalid value"},
		{name: "stray argument", args: []string{"--upstream", "http://a", "extra"}, err: "unexpected arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, listen, err := parse(c.args, env(c.env), &stderr)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if listen != c.listen || cfg.Upstream.String() != c.upstream || cfg.MaxConcurrent != c.concurrent ||
				cfg.MaxRate != c.rate || cfg.MaxWait != c.wait || cfg.ConnectTo != c.connectTo {
				t.Errorf("got listen %s, %+v", listen, cfg)
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--upstream", "ftp://a"}, {"--upstream", "http://a", "--max-rps", "-1"}} {
		var stderr strings.Builder
		if code := run(context.Background(), args, env(nil), &stderr); code != 2 || !strings.Contains(stderr.String(), "cfbench-proxy:") {
			t.Errorf("run %q: exit %d, stderr %q; want 2 and a message", args, code, stderr.String())
		}
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"--help"}, env(nil), &stderr); code != 0 || !strings.Contains(stderr.String(), "Example: cfbench-proxy") {
		t.Errorf("--help: exit %d, stderr %q; want 0 and the usage with an example", code, stderr.String())
	}
}

// TestRunServes runs the command on a loopback port in front of an upstream until
// its context ends.
func TestRunServes(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "up "+r.URL.Path) }))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		done <- run(ctx, []string{"--listen", addr, "--upstream", up.URL, "--max-concurrent", "2"}, env(nil), &stderr)
	}()
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := testhttp.Client.Get("http://" + addr + "/hello")
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the proxy never answered: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if body != "up /hello" {
		t.Errorf("body %q, want the upstream's", body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the context ended, want 0", code)
	}
}
