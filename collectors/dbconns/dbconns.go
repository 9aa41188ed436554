// Package dbconns watches the connections to the apps' database server during a run: a
// database plan capped at 100 connections capped a classic study's throughput while
// every app looked idle. It reads pg_stat_activity with the service binding's own
// credentials, so it works wherever the run can reach the database (the local
// foundation's postgres service; on a real Cloud Foundry usually not, and the run says
// so).
package dbconns

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Reading is the server's connections at one moment.
type Reading struct {
	// InUse counts client connections to the server (all databases, all users),
	// ToDatabase those to the connection's own database, MaxConnections the limit.
	InUse, ToDatabase, MaxConnections int
}

// readSQL counts client backends only: the server's own processes (checkpointer,
// walwriter, autovacuum) hold no connection slot. A user that is not a superuser sees
// every backend's row, without its query, which is all this needs.
const readSQL = `
SELECT count(*) FILTER (WHERE backend_type = 'client backend'),
       count(*) FILTER (WHERE backend_type = 'client backend' AND datname = current_database()),
       current_setting('max_connections')::int
FROM pg_stat_activity`

// Read takes one reading over conn; conn's own connection counts among those in use.
func Read(ctx context.Context, conn *pgx.Conn) (Reading, error) {
	var r Reading
	if err := conn.QueryRow(ctx, readSQL).Scan(&r.InUse, &r.ToDatabase, &r.MaxConnections); err != nil {
		return r, fmt.Errorf("read the database's connections: %w", err)
	}
	return r, nil
}

// Config wires a Poller.
type Config struct {
	// DSN reaches the apps' database with the binding's credentials; Service names the
	// service instance, for the rows.
	DSN, Service string
	Store        *resultsdb.Store
	RunID        string
	Interval     time.Duration // default 5 s
	Logger       *slog.Logger
}

// Poller reads the connections of the apps' database server on an interval and stores
// each reading. It follows the lifecycle of package lifecycle. Each reading opens a
// connection of its own (counted among those in use); a failed reading is logged and
// taken again at the next tick.
type Poller struct {
	cfg  Config
	life lifecycle.State
}

var _ lifecycle.Part = (*Poller)(nil)

// New returns a poller that is not started.
func New(cfg Config) *Poller {
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{cfg: cfg}
}

// Start reads at once and then every Interval, in the background, until Close or the
// end of ctx. It fails only when the poller was started or closed before.
func (p *Poller) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("database connections poller: %w", err)
	}
	p.life.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if err := p.poll(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("read the apps' database connections", "service", p.cfg.Service, "err", err)
		}
	})
	return nil
}

// poll takes one reading over a connection of its own, closed after it: a reading
// every few seconds does not need a connection held for the whole run.
func (p *Poller) poll(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.cfg.DSN)
	if err != nil {
		return fmt.Errorf("connect to the apps' database: %w", err)
	}
	r, err := Read(ctx, conn)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	return p.cfg.Store.AddDBConnections(ctx, resultsdb.DBConnections{RunID: p.cfg.RunID, At: time.Now(), Service: p.cfg.Service,
		InUse: r.InUse, ToDatabase: r.ToDatabase, MaxConnections: r.MaxConnections})
}

// Close stops polling and waits for a reading in progress. It returns nil: failed
// readings are logged, not returned.
func (p *Poller) Close() error { return p.life.Close() }

// Wait blocks until the poller has stopped (Close, or the end of Start's context).
func (p *Poller) Wait() error { return p.life.Wait() }

// Run is Start followed by Wait.
func (p *Poller) Run(ctx context.Context) error { return lifecycle.Run(ctx, p) }
