package resultsdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// What a report shows per second and per step is computed once, when the data arrives,
// and stored: the per-second series of a step with its metrics (step_series), the
// router-log coverage and latency decomposition after each router-log pull
// (step_router_metrics). A report then reads a few rows per step instead of scanning the
// samples; a run recorded before these tables existed is computed live with the same SQL.

// intervalsSQL is the figures of the intervals of a series over the samples s of from
// (a FROM clause with its WHERE), an interval per distinct value of keys: the keys'
// columns, then requests (n), those without a response or with a status ≥ 400 (errs),
// the observed p50 and p99 latency (percentilesSQL) and the mean intended time (µs since
// the epoch). Every series, per second or wider, stored or live, computes them with it.
func intervalsSQL(d dialect, from string, keys ...column) string {
	exprs, names, ordinals := groupBy(keys)
	if d == onePostgres {
		return `SELECT ` + exprs + `, count(*) AS n, count(*) FILTER (WHERE s.error <> 0 OR s.status >= 400) AS errs,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY s.latency_us)::bigint AS p50,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY s.latency_us)::bigint AS p99, avg(s.intended_us)::float8 AS mean
` + from + `
GROUP BY ` + ordinals
	}
	return `SELECT ` + names + `, n, errs, p50::bigint AS p50, p99::bigint AS p99, mean
FROM (SELECT ` + exprs + `, count(*) AS n, count(*) FILTER (WHERE s.error <> 0 OR s.status >= 400) AS errs,
             avg(s.intended_us)::float8 AS mean
      ` + indent(from, "      ") + `
      GROUP BY ` + ordinals + `) per_interval
JOIN (` + percentilesSQL(from, keys, "s.latency_us", fraction{"p50", 0.5}, fraction{"p99", 0.99}) + `) latency USING (` + names + `)`
}

// stepSeriesSQL is one step's requests per second of intended send time, warm-up
// included: intervalsSQL's figures as arrays ordered by second.
var stepSeriesSQL = [...]string{onePostgres: stepSeriesQuery(onePostgres), citusSQL: stepSeriesQuery(citusSQL)}

func stepSeriesQuery(d dialect) string {
	return `
SELECT coalesce(array_agg(k ORDER BY k), '{}'), coalesce(array_agg(n ORDER BY k), '{}'), coalesce(array_agg(errs ORDER BY k), '{}'),
       coalesce(array_agg(p50 ORDER BY k), '{}'), coalesce(array_agg(p99 ORDER BY k), '{}'), coalesce(array_agg(mean ORDER BY k), '{}')
FROM (` + intervalsSQL(d, `FROM workers w JOIN samples s ON s.worker_id = w.id AND s.step = $3
WHERE w.run_id = $1 AND w.variant = $2`, column{"s.intended_us / 1000000", "k"}) + `) per_second`
}

// ComputeStepSeries computes the per-second series of one step from its samples and
// stores it, replacing any stored before. ComputeStepMetrics calls it; call it directly
// only to store the series of a step whose metrics were stored otherwise.
func (s *Store) ComputeStepSeries(ctx context.Context, runID, variant string, idx int) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO step_series (run_id, variant, step, second, count, errors, p50_us, p99_us, intended_mean_us)
SELECT $1, $2, $3, x.* FROM (`+stepSeriesSQL[s.dialect()]+`) x
ON CONFLICT (run_id, variant, step) DO UPDATE SET second = EXCLUDED.second, count = EXCLUDED.count, errors = EXCLUDED.errors,
    p50_us = EXCLUDED.p50_us, p99_us = EXCLUDED.p99_us, intended_mean_us = EXCLUDED.intended_mean_us, computed_at = EXCLUDED.computed_at`, runID, variant, idx)
	if err != nil {
		return fmt.Errorf("store the series of step %d of %s: %w", idx+1, variant, err)
	}
	return nil
}

// RouterStepMetrics is what the router logs and app timings tell about one step's
// measured requests: the coverage, and the latency decomposition as sums over the
// Decomposed requests that have a router line with both times and an app timing.
type RouterStepMetrics struct {
	Coverage
	Decomposed int64
	// ClientSumUS is those requests' client latency, summed; LayerSumsUS their time in
	// each layer, in the order a request crosses them: generator+network (latency −
	// response_time), router (gorouter_time), router→app (response_time −
	// gorouter_time − app total), app code (total − pool wait − query), pool wait, query.
	// Sums, not means, so a step's layers add up to its client latency exactly.
	ClientSumUS float64
	LayerSumsUS [6]float64
}

// routerStepsSQL joins a run's measured samples (warm-up excluded, as in the steps'
// figures) to its router requests and app timings, per second and then per step. The
// app timing's seq adds nothing to its trace id but lets Citus join it on one node.
var routerStepsSQL = strings.ReplaceAll(`
WITH per_sec AS (
    SELECT w.variant, s.step, s.intended_us / 1000000 AS sec, count(*) AS sent, count(rr.seq) AS found,
           count(*) FILTER (WHERE rr.seq IS NULL AND s.status = 0) AS no_response,
           count(*) FILTER (WHERE d.ok) AS decomposed,
           coalesce(sum(s.latency_us::float8) FILTER (WHERE d.ok), 0) AS client,
           coalesce(sum((s.latency_us - rr.response_time_us)::float8) FILTER (WHERE d.ok), 0) AS l0,
           coalesce(sum(rr.gorouter_time_us::float8) FILTER (WHERE d.ok), 0) AS l1,
           coalesce(sum((rr.response_time_us - rr.gorouter_time_us - a.total_us)::float8) FILTER (WHERE d.ok), 0) AS l2,
           coalesce(sum((a.total_us - a.pool_wait_us - a.query_us)::float8) FILTER (WHERE d.ok), 0) AS l3,
           coalesce(sum(a.pool_wait_us::float8) FILTER (WHERE d.ok), 0) AS l4,
           coalesce(sum(a.query_us::float8) FILTER (WHERE d.ok), 0) AS l5
    FROM workers w
    JOIN samples s ON s.worker_id = w.id AND NOT s.warmup
    LEFT JOIN router_requests rr ON rr.run_id = w.run_id AND rr.worker_id = s.worker_id AND rr.seq = s.seq
    LEFT JOIN app_timings a ON a.run_id = w.run_id AND a.trace_id = rr.trace_id AND a.seq = rr.seq
    WHERE w.run_id = $1
    GROUP BY 1, 2, 3)
