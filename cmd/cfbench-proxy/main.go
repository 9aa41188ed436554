// Command cfbench-proxy is the "proxy plateau" sample app (package limitproxy): a
// reverse proxy that forwards to one upstream at most so many requests at once or per
// second, on $PORT as a CF app, or on --listen. Flags win over the environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/apps/limitproxy"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

const usage = `Usage: cfbench-proxy --upstream URL [--max-concurrent N] [--max-rps R] [--max-wait D] [--connect-to HOST:PORT] [--listen ADDR]

Environment (flags win): UPSTREAM_URL, MAX_CONCURRENT, MAX_RPS, MAX_WAIT, CONNECT_TO, PORT.

Example: cfbench-proxy --listen 127.0.0.1:18081 --upstream http://127.0.0.1:18080 --max-concurrent 8
`

func main() {
	cli.Main(func(ctx context.Context) int { return run(ctx, os.Args[1:], os.Getenv, os.Stderr) })
}

// run serves until ctx ends and returns the exit code: 2 for a usage error, 1 when
// the proxy cannot listen or serve.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, listen, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "cfbench-proxy:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	cfg.Logger = logger
	p, err := limitproxy.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "cfbench-proxy:", err)
		return 2
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", listen)
	if err != nil {
		fmt.Fprintln(stderr, "cfbench-proxy:", err)
		return 1
	}
	// No body or write deadline: requests wait for a slot (--max-wait) and stream their
	// bodies to the upstream. Idle connections are closed, after longer than gorouter
	// keeps them itself.
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	logger.Info("proxy listening", "addr", ln.Addr().String(), "upstream", cfg.Upstream.String(),
		"max_concurrent", cfg.MaxConcurrent, "max_rps", cfg.MaxRate, "max_wait", cfg.MaxWait.String())
	// Until ctx ends; a proxy whose listener died ends the program, and CF restarts it.
	if err := lifecycle.NewGroup(lifecycle.Member{Name: "proxy", Part: httpserver.New(srv, ln, 5*time.Second)}).Run(ctx); err != nil {
		fmt.Fprintln(stderr, "cfbench-proxy:", err)
		return 1
	}
	return 0
}

// parse reads the configuration from the environment, then the flags.
func parse(args []string, getenv func(string) string, stderr io.Writer) (limitproxy.Config, string, error) {
	var cfg limitproxy.Config
	fs := flag.NewFlagSet("cfbench-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	upstream := fs.String("upstream", getenv("UPSTREAM_URL"), "upstream URL: scheme, host, optional base path")
	fs.StringVar(&cfg.ConnectTo, "connect-to", getenv("CONNECT_TO"), "host:port to dial instead of the upstream's host (the Host header stays the upstream's)")
	listen := fs.String("listen", "", "address to listen on (default 0.0.0.0:$PORT, else 127.0.0.1:8080)")
	var err error
	if cfg.MaxConcurrent, err = envInt(getenv, "MAX_CONCURRENT"); err != nil {
		return cfg, "", err
	}
	if cfg.MaxRate, err = envFloat(getenv, "MAX_RPS"); err != nil {
		return cfg, "", err
	}
	if cfg.MaxWait, err = envDuration(getenv, "MAX_WAIT"); err != nil {
		return cfg, "", err
	}
	fs.IntVar(&cfg.MaxConcurrent, "max-concurrent", cfg.MaxConcurrent, "requests forwarded at once (0: no cap)")
	fs.Float64Var(&cfg.MaxRate, "max-rps", cfg.MaxRate, "requests forwarded per second, evenly spaced (0: no cap)")
	fs.DurationVar(&cfg.MaxWait, "max-wait", cfg.MaxWait, "longest wait for a turn before 503 (0: 30s)")
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *upstream == "" {
		return cfg, "", errors.New("no upstream: set --upstream or UPSTREAM_URL")
	}
	u, err := url.Parse(*upstream)
	if err != nil {
		return cfg, "", fmt.Errorf("upstream: %w", err)
	}
	cfg.Upstream = u
	if *listen == "" {
		if *listen, err = cli.ListenAddr(getenv("PORT"), "127.0.0.1:8080"); err != nil {
			return cfg, "", err
		}
	}
	return cfg, *listen, nil
}

func envInt(getenv func(string) string, name string) (int, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func envFloat(getenv func(string) string, name string) (float64, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

func envDuration(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
