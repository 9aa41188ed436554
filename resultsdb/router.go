package resultsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// RouterRequest is one request as the router logged it, keyed by the trace id the
// generator sent.
type RouterRequest struct {
	TraceID sample.TraceID
	// At is when the router received the request.
	At               time.Time
	AppGUID, AppName string
	AppIndex         *int
	// Status is 0 when the router wrote no response.
	Status int
	// ResponseTime and GorouterTime are nil when the line did not carry them.
	ResponseTime, GorouterTime *time.Duration
	RouterError                string
}

// LogPull is where a pull of router logs for a run stands and how it went so far.
type LogPull struct {
	RunID, Source string
	// Cursor is the source's own resume point, stored as is.
	Cursor json.RawMessage
	// Retrieved counts documents read; Stored the rows of this run kept (duplicates
	// and other runs' requests are not stored); Foreign the documents without a trace
	// id of this run.
	Retrieved, Stored, Unparseable, Foreign int64
	BudgetExhausted                         bool
	// Counters is the source's own tally of what it did not store (a drain's refused
	// and dropped messages), a JSON object; nil leaves the stored one as it is.
	Counters         json.RawMessage
	Started, Updated time.Time
	Finished         *time.Time
}

// LogPull returns the pull of runID from source, or nil when none was started.
func (s *Store) LogPull(ctx context.Context, runID, source string) (*LogPull, error) {
	p := &LogPull{RunID: runID, Source: source}
	err := s.pool.QueryRow(ctx, `SELECT cursor, retrieved, stored, unparseable, foreign_docs, budget_exhausted, counters, started_at, updated_at, finished_at
FROM router_log_pulls WHERE run_id = $1 AND source = $2`, runID, source).Scan(
		&p.Cursor, &p.Retrieved, &p.Stored, &p.Unparseable, &p.Foreign, &p.BudgetExhausted, &p.Counters, &p.Started, &p.Updated, &p.Finished)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the router log pull of run %s: %w", runID, err)
	}
	return p, nil
}

// ErrForeignTrace is returned for a router request whose trace id is not of the run.
var ErrForeignTrace = errors.New("trace id of another run")

