package resultsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
)

// Step metrics are computed once per step, after its end is recorded, and stored
// (tables step_metrics and step_app_metrics): the progress line, the stop conditions,
// the checks, the exports and the report all read the stored figures, so they agree to
// the request. A step still running has none stored; StepSummaries computes its figures
// live with the same code. The step's per-second series is stored with them
// (ComputeStepSeries). An app's container metrics over the window are summed up in
// appmetrics.go, the step's stalls found in stalls.go.

// windowSQL is a step's measured window: from the end of warm-up to the planned end, or
// to when the step really ended if that was earlier (an aborted step), or to now while
// it runs. Requests are intended only within the plan, so waiting for the last samples
// and flushing app timings after the planned end do not dilute the throughput.
const windowSQL = `least(coalesce(st.ended_at, now()), coalesce(st.ends_at, st.ended_at, now()))`

// measuredSQL is the measured requests (warm-up excluded) of the steps summarySQL
// summarises.
const measuredSQL = `FROM steps st
JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3)`

// stepColumns are what summarySQL's percentiles are computed per.
var stepColumns = []column{{"st.variant", "variant"}, {"st.idx", "idx"}}

// summarySQL computes the client-side figures of steps from the raw rows, in each
// dialect; percentiles are observed values (percentile_disc's), as latency histograms
// report them. On Citus they are counted (percentilesSQL) once for all the steps
// (MATERIALIZED) and looked up per step; a step without measured requests has none,
// and 0s.
var summarySQL = [...]string{onePostgres: summaryQuery(`
       coalesce(percentile_disc(ARRAY[0.5, 0.9, 0.99, 0.999]) WITHIN GROUP (ORDER BY s.latency_us), '{0,0,0,0}')::bigint[]`, `
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY s.start_delay_us), 0)::bigint`),
	citusSQL: `
WITH latency AS MATERIALIZED (` + percentilesSQL(measuredSQL, stepColumns, "s.latency_us",
		fraction{"p50", 0.5}, fraction{"p90", 0.9}, fraction{"p99", 0.99}, fraction{"p999", 0.999}) + `),
start_delay AS MATERIALIZED (` + percentilesSQL(measuredSQL, stepColumns, "s.start_delay_us", fraction{"p99", 0.99}) + `)` + summaryQuery(`
       coalesce((SELECT ARRAY[l.p50, l.p90, l.p99, l.p999] FROM latency l WHERE l.variant = st.variant AND l.idx = st.idx), '{0,0,0,0}')::bigint[]`, `
       coalesce((SELECT d.p99 FROM start_delay d WHERE d.variant = st.variant AND d.idx = st.idx), 0)::bigint`)}

// summaryQuery is summarySQL around its latency percentiles (an array of p50, p90, p99
// and p99.9) and its p99 start delay.
func summaryQuery(latency, startDelay string) string {
	return `
SELECT st.variant, st.idx, st.instances, coalesce(st.instances_seen, st.instances), st.users,
       st.warmup_until, ` + windowSQL + `,
       count(s.seq),
       count(s.seq) FILTER (WHERE s.error <> 0 OR s.status >= 400),
       coalesce(sum(s.bytes), 0)::bigint,
       coalesce(avg(s.latency_us), 0)::float8,` + latency + `,
       coalesce(min(s.latency_us), 0)::bigint,
       coalesce(max(s.latency_us), 0)::bigint,
       coalesce(avg(s.start_delay_us), 0)::float8,` + startDelay + `,
       (SELECT coalesce(sum(ws.missed), 0) FROM worker_steps ws JOIN workers w2 ON w2.id = ws.worker_id
         WHERE w2.run_id = st.run_id AND w2.variant = st.variant AND ws.step = st.idx)::bigint,
       coalesce(rv.workload, '{}'::jsonb), st.rate
FROM steps st
LEFT JOIN run_variants rv ON rv.run_id = st.run_id AND rv.variant = st.variant
LEFT JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
LEFT JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3)
GROUP BY st.run_id, st.variant, st.idx, rv.workload, st.rate
ORDER BY st.started_at, st.variant, st.idx`
}

