package capacity

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/relay"
	"github.com/cf-benchmark/cf-benchmark/internal/freeport"
	"github.com/cf-benchmark/cf-benchmark/internal/osproc"
	"github.com/cf-benchmark/cf-benchmark/internal/procstat"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// runningRelay is the simulation's relay, in this process or in one of its own.
type runningRelay struct {
	url   string
	stats func(context.Context) (relay.Stats, error)
	cores func() float64 // CPU over its life; 0 in this process
}

// startRelay starts the relay on dsn as cfg says; stop ends it.
func startRelay(ctx context.Context, cfg Config, dsn string) (*runningRelay, func() error, error) {
	if cfg.RelayBin == "" {
		store, err := resultsdb.OpenPool(ctx, dsn, cfg.RelayConns)
		if err != nil {
			return nil, nil, err
		}
		srv := relay.New(relay.Config{Store: store, Token: token, Logger: cfg.Logger})
		if err := srv.Start(ctx); err != nil {
			store.Close()
			return nil, nil, err
		}
		stop := func() error { err := srv.Close(); store.Close(); return err }
		return &runningRelay{url: srv.URL(), stats: func(context.Context) (relay.Stats, error) { return srv.Stats(), nil },
			cores: func() float64 { return 0 }}, stop, nil
	}
	port, err := freeport.Loopback()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(cfg.RelayBin, "relay", "--port", strconv.Itoa(port), "--conns", strconv.Itoa(cfg.RelayConns))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "CFBENCH_RELAY_TOKEN="+token, "VCAP_SERVICES=")
	cmd.Stderr = os.Stderr // its warnings, as the instances' go to the logger
	cmd.SysProcAttr = osproc.DieWithParent(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the relay: %w", err)
	}
	began := time.Now()
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	c, err := relay.NewClient(url, token, "")
	if err != nil {
		stop()
		return nil, nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err = c.Stats(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, nil, fmt.Errorf("the relay did not answer: %w", err)
		}
	}
	pid := cmd.Process.Pid
	return &runningRelay{url: url, stats: c.Stats, cores: func() float64 {
		st, err := procstat.Read(pid)
		if err != nil {
			return 0
		}
		return float64(st.Ticks) / 100 / time.Since(began).Seconds()
	}}, stop, nil
}
