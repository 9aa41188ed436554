// Package resultsdb is the results store: a Postgres database holding runs, ramp steps,
// workers, one row per request (samples), container metrics, router requests and app
// timings. The schema is versioned by embedded migrations applied on Open.
package resultsdb

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is a connection pool to a migrated results database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// citus is the citus extension's version, "" on plain Postgres (read at Open).
	citus string
}

// Open connects to the results database at dsn and applies pending migrations. Every
// connection has the default timeouts (DefaultConnectTimeout, DefaultStatementTimeout)
// unless dsn sets its own; a failed dial names the server's address.
func Open(ctx context.Context, dsn string) (*Store, error) { return OpenPool(ctx, dsn, 0) }

// OpenPool is Open with a pool of at most maxConns connections (0: pgxpool's default,
// the larger of 4 and the number of CPUs): a relay's budget of the database's
// connections.
func OpenPool(ctx context.Context, dsn string, maxConns int) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("results db: %w", errMalformedDSN)
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	applyTimeouts(&cfg.ConnConfig.Config)
	addr := serverAddr(&cfg.ConnConfig.Config)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect results db at %s: %w", addr, err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("results db at %s: %w", addr, err)
	}
	if s.citus, err = citusVersion(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("results db at %s: %w", addr, err)
	}
	return s, nil
}

// errMalformedDSN replaces pgx's parse error, whose text may echo a password.
var errMalformedDSN = errors.New("malformed connection string (want postgres://user:password@host:port/db)")

func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	return Migrate(ctx, conn.Conn())
}

// dialect is the SQL the store's database takes.
func (s *Store) dialect() dialect {
	if s.citus != "" {
		return citusSQL
	}
	return onePostgres
}

// Close releases all connections.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the pool for packages that stream tables (export).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// RunStatus is the lifecycle state of a run.
type RunStatus string

// Run states. A run is "stopped" when a stop condition ended its ramp early.
const (
	RunRunning   RunStatus = "running"
	RunCompleted RunStatus = "completed"
	RunStopped   RunStatus = "stopped"
	RunAborted   RunStatus = "aborted"
	RunFailed    RunStatus = "failed"
)

// Run is one execution of a spec.
type Run struct {
	ID       string
	Name     string
	SpecFile string
	TraceTag uint32
	Epoch    time.Time
	Status   RunStatus
	Reason   string
	Started  time.Time
	Ended    *time.Time
}

var runIDPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$`)

// ValidRunID reports whether id has the shape of a generated run id. Commands check it
// before using the id anywhere, so a typo gets a clear message rather than "not found".
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

func newRunID(now time.Time) (string, uint32, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", 0, err
	}
	id := fmt.Sprintf("%s-%02x%02x", now.UTC().Format("20060102-150405"), b[0], b[1])
	return id, binary.BigEndian.Uint32(b[2:6]), nil
}

// CreateRun inserts a new run with a generated id and trace tag. epoch is the zero point
// of the run's sample offsets.
func (s *Store) CreateRun(ctx context.Context, name, specFile, specText string, epoch time.Time) (*Run, error) {
	for attempt := 0; ; attempt++ {
		id, tag, err := newRunID(epoch)
		if err != nil {
			return nil, fmt.Errorf("generate run id: %w", err)
		}
		tag |= 1 // never zero: a zero tag would make trace ids look unset
		_, err = s.pool.Exec(ctx, `INSERT INTO runs (id, name, spec_file, spec, trace_tag, epoch, heartbeat_at) VALUES ($1,$2,$3,$4,$5,$6,clock_timestamp())`,
			id, name, specFile, specText, int64(tag), epoch)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && attempt < 5 {
			continue // same second and same random suffix: draw again
		}
		if err != nil {
			return nil, fmt.Errorf("create run: %w", err)
		}
		return &Run{ID: id, Name: name, SpecFile: specFile, TraceTag: tag, Epoch: epoch, Status: RunRunning, Started: epoch}, nil
	}
}

// ErrRunNotFound is returned when no run has the given id.
var ErrRunNotFound = errors.New("run not found")

// GetRun reads one run.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	r := &Run{ID: id}
	var tag int64
	err := s.pool.QueryRow(ctx, `SELECT name, spec_file, trace_tag, epoch, status, reason, started_at, ended_at FROM runs WHERE id = $1`, id).
		Scan(&r.Name, &r.SpecFile, &tag, &r.Epoch, &r.Status, &r.Reason, &r.Started, &r.Ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrRunNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	r.TraceTag = uint32(tag)
	return r, nil
}

// FinishRun records the final status of a run and why.
func (s *Store) FinishRun(ctx context.Context, id string, status RunStatus, reason string) error {
	_, err := s.pool.Exec(ctx, `UPDATE runs SET status = $2, reason = $3, ended_at = now() WHERE id = $1`, id, string(status), reason)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	return nil
}

// Step is one ramp step of one variant.
type Step struct {
	RunID     string
	Variant   string
	Index     int
	Instances int
	// Users is each generator instance's users (closed and count models).
	Users int
	// Rate is the open loop's offered rate in all (req/s), which the live generator
	// instances split; 0 leaves the rate to the workload.
	Rate float64
	// AppInstances is what the app under test was scaled to for the step; 0 when the
	// ramp does not scale it.
	AppInstances int
	// Started is the planned start every generator aligns on; Ends the planned end.
	Started     time.Time
	WarmupUntil time.Time
	Ends        time.Time
	Ended       *time.Time
	StopReason  string
}

// PlanStep plans a step to begin lead after the database's clock at the moment the plan
// is written, warm up for warmup and end hold after its start (st's times are not
// read), and returns the plan as stored. The window is the database's, not the
// caller's: a write that waited (a stalled connection, a retry through an outage) still
// leaves instances lead to read the plan before the step begins. It is idempotent: when
// the step is planned already (an earlier attempt whose answer was lost in an outage),
// that plan wins, and is the one returned.
func (s *Store) PlanStep(ctx context.Context, st Step, lead, warmup, hold time.Duration) (Step, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO steps (run_id, variant, idx, instances, users, started_at, warmup_until, ends_at, rate, app_instances)
		SELECT $1, $2, $3, $4, $5, t, t + $6::interval, t + $7::interval, nullif($8, 0::float8), nullif($9, 0)
		FROM (SELECT clock_timestamp() + $10::interval AS t) AS start
		ON CONFLICT (run_id, variant, idx) DO NOTHING`,
		st.RunID, st.Variant, st.Index, st.Instances, st.Users, warmup, hold, st.Rate, st.AppInstances, lead)
	if err != nil {
		return st, fmt.Errorf("plan step %d of %s: %w", st.Index+1, st.Variant, err)
	}
	return s.PlannedStep(ctx, st.RunID, st.Variant, st.Index)
}