// errorClassesSQL counts the failed requests of steps by class: a transport error class,
// or the HTTP status of an error response.
const errorClassesSQL = `
SELECT st.variant, st.idx, s.error, s.status, count(*)
FROM steps st
JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3) AND (s.error <> 0 OR s.status >= 400)
GROUP BY 1, 2, 3, 4`

// StepSummaries returns the figures of every step of the run, in the order the steps
// ran: the stored ones (ComputeStepMetrics) where the step has them, else computed live
// from the rows (a step still running; a run of an older version), without stalls and
// container metrics.
func (s *Store) StepSummaries(ctx context.Context, runID string) ([]StepSummary, error) {
	return s.summaries(ctx, runID, "", -1)
}

// StepSummary returns the figures of one step, as StepSummaries does.
func (s *Store) StepSummary(ctx context.Context, runID, variant string, idx int) (StepSummary, error) {
	out, err := s.summaries(ctx, runID, variant, idx)
	if err != nil {
		return StepSummary{}, err
	}
	if len(out) != 1 {
		return StepSummary{}, fmt.Errorf("summarise step %d of %s: step not found", idx+1, variant)
	}
	return out[0], nil
}

func (s *Store) summaries(ctx context.Context, runID, variant string, idx int) ([]StepSummary, error) {
	stored, err := s.storedSummaries(ctx, runID, variant, idx)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT variant, idx FROM steps WHERE run_id = $1 AND ($2 = '' OR variant = $2) AND ($3 < 0 OR idx = $3)
		ORDER BY started_at, variant, idx`, runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("list the steps of run %s: %w", runID, err)
	}
	type key struct {
		variant string
		idx     int
	}
	steps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (key, error) {
		var k key
		return k, r.Scan(&k.variant, &k.idx)
	})
	if err != nil {
		return nil, fmt.Errorf("list the steps of run %s: %w", runID, err)
	}
	out := make([]StepSummary, 0, len(steps))
	for _, k := range steps {
		if i := slices.IndexFunc(stored, func(m StepSummary) bool { return m.Variant == k.variant && m.Step == k.idx }); i >= 0 {
			out = append(out, stored[i])
			continue
		}
		live, err := liveSummaries(ctx, s.pool, s.dialect(), runID, k.variant, k.idx)
		if err != nil {
			return nil, err
		}
		out = append(out, live...)
	}
	return out, nil
}

// liveSummaries computes the client-side figures of steps from the raw rows, read
// through db (the pool, or a transaction's snapshot).
func liveSummaries(ctx context.Context, db queryer, d dialect, runID, variant string, idx int) ([]StepSummary, error) {
	rows, err := db.Query(ctx, summarySQL[d], runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("summarise run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []StepSummary
	for rows.Next() {
		var (
			r          StepSummary
			from, to   time.Time
			mean, lag  float64
			pct        []int64
			mn, mx, lp int64
			workload   []byte
			stepRate   *float64
		)
		if err := rows.Scan(&r.Variant, &r.Step, &r.Instances, &r.InstancesSeen, &r.Users, &from, &to, &r.Count, &r.Errors, &r.Bytes,
			&mean, &pct, &mn, &mx, &lag, &lp, &r.Missed, &workload, &stepRate); err != nil {
			return nil, fmt.Errorf("summarise run %s: %w", runID, err)
		}
		r.From, r.To = from, to
		r.Seconds = max(to.Sub(from).Seconds(), 0)
		r.Mean, r.SendLagMean = usFloat(mean), usFloat(lag)
		r.P50, r.P90, r.P99, r.P999 = us(pct[0]), us(pct[1]), us(pct[2]), us(pct[3])
		r.Min, r.Max, r.SendLagP99 = us(mn), us(mx), us(lp)
		if r.Seconds > 0 {
			r.Throughput = float64(r.Count) / r.Seconds
		}
		r.Open, r.OfferedRate = offered(workload, r.InstancesSeen, stepRate)
		if r.Open {
			r.Users = 0
		}
		r.ErrorsByClass = map[string]int64{}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summarise run %s: %w", runID, err)
	}
	rows, err = db.Query(ctx, errorClassesSQL, runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("count the errors of run %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			v             string
			i             int
			class, status int16
			n             int64
		)
		if err := rows.Scan(&v, &i, &class, &status, &n); err != nil {
			return nil, fmt.Errorf("count the errors of run %s: %w", runID, err)
		}
		if j := slices.IndexFunc(out, func(m StepSummary) bool { return m.Variant == v && m.Step == i }); j >= 0 {
			out[j].ErrorsByClass[errorClass(class, status)] += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count the errors of run %s: %w", runID, err)
	}
	return out, nil
}

// errorClass names a failed request's class: its transport error class, else http_NNN.
func errorClass(class, status int16) string {
	if class != 0 {
		return sample.ErrClass(class).String()
	}
	return fmt.Sprintf("http_%d", status)
}

// offered reads a variant's workload as the plan stored it: whether it is an open loop
// and, then, the rate offered in all by n instances: the step's own rate in all
// (stepRate, a ramp of rates) or the workload's.
func offered(workload []byte, n int, stepRate *float64) (open bool, rate *float64) {
	var w struct {
		Model   string  `json:"model"`
		Rate    float64 `json:"rate"`
		RatePer string  `json:"rate_per"`
	}
	if json.Unmarshal(workload, &w) != nil || w.Model != "open" {
		return false, nil
	}
	if stepRate != nil {
		return true, stepRate
	}
	r := w.Rate * float64(n)
	if w.RatePer == "total" {
		r = w.Rate
	}
	return true, &r
}

func us(v int64) time.Duration         { return time.Duration(v) * time.Microsecond }
func usFloat(v float64) time.Duration  { return time.Duration(v * float64(time.Microsecond)) }
func durationUS(d time.Duration) int64 { return d.Microseconds() }

// ComputeStepMetrics computes the figures of one finished step (its end recorded with
// EndStep) from the raw rows, stores them, replacing any stored before, and returns
// them: the client-side figures, stalls, and the container metrics of apps over the
// measured window. It is what every later reader of the step sees.
func (s *Store) ComputeStepMetrics(ctx context.Context, runID, variant string, idx int, apps []AppRole) (StepSummary, error) {
	if err := s.Settle(ctx); err != nil {
		return StepSummary{}, err
	}
	live, err := liveSummaries(ctx, s.pool, s.dialect(), runID, variant, idx)
	if err != nil {
		return StepSummary{}, err
	}
	if len(live) != 1 {
		return StepSummary{}, fmt.Errorf("compute the metrics of step %d of %s: step not found", idx+1, variant)
	}
	m := live[0]
	if err := s.stalls(ctx, runID, &m); err != nil {
		return StepSummary{}, err
	}
	if err := s.appTimingMeans(ctx, runID, &m); err != nil {
		return StepSummary{}, err
	}
	if err := s.dbConnections(ctx, runID, &m); err != nil {
		return StepSummary{}, err
	}
	for _, a := range apps {
		am, err := appStepMetrics(ctx, s.pool, runID, a, m.From, m.To)
		if err != nil {
			return StepSummary{}, err
		}
		m.Apps = append(m.Apps, am)
	}
	m.Stored = true
	if err := s.storeStepMetrics(ctx, runID, &m); err != nil {
		return StepSummary{}, err
	}
	if err := s.ComputeStepSeries(ctx, runID, variant, idx); err != nil {
		return StepSummary{}, err
	}
	return m, nil
}

// appTimingMeansSQL averages the app timings of a step's measured requests.
const appTimingMeansSQL = `
SELECT count(*), avg(a.total_us)::float8, avg(a.pool_wait_us)::float8, avg(a.query_us)::float8
FROM workers w
JOIN samples s ON s.worker_id = w.id AND s.step = $3 AND NOT s.warmup
JOIN app_timings a ON a.run_id = w.run_id AND a.worker_id = s.worker_id AND a.seq = s.seq
WHERE w.run_id = $1 AND w.variant = $2`

// appTimingMeans fills m's app timings from the rows flushed for its requests.
func (s *Store) appTimingMeans(ctx context.Context, runID string, m *StepSummary) error {
	var total, wait, query *float64
	if err := s.pool.QueryRow(ctx, appTimingMeansSQL, runID, m.Variant, m.Step).Scan(&m.AppTimed, &total, &wait, &query); err != nil {
		return fmt.Errorf("average the app timings of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	m.AppTotal, m.AppPoolWait, m.AppQuery = fromUS(total), fromUS(wait), fromUS(query)
	return nil
}
