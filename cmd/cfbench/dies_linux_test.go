//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/drain"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
	"github.com/cf-benchmark/cf-benchmark/loadgen/worker"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// TestAPushedProgramWhoseListenerDiesExits: each program cf-benchmark pushes exits by
// itself with a failure naming its part when the part stops while it should serve, so
// that Cloud Foundry restarts it instead of leaving it running and serving nothing.
// The tunnel, the relay and the drain lose their listener (shut down under them, as the
// kernel does when it takes a socket away). The worker has no listener, and retries
// every database error: its only way to stop is its part stopping, which the test
// does by closing it behind the program's back.
func TestAPushedProgramWhoseListenerDiesExits(t *testing.T) {
	dsn := testpg.DSN(t)
	store, err := resultsdb.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	run, err := store.CreateRun(t.Context(), "dies", "spec.yml", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	auth, err := tunnel.NewAuth()
	if err != nil {
		t.Fatal(err)
	}
	key, err := tunnel.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		program, part string
		// start runs the program on port; it calls kill once the part runs.
		start func(ctx context.Context, port string, stderr *testlog.Buffer, kill func(addr string)) int
	}{
		{"tunnel", "tunnel server", func(ctx context.Context, port string, stderr *testlog.Buffer, kill func(string)) int {
			e := env(map[string]string{"PORT": port, "DATABASE_URL": dsn, "CFBENCH_TUNNEL_AUTH": auth, "CFBENCH_TUNNEL_KEY": key})
			return runTunnel(ctx, nil, e, stderr, func(s *tunnel.Server) { kill(s.Addr().String()) })
		}},
		{"relay", "relay", func(ctx context.Context, port string, stderr *testlog.Buffer, kill func(string)) int {
			e := env(map[string]string{"PORT": port, "DATABASE_URL": dsn, "CFBENCH_RELAY_TOKEN": token})
			return runRelay(ctx, nil, e, stderr, func(s *relay.Server) { kill(strings.TrimPrefix(s.URL(), "http://")) })
		}},
		{"drain", "drain", func(ctx context.Context, port string, stderr *testlog.Buffer, kill func(string)) int {
			e := env(map[string]string{"PORT": port, "DATABASE_URL": dsn, "CFBENCH_DRAIN_AUTH": auth, "CFBENCH_DRAIN_RUN": run.ID,
				"CFBENCH_DRAIN_APPS": `{"5f0c1c7e-0000-4000-8000-000000000001": "shop"}`})
			return runDrain(ctx, nil, e, stderr, func(r *drain.Receiver) { kill(r.HTTPAddr()) })
		}},
		{"worker", "worker", func(ctx context.Context, _ string, stderr *testlog.Buffer, _ func(string)) int {
			e := env(map[string]string{"DATABASE_URL": dsn, "TMPDIR": os.TempDir()})
			return runWorker(ctx, []string{"--app", "dies-gen"}, e, "host", stderr, func(w *worker.Worker) { w.Close() })
		}},
	} {
		t.Run(c.program, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel() // only when the test fails: the program must end by itself
			port, err := freeport.Loopback()
			if err != nil {
				t.Fatal(err)
			}
			kill := func(addr string) {
				if err := killListener(addr); err != nil {
					t.Error(err)
					cancel() // the program ends, and the test with it
				}
			}
			var stderr testlog.Buffer
			exited := make(chan int, 1)
			go func() { exited <- c.start(ctx, strconv.Itoa(port), &stderr, kill) }()
			want := "cfbench " + c.program + ": " + c.part + " stopped by itself"
			select {
			case code := <-exited:
				if code != 1 || !strings.Contains(stderr.String(), want) {
					t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr.String(), want)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("the program still runs 2 minutes after its %s stopped:\n%s", c.part, stderr.String())
			}
		})
	}
}

// killListener shuts down the listening socket of this process on addr's port under its
// owner: its Accept fails, as when the kernel takes the socket away.
func killListener(addr string) error {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return fmt.Errorf("listener address %q: %w", addr, err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if on, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on != 1 {
			continue
		}
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			continue
		}
		switch a := sa.(type) {
		case *syscall.SockaddrInet4:
			if a.Port != port {
				continue
			}
		case *syscall.SockaddrInet6:
			if a.Port != port {
				continue
			}
		default:
			continue
		}
		if err := syscall.Shutdown(fd, syscall.SHUT_RDWR); err != nil {
			return fmt.Errorf("shut down the listener on port %d: %w", port, err)
		}
		return nil
	}
	return fmt.Errorf("no listener of this process on port %d", port)
}
