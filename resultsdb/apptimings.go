package resultsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// AppTiming is one request as an app instance timed it.
type AppTiming struct {
	TraceID sample.TraceID
	// At is when the request reached the app.
	At time.Time
	// PoolWait is the time spent waiting for a pooled DB connection, Query the time in
	// statements, Total the time until the response was complete.
	PoolWait, Query, Total time.Duration
}

// AppTimingFlush is one flush of one app instance's timings at the end of a step.
type AppTimingFlush struct {
	RunID, Variant string
	Step           int // 0-based
	AppName        string
	Instance       int
	At             time.Time
	// Received is how many rows the instance handed over; Stored how many were this
	// run's and not stored before; Foreign how many carried another trace tag.
	Received, Stored, Foreign int
	// Dropped is how many rows the instance could not keep (its buffer was full).
	Dropped int64
	// Err says why the instance could not be flushed; "" when it was.
	Err string
}

// StoreAppTimings stores an instance's flushed rows of f's run and records the flush, in
// one transaction. Rows with another run's trace tag (other clients, an earlier run) are
// counted in f.Foreign and skipped; a trace id already stored is kept once. It fills
// f.Received, f.Stored and f.Foreign.
func (s *Store) StoreAppTimings(ctx context.Context, f *AppTimingFlush, rows []AppTiming) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store app timings: %w", err)
	}
	defer tx.Rollback(ctx)
	var tag int64
	if err := tx.QueryRow(ctx, `SELECT trace_tag FROM runs WHERE id = $1`, f.RunID).Scan(&tag); err != nil {
		return fmt.Errorf("store app timings of run %s: %w", f.RunID, err)
	}
	own := make([]AppTiming, 0, len(rows))
	for _, r := range rows {
		if t, _, _ := r.TraceID.Parts(); int64(t) == tag {
			own = append(own, r)
		}
	}
	f.Received, f.Foreign, f.Stored = len(rows), len(rows)-len(own), 0
	if len(own) > 0 {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS app_timings_batch (LIKE app_timings INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`); err != nil {
			return fmt.Errorf("store app timings: %w", err)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"app_timings_batch"},
			[]string{"run_id", "trace_id", "app_name", "instance_index", "at", "pool_wait_us", "query_us", "total_us", "worker_id", "seq"},
			pgx.CopyFromSlice(len(own), func(i int) ([]any, error) {
				r := &own[i]
				_, worker, seq := r.TraceID.Parts()
				return []any{f.RunID, [16]byte(r.TraceID), f.AppName, int32(f.Instance), r.At,
					r.PoolWait.Microseconds(), r.Query.Microseconds(), r.Total.Microseconds(), int32(worker), int64(seq)}, nil
			}))
		if err != nil {
			return fmt.Errorf("store app timings: %w", err)
		}
		// Counted from RETURNING, as StoreRouterBatch does.
		err := tx.QueryRow(ctx, `WITH added AS (INSERT INTO app_timings SELECT DISTINCT ON (run_id, trace_id) * FROM app_timings_batch
ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM added`).Scan(&f.Stored)
		if err != nil {
			return fmt.Errorf("store app timings: %w", err)
		}
	}
	if err := addFlush(ctx, tx, f); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store app timings: %w", err)
	}
	return nil
}

// RecordFailedFlush records a flush that brought nothing, with f.Err saying why.
func (s *Store) RecordFailedFlush(ctx context.Context, f *AppTimingFlush) error {
	return addFlush(ctx, s.pool, f)
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func addFlush(ctx context.Context, db execer, f *AppTimingFlush) error {
	_, err := db.Exec(ctx, `INSERT INTO app_timing_flushes (run_id, variant, step, app_name, instance_index, at, rows_received, stored, foreign_rows, dropped, error)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)`, f.RunID, f.Variant, f.Step, f.AppName, f.Instance, f.At, f.Received, f.Stored, f.Foreign, f.Dropped, f.Err)
	if err != nil {
		return fmt.Errorf("record the app timings flush: %w", err)
	}
	return nil
}
