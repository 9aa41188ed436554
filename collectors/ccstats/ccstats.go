// Package ccstats polls Cloud Controller v3 process stats (GET
// /v3/processes/:guid/stats) for the apps and generators of a run and stores one row per
// instance per poll in the results DB's container_metrics table.
//
// CC's usage figures are Diego's container metrics as log-cache last saw them: up to
// 15 s old plus lag, and usage.time is when CC answered, not when they were sampled. So
// the poller records when it fetched them, keeps polling on its interval whatever the
// answers, and records an instance without usage as such (nulls), never as zeros.
package ccstats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// StatsClient reads a process's stats. go-cfclient's Processes client implements it;
// it is called from one goroutine at a time.
type StatsClient interface {
	GetStats(ctx context.Context, processGUID string) (*resource.ProcessStats, error)
}

// Target is one process to poll.
type Target struct {
	AppName, AppGUID, ProcessGUID, ProcessType string
}

// Config wires a Poller.
type Config struct {
	Client   StatsClient
	Store    *resultsdb.Store
	RunID    string
	Interval time.Duration // default 15 s, Diego's metrics interval
	Clock    func() time.Time
	Logger   *slog.Logger
}

// Poller polls its targets on an interval until closed. It follows the lifecycle of
// package lifecycle; SetTargets may be called any time, from any goroutine. A failed
// poll is logged and retried at the next tick: it never stops the poller.
type Poller struct {
	cfg     Config
	mu      sync.Mutex
	targets []Target
	life    lifecycle.State
}

var _ lifecycle.Part = (*Poller)(nil)

// New returns a poller that is not started.
func New(cfg Config) *Poller {
	if cfg.Interval <= 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Poller{cfg: cfg}
}

// SetTargets replaces the processes polled from the next poll on.
func (p *Poller) SetTargets(t []Target) {
	p.mu.Lock()
	p.targets = append([]Target(nil), t...)
	p.mu.Unlock()
}

// Start polls at once and then every Interval, in the background, until Close or the
// end of ctx (which also aborts a poll in progress). It fails only when the poller was
// started or closed before.
func (p *Poller) Start(ctx context.Context) error {
	if err := p.life.Begin(); err != nil {
		return fmt.Errorf("container metrics poller: %w", err)
	}
	p.life.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if err := p.Poll(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logger.Warn("poll process stats", "err", err)
		}
	})
	return nil
}

// Close stops polling and waits for a poll in progress. It returns nil: failed polls
// are logged, not returned.
func (p *Poller) Close() error { return p.life.Close() }

// Wait blocks until the poller has stopped (Close, or the end of Start's context).
func (p *Poller) Wait() error { return p.life.Wait() }

// Run is Start followed by Wait.
func (p *Poller) Run(ctx context.Context) error { return lifecycle.Run(ctx, p) }

// Poll fetches every target's stats once and stores them. A target that fails is
// skipped (and reported in the error); the others are stored.
func (p *Poller) Poll(ctx context.Context) error {
	p.mu.Lock()
	targets := p.targets
	p.mu.Unlock()
	var (
		rows []resultsdb.ContainerMetric
		errs []error
	)
	for _, t := range targets {
		stats, err := p.cfg.Client.GetStats(ctx, t.ProcessGUID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		at := p.cfg.Clock()
		for _, s := range stats.Stats {
			rows = append(rows, row(p.cfg.RunID, at, t, s))
		}
	}
	if err := p.cfg.Store.InsertContainerMetrics(ctx, rows); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// row converts one stats entry. Usage is null for instances that are not running and
// when CC had no metrics (usage {} or a zero usage.time).
func row(run string, at time.Time, t Target, s resource.ProcessStat) resultsdb.ContainerMetric {
	m := resultsdb.ContainerMetric{RunID: run, At: at, AppName: t.AppName, AppGUID: t.AppGUID, ProcessType: t.ProcessType,
		InstanceIndex: s.Index, State: s.State, Host: s.Host}
	if s.IsolationSegment != nil {
		m.IsolationSegment = *s.IsolationSegment
	}
	if s.State == "DOWN" {
		return m
	}
	quota, uptime := int64(s.MemoryQuota), int64(s.Uptime)
	m.MemQuotaBytes, m.UptimeSeconds = &quota, &uptime
	if s.Usage.Time.IsZero() {
		return m
	}
	cpu, mem, disk := s.Usage.CPU, int64(s.Usage.Memory), int64(s.Usage.Disk)
	m.CPU, m.MemBytes, m.DiskBytes = &cpu, &mem, &disk
	if s.Usage.CPUEntitlement > 0 {
		e := s.Usage.CPUEntitlement
		m.CPUEntitlement = &e
	}
	return m
}
