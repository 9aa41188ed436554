package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/testlog"
)

const token = "relay-token-0123456789"

func TestRelayMissingConfigurationIsOneClearLine(t *testing.T) {
	t.Parallel()
	good := map[string]string{"PORT": "8080", "CFBENCH_RELAY_TOKEN": token, "DATABASE_URL": "postgres://u:p@db.internal:5432/r"}
	for name, c := range map[string]struct {
		unset, set, value string
		args              []string
		want              string
	}{
		"no port":       {unset: "PORT", want: "no port"},
		"no token":      {unset: "CFBENCH_RELAY_TOKEN", want: "CFBENCH_RELAY_TOKEN must be set"},
		"a short token": {set: "CFBENCH_RELAY_TOKEN", value: "short", want: "at least 16 characters"},
		"no database":   {unset: "DATABASE_URL", want: "DATABASE_URL"},
		"no conns":      {args: []string{"--conns", "0"}, want: "--conns 0"},
	} {
		t.Run(name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range good {
				e[k] = v
			}
			delete(e, c.unset)
			if c.set != "" {
				e[c.set] = c.value
			}
			var stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if code := runRelay(ctx, c.args, env(e), &stderr, nil); code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), c.want)
			}
		})
	}
}

// TestServesUntilStopped: the relay answers with the token and stops on the signal.
func TestRelayServesUntilStopped(t *testing.T) {
	dsn := testpg.DSN(t) // here: under -short it skips, which only the test's goroutine may
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stderr testlog.Buffer
	up := make(chan *relay.Server, 1)
	done := make(chan int, 1)
	go func() {
		done <- runRelay(ctx, []string{"--port", strconv.Itoa(port), "--conns", "2"},
			env(map[string]string{"CFBENCH_RELAY_TOKEN": token, "DATABASE_URL": dsn}), &stderr, func(s *relay.Server) { up <- s })
	}()
	select {
	case <-up:
	case code := <-done:
		t.Fatalf("exited %d before serving: %s", code, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("not serving after 2 minutes: %s", stderr.String())
	}
	c, err := relay.NewClient("http://127.0.0.1:"+strconv.Itoa(port), token, "")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := c.Assignment(ctx, "nothing-runs"); err != nil || a != nil {
		t.Errorf("Assignment = %v, %v; want no run", a, err)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the signal, want 0: %s", code, stderr.String())
	}
}