// StartStep records a step at the times st gives (PlanStep plans one ahead of the
// database's clock): generators that follow the run's plan begin it at st.Started and
// stop issuing at st.Ends. When the step is recorded already, the row stored wins.
func (s *Store) StartStep(ctx context.Context, st Step) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO steps (run_id, variant, idx, instances, users, started_at, warmup_until, ends_at, rate, app_instances)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,nullif($9, 0::float8),nullif($10, 0))
		ON CONFLICT (run_id, variant, idx) DO NOTHING`,
		st.RunID, st.Variant, st.Index, st.Instances, st.Users, st.Started, st.WarmupUntil, st.Ends, st.Rate, st.AppInstances)
	if err != nil {
		return fmt.Errorf("start step %d of %s: %w", st.Index+1, st.Variant, err)
	}
	return nil
}

// PlannedStep reads the plan of step idx of variant as stored.
func (s *Store) PlannedStep(ctx context.Context, runID, variant string, idx int) (Step, error) {
	st := Step{RunID: runID, Variant: variant, Index: idx}
	err := s.pool.QueryRow(ctx, `SELECT instances, users, started_at, warmup_until, ends_at, coalesce(rate, 0), coalesce(app_instances, 0)
		FROM steps WHERE run_id = $1 AND variant = $2 AND idx = $3`,
		runID, variant, idx).Scan(&st.Instances, &st.Users, &st.Started, &st.WarmupUntil, &st.Ends, &st.Rate, &st.AppInstances)
	if err != nil {
		return st, fmt.Errorf("read the plan of step %d of %s: %w", idx+1, variant, err)
	}
	return st, nil
}

// EndStep records the end of a step and, when a stop condition fired, why the ramp ends.
// ended is when it really ended: when its load did, if every generator left before
// the planned end; a step's measured window ends at the earlier of the two.
func (s *Store) EndStep(ctx context.Context, runID, variant string, idx int, ended time.Time, stopReason string) error {
	_, err := s.pool.Exec(ctx, `UPDATE steps SET ended_at = $4, stop_reason = $5 WHERE run_id = $1 AND variant = $2 AND idx = $3`,
		runID, variant, idx, ended, stopReason)
	if err != nil {
		return fmt.Errorf("end step %d of %s: %w", idx+1, variant, err)
	}
	return nil
}

// SetStopReason records why the ramp of a variant ends after step idx (a stop condition).
func (s *Store) SetStopReason(ctx context.Context, runID, variant string, idx int, reason string) error {
	_, err := s.pool.Exec(ctx, `UPDATE steps SET stop_reason = $4 WHERE run_id = $1 AND variant = $2 AND idx = $3`,
		runID, variant, idx, reason)
	if err != nil {
		return fmt.Errorf("record why the ramp of %s stops after step %d: %w", variant, idx+1, err)
	}
	return nil
}

// Worker is one load-generator instance taking part in a run.
type Worker struct {
	ID            int32
	RunID         string
	Variant       string
	AppName       string
	InstanceIndex int
	InstanceGUID  string
	Host          string
}

// RegisterWorker inserts w and returns its id, whatever the state of its run: for
// records of runs as they were (fixtures, imports). A generator joins with JoinRun.
func (s *Store) RegisterWorker(ctx context.Context, w Worker) (int32, error) {
	return s.insertWorker(ctx, w, `INSERT INTO workers (run_id, variant, app_name, instance_index, instance_guid, host)
		VALUES ($1,$2,$3,$4,$5,$6) RETURNING id`)
}

// JoinRun registers generator instance w for its run and returns its id, which goes
// into every trace id it sends. It fails with ErrRunNotRunning, registering nothing,
// when the run has ended or its process is gone (no run heartbeat for RunStaleAfter):
// a generator that comes up after its run died, before anyone marked it aborted, must
// not load the target for it.
func (s *Store) JoinRun(ctx context.Context, w Worker) (int32, error) {
	return s.insertWorker(ctx, w, `INSERT INTO workers (run_id, variant, app_name, instance_index, instance_guid, host)
		SELECT r.id, $2, $3, $4, $5, $6 FROM runs r
		WHERE r.id = $1 AND r.status = 'running' AND r.heartbeat_at >= clock_timestamp() - make_interval(secs => $7::float8)
		RETURNING id`, RunStaleAfter.Seconds())
}

// insertWorker runs insert (w's fields as $1..$6, then more) and returns the new id.
func (s *Store) insertWorker(ctx context.Context, w Worker, insert string, more ...any) (int32, error) {
	var id int32
	args := append([]any{w.RunID, w.Variant, w.AppName, w.InstanceIndex, w.InstanceGUID, w.Host}, more...)
	err := s.pool.QueryRow(ctx, insert, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("register worker %s/%d for run %s: %w", w.AppName, w.InstanceIndex, w.RunID, ErrRunNotRunning)
	}
	if err != nil {
		return 0, fmt.Errorf("register worker %s/%d: %w", w.AppName, w.InstanceIndex, err)
	}
	if id > sample.MaxWorkerID {
		return 0, fmt.Errorf("register worker %s/%d: worker id %d does not fit in a trace id (at most %d): use a fresh results database", w.AppName, w.InstanceIndex, id, sample.MaxWorkerID)
	}
	return id, nil
}

// StopWorker marks a worker stopped with its final counters.
func (s *Store) StopWorker(ctx context.Context, id int32, c WorkerCounters) error {
	_, err := s.pool.Exec(ctx, `UPDATE workers SET stopped_at = statement_timestamp(), heartbeat_at = statement_timestamp(),
		sent = $2, stored = $3, spilled = $4, missed = $5, dropped = $6 WHERE id = $1`,
		id, int64(c.Sent), int64(c.Stored), int64(c.Spilled), int64(c.Missed), int64(c.Dropped))
	if err != nil {
		return fmt.Errorf("stop worker %d: %w", id, err)
	}
	return nil
}

// RunSpec returns the spec text a run was started with.
func (s *Store) RunSpec(ctx context.Context, id string) (string, error) {
	return runSpec(ctx, s.pool, id)
}

func runSpec(ctx context.Context, db queryer, id string) (string, error) {
	var text string
	if err := db.QueryRow(ctx, `SELECT spec FROM runs WHERE id = $1`, id).Scan(&text); err != nil {
		return "", fmt.Errorf("read the spec of run %s: %w", id, err)
	}
	return text, nil
}