SELECT variant, step, sum(sent)::bigint, sum(found)::bigint, sum(no_response)::bigint, count(*)::int,
       (count(*) FILTER (WHERE found = 0))::int, (count(*) FILTER (WHERE found > 0 AND found < sent))::int,
       coalesce(sum(sent) FILTER (WHERE found = 0), 0)::bigint,
       sum(decomposed)::bigint, sum(client)::float8, sum(l0)::float8, sum(l1)::float8, sum(l2)::float8, sum(l3)::float8,
       sum(l4)::float8, sum(l5)::float8
FROM per_sec GROUP BY 1, 2`,
	"d.ok", "(rr.response_time_us IS NOT NULL AND rr.gorouter_time_us IS NOT NULL AND a.trace_id IS NOT NULL)")

const routerStepsColumns = `variant, step, sent, found, no_response, seconds, empty_seconds, partial_seconds, missing_in_empty,
       decomposed, client_us_sum, generator_network_us_sum, router_us_sum, router_app_us_sum, app_code_us_sum, pool_wait_us_sum, query_us_sum`

func scanRouterSteps(rows pgx.Rows) ([]RouterStepMetrics, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RouterStepMetrics, error) {
		var m RouterStepMetrics
		c := &m.Coverage
		l := &m.LayerSumsUS
		err := r.Scan(&c.Variant, &c.Step, &c.Sent, &c.Found, &c.NoResponse, &c.Seconds, &c.EmptySeconds, &c.PartialSeconds, &c.MissingInEmpty,
			&m.Decomposed, &m.ClientSumUS, &l[0], &l[1], &l[2], &l[3], &l[4], &l[5])
		return m, err
	})
}

// ComputeRouterMetrics computes the router-log coverage and latency decomposition of
// every step of the run from its samples, router requests and app timings, stores them
// in place of any stored before, and returns them ordered by variant and step. Call it
// after the run's router logs were pulled (and its app timings flushed).
func (s *Store) ComputeRouterMetrics(ctx context.Context, runID string) ([]RouterStepMetrics, error) {
	if err := s.Settle(ctx); err != nil {
		return nil, err
	}
	// The pull just stored the run's router requests: without fresh statistics the
	// planner may join them to the samples without their index (see LayerOrders).
	if _, err := s.pool.Exec(ctx, `ANALYZE router_requests, app_timings`); err != nil {
		return nil, fmt.Errorf("store the router metrics of run %s: analyze: %w", runID, err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM step_router_metrics WHERE run_id = $1`, runID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO step_router_metrics (run_id, `+routerStepsColumns+`)
SELECT $1, x.* FROM (`+routerStepsSQL+`) x`, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store the router metrics of run %s: %w", runID, err)
	}
	return s.RouterMetrics(ctx, runID)
}

// RouterMetrics returns the router-log coverage and latency decomposition of every
// step of the run with measured requests, ordered by variant and step: the stored ones
// (ComputeRouterMetrics), else computed live from the rows (a run recorded before they
// were stored).
func (s *Store) RouterMetrics(ctx context.Context, runID string) ([]RouterStepMetrics, error) {
	return routerMetrics(ctx, s.pool, runID)
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func routerMetrics(ctx context.Context, db queryer, runID string) ([]RouterStepMetrics, error) {
	rows, err := db.Query(ctx, `SELECT `+routerStepsColumns+` FROM step_router_metrics WHERE run_id = $1 ORDER BY 1, 2`, runID)
	if err != nil {
		return nil, fmt.Errorf("read the router metrics of run %s: %w", runID, err)
	}
	out, err := scanRouterSteps(rows)
	if err != nil {
		return nil, fmt.Errorf("read the router metrics of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		return liveRouterMetrics(ctx, db, runID)
	}
	return out, nil
}

func liveRouterMetrics(ctx context.Context, db queryer, runID string) ([]RouterStepMetrics, error) {
	rows, err := db.Query(ctx, routerStepsSQL+` ORDER BY 1, 2`, runID)
	if err != nil {
		return nil, fmt.Errorf("router metrics of run %s: %w", runID, err)
	}
	out, err := scanRouterSteps(rows)
	if err != nil {
		return nil, fmt.Errorf("router metrics of run %s: %w", runID, err)
	}
	return out, nil
}

// Coverages is the coverage of each of ms.
func Coverages(ms []RouterStepMetrics) []Coverage {
	out := make([]Coverage, len(ms))
	for i, m := range ms {
		out[i] = m.Coverage
	}
	return out
}
