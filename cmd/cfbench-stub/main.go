// Command cfbench-stub serves the stub target (see package stub) on $PORT, as a CF app,
// or on --listen.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/cf-benchmark/cf-benchmark/apps/stub"
	"github.com/cf-benchmark/cf-benchmark/internal/cli"
	"github.com/cf-benchmark/cf-benchmark/internal/httpserver"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

func main() {
	fs := flag.NewFlagSet("cfbench-stub", flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on (default 0.0.0.0:$PORT, else 127.0.0.1:8080)")
	var cfg stub.Config
	fs.DurationVar(&cfg.Delay, "delay", 0, "fixed latency added to every response")
	fs.DurationVar(&cfg.Dither, "dither", 0, "random extra latency, uniform in 0..dither")
	fs.DurationVar(&cfg.CPU, "cpu", 0, "CPU time every response costs (on the thread's CPU clock, so a busy cell makes it slower)")
	fs.IntVar(&cfg.Size, "size", 100, "payload bytes of /bytes")
	fs.DurationVar(&cfg.FreezeAfter, "freeze-after", 0, "with --freeze-for: when the freeze begins, counted from the first request served")
	fs.DurationVar(&cfg.FreezeFor, "freeze-for", 0, "freeze once for this long: every request but /healthz is held, then answered (0: never)")
	fs.IntVar(&cfg.BurnCores, "burn-cores", 0, "a noisy neighbour: keep this many threads busy, from --burn-after after the first request served (0: never)")
	fs.DurationVar(&cfg.BurnAfter, "burn-after", 0, "with --burn-cores: when the burn begins, counted from the first request served")
	fs.DurationVar(&cfg.BurnFor, "burn-for", 0, "with --burn-cores: how long it lasts (0: until the process ends)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: cfbench-stub [--listen ADDR] [--delay D] [--dither D] [--size N] [--cpu D] [--freeze-after D --freeze-for D]\n"+
			"                    [--burn-cores N --burn-after D --burn-for D]\n\n"+
			"Example: cfbench-stub --listen 127.0.0.1:18080 --delay 2ms --dither 1ms\n"+
			"         cfbench-stub --listen 127.0.0.1:18080 --freeze-after 4s --freeze-for 2s   answers nothing for 2 s, 4 s into the load\n"+
			"         cfbench-stub --listen 127.0.0.1:18080 --burn-cores 2 --burn-for 30s         spins 2 cores for 30 s from its first request")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if cfg.FreezeAfter < 0 || cfg.FreezeFor < 0 || cfg.CPU < 0 || cfg.BurnCores < 0 || cfg.BurnAfter < 0 || cfg.BurnFor < 0 {
		fmt.Fprintln(os.Stderr, "cfbench-stub: --cpu, --freeze-after, --freeze-for, --burn-cores, --burn-after and --burn-for must not be negative")
		os.Exit(2)
	}
	if *listen == "" {
		var err error
		if *listen, err = cli.ListenAddr(os.Getenv("PORT"), "127.0.0.1:8080"); err != nil {
			fmt.Fprintln(os.Stderr, "cfbench-stub:", err)
			os.Exit(2)
		}
	}
	cli.Main(func(ctx context.Context) int {
		ln, err := new(net.ListenConfig).Listen(ctx, "tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cfbench-stub:", err)
			return 1
		}
		// No body or write deadline: --freeze-for holds answers on purpose. Idle
		// connections are closed, after longer than gorouter keeps them itself.
		srv := &http.Server{Handler: stub.Handler(cfg), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		slog.Info("stub listening", "addr", *listen)
		// Until SIGTERM; a stub whose listener died ends the program, and CF restarts it.
		if err := lifecycle.NewGroup(lifecycle.Member{Name: "stub", Part: httpserver.New(srv, ln, 5*time.Second)}).Run(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "cfbench-stub:", err)
			return 1
		}
		return 0
	})
}
