package foundation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/pgserver"
	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
)

// Restart policy of the services' Postgres: after it exits on its own, up to
// pgRestarts attempts to start it again, spaced by the shared backoff; a server that
// then runs for pgStableAfter earns a fresh set of attempts.
const (
	pgRestarts    = 6
	pgStableAfter = time.Minute
)

// servicesPG keeps the services' Postgres running, as a Cloud Foundry's database
// service comes back after its server dies: a server that exits on its own (killed,
// crashed) is started again on the same port with the same password, so bound
// credentials stay valid and clients reconnect. Each restart is logged. It follows the
// lifecycle of package lifecycle; it stops on its own (Wait's error) only when
// pgRestarts attempts brought back no server that stayed up for pgStableAfter.
type servicesPG struct {
	opts  pgserver.Options
	log   *slog.Logger
	retry backoff.Backoff // between attempts; its failures are the attempts in a row

	mu   sync.Mutex
	cur  *pgserver.Server // the server running now
	life lifecycle.State
}

var _ lifecycle.Part = (*servicesPG)(nil)

func newServicesPG(opts pgserver.Options, log *slog.Logger) *servicesPG {
	return &servicesPG{opts: opts, log: log, retry: backoff.Backoff{First: 250 * time.Millisecond, Max: 8 * time.Second}}
}

// Start starts (or attaches to) the server and returns once it accepts connections.
func (p *servicesPG) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("services' postgres: %w", err)
	}
	srv := pgserver.New(p.opts)
	if err := srv.Start(ctx); err != nil {
		p.life.Stopped(err)
		return err
	}
	p.cur = srv
	go p.keep(ctx, srv)
	return nil
}

// Wait blocks until the server is stopped: nil after Close or the end of Start's ctx,
// else why it could not be brought back.
func (p *servicesPG) Wait() error { return p.life.Wait() }

// Close stops the server (if this process started it) and returns what Wait returns.
func (p *servicesPG) Close() error { return p.life.Close() }

// Run is Start followed by Wait.
func (p *servicesPG) Run(ctx context.Context) error { return lifecycle.Run(ctx, p) }

// server is the server running now (a new one after each restart).
func (p *servicesPG) server() *pgserver.Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// keep watches srv and starts a new server whenever the running one exits on its own.
// Every server lives on one context that ends when the part is asked to stop.
func (p *servicesPG) keep(ctx context.Context, srv *pgserver.Server) {
	life, cancel := context.WithCancel(ctx)
	defer cancel()
	stopping := p.life.Stopping()
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-life.Done():
		}
	}()
	for {
		exited := make(chan error, 1)
		go func() { exited <- srv.Wait() }()
		up := time.Now()
		var err error
		select {
		case <-life.Done():
			p.life.Stopped(srv.Close())
			return
		case err = <-exited:
		}
		if life.Err() != nil { // asked to stop while it exited
			p.life.Stopped(err)
			return
		}
		if err == nil { // a server only attached to stopped
			err = errors.New("exited")
		}
		if time.Since(up) >= pgStableAfter {
			p.retry.Reset()
		}
		p.log.Error("the services' postgres exited; starting it again", "pid", srv.PID(), "port", srv.Port(), "err", err)
		if srv, err = p.restart(life); srv == nil {
			p.life.Stopped(err)
			return
		}
	}
}

// restart starts a new server on life, with backoff, until one runs, life ends (nil,
// nil) or the attempts in a row are used up (nil and the last failure).
func (p *servicesPG) restart(life context.Context) (*pgserver.Server, error) {
	var last error
	for p.retry.Failures() < pgRestarts {
		if !p.retry.Wait(life) {
			return nil, nil
		}
		srv := pgserver.New(p.opts)
		err := srv.Start(life)
		if err == nil {
			p.mu.Lock()
			p.cur = srv
			p.mu.Unlock()
			p.log.Warn("the services' postgres is back", "pid", srv.PID(), "port", srv.Port(), "attempt", p.retry.Failures())
			return srv, nil
		}
		if life.Err() != nil {
			return nil, nil
		}
		last = err
		p.log.Warn("the services' postgres did not start again; retrying", "attempt", p.retry.Failures(), "of", pgRestarts, "err", err)
	}
	return nil, fmt.Errorf("exited and did not start again in %d attempts: %w", pgRestarts, last)
}