// StoreRouterBatch stores rows of run p.RunID and moves the pull's cursor past them in
// one transaction, so that a pull interrupted anywhere resumes from a cursor that
// matches what is stored. A request already stored (same trace id) is kept as it was.
// Every row must carry the run's trace tag (ErrForeignTrace otherwise: the caller
// filters and counts other runs' requests). p's counters are the totals after this
// batch; p.Stored is updated with what was new.
func (s *Store) StoreRouterBatch(ctx context.Context, p *LogPull, rows []RouterRequest) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store router requests: %w", err)
	}
	defer tx.Rollback(ctx)
	var tag int64
	if err := tx.QueryRow(ctx, `SELECT trace_tag FROM runs WHERE id = $1`, p.RunID).Scan(&tag); err != nil {
		return fmt.Errorf("store router requests of run %s: %w", p.RunID, err)
	}
	for i := range rows {
		if t, _, _ := rows[i].TraceID.Parts(); int64(t) != tag {
			return fmt.Errorf("store router requests of run %s: %s: %w", p.RunID, rows[i].TraceID, ErrForeignTrace)
		}
	}
	var added int64
	if len(rows) > 0 {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS router_batch (LIKE router_requests INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`); err != nil {
			return fmt.Errorf("store router requests: %w", err)
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"router_batch"},
			[]string{"run_id", "trace_id", "at", "app_guid", "app_name", "app_index", "status", "response_time_us", "gorouter_time_us", "router_error", "worker_id", "seq"},
			pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
				r := &rows[i]
				_, worker, seq := r.TraceID.Parts()
				var status *int16
				if r.Status > 0 {
					st := int16(r.Status)
					status = &st
				}
				return []any{p.RunID, [16]byte(r.TraceID), r.At, r.AppGUID, r.AppName, r.AppIndex, status,
					micros(r.ResponseTime), micros(r.GorouterTime), r.RouterError, int32(worker), int64(seq)}, nil
			}))
		if err != nil {
			return fmt.Errorf("store router requests: %w", err)
		}
		// Counted from RETURNING, not the command tag: on Citus an INSERT … SELECT
		// through the coordinator tags the rows it read, not those it inserted.
		err := tx.QueryRow(ctx, `WITH added AS (INSERT INTO router_requests SELECT DISTINCT ON (run_id, trace_id) * FROM router_batch
ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM added`).Scan(&added)
		if err != nil {
			return fmt.Errorf("store router requests: %w", err)
		}
	}
	p.Stored += added
	var counters []byte // NULL: keep what is stored
	if len(p.Counters) > 0 {
		counters = p.Counters
	}
	_, err = tx.Exec(ctx, `INSERT INTO router_log_pulls (run_id, source, cursor, retrieved, stored, unparseable, foreign_docs, budget_exhausted, counters)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,coalesce($9::jsonb, '{}'))
ON CONFLICT (run_id, source) DO UPDATE SET cursor = EXCLUDED.cursor, retrieved = EXCLUDED.retrieved, stored = EXCLUDED.stored,
    unparseable = EXCLUDED.unparseable, foreign_docs = EXCLUDED.foreign_docs, budget_exhausted = EXCLUDED.budget_exhausted,
    counters = coalesce($9::jsonb, router_log_pulls.counters), updated_at = EXCLUDED.updated_at`,
		p.RunID, p.Source, []byte(p.Cursor), p.Retrieved, p.Stored, p.Unparseable, p.Foreign, p.BudgetExhausted, counters)
	if err != nil {
		p.Stored -= added
		return fmt.Errorf("store the router log cursor: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		p.Stored -= added
		return fmt.Errorf("store router requests: %w", err)
	}
	return nil
}

// FinishLogPull marks the pull complete (the window was read to its end or the budget
// was spent).
func (s *Store) FinishLogPull(ctx context.Context, runID, source string) error {
	_, err := s.pool.Exec(ctx, `UPDATE router_log_pulls SET finished_at = now() WHERE run_id = $1 AND source = $2`, runID, source)
	if err != nil {
		return fmt.Errorf("finish the router log pull: %w", err)
	}
	return nil
}

func micros(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	us := d.Microseconds()
	return &us
}

// RunVariants returns the plan of every variant of a run, by variant name.
func (s *Store) RunVariants(ctx context.Context, runID string) ([]RunVariant, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_id, variant, generator_app, app_name, app_guid, target_url, workload,
		listed, matrix, app_manifest, app_env, app_memory_mb, app_instances, config, repeat FROM run_variants WHERE run_id = $1 ORDER BY variant`, runID)
	if err != nil {
		return nil, fmt.Errorf("read the variants of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunVariant, error) {
		var (
			v             RunVariant
			a             AppConfig
			memory, insts *int
		)
		err := r.Scan(&v.RunID, &v.Variant, &v.GeneratorApp, &v.AppName, &v.AppGUID, &v.TargetURL, &v.Workload,
			&v.Listed, &v.Matrix, &a.Manifest, &a.Env, &memory, &insts, &v.Config, &v.Repeat)
		if v.Config == "" {
			v.Config = v.Variant
		}
		if len(v.Matrix) == 0 {
			v.Matrix = nil
		}
		if v.Listed == "" {
			v.Listed = v.Variant
		}
		if insts != nil {
			a.Instances = *insts
			if memory != nil {
				a.MemoryMB = *memory
			}
			v.App = &a
		}
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the variants of run %s: %w", runID, err)
	}
	return out, nil
}

// Coverage is how much of a step's load the router logs account for.
type Coverage struct {
	Variant string
	Step    int
	// Sent counts the step's samples (warm-up excluded); Found those with a router
	// request; NoResponse the missing ones that got no response at all (the router may
	// never have seen them).
	Sent, Found, NoResponse int64
	// Seconds counts the step's 1-second intervals (by intended send time) with
	// samples; EmptySeconds those without a single router request found, holding
	// MissingInEmpty of the missing requests; PartialSeconds those with some missing.
	Seconds, EmptySeconds, PartialSeconds int
	MissingInEmpty                        int64
}

// Missing is Sent - Found.
func (c Coverage) Missing() int64 { return c.Sent - c.Found }

// Share is Found/Sent (1 when nothing was sent).
func (c Coverage) Share() float64 {
	if c.Sent == 0 {
		return 1
	}
	return float64(c.Found) / float64(c.Sent)
}

// RouterCoverage computes, from the rows, the router-log coverage of every step of the
// run with measured requests (warm-up excluded, as in the steps' figures), ordered by
// variant and step. RouterMetrics reads the stored coverage.
func (s *Store) RouterCoverage(ctx context.Context, runID string) ([]Coverage, error) {
	ms, err := liveRouterMetrics(ctx, s.pool, runID)
	return Coverages(ms), err
}

// AnsweredSamples counts the run's requests that got a response (status other than 0):
// each has a router line, which a drain waits for after the run.
func (s *Store) AnsweredSamples(ctx context.Context, runID string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM samples s JOIN workers w ON w.id = s.worker_id WHERE w.run_id = $1 AND s.status <> 0`, runID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the answered requests of run %s: %w", runID, err)
	}
	return n, nil
}
