package resultsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// StepSummary is the figures of one ramp step of one variant, warm-up excluded: the
// client side from the samples, and, once the step's metrics are stored
// (ComputeStepMetrics), stalls and the container metrics of its apps. Step is 0-based as
// in the database; people read it from 1.
type StepSummary struct {
	Variant string
	Step    int
	// Instances is the generator instances asked for, InstancesSeen the most seen alive
	// (more when a user scaled them by hand).
	Instances, InstancesSeen int
	// Users is the users per instance of a closed loop; 0 for an open loop.
	Users int
	// Open tells an open loop, whose offered load is OfferedRate requests per second in
	// all (nil otherwise).
	Open        bool
	OfferedRate *float64
	// From and To are the measured window: from the end of warm-up to the planned end
	// of the step (or its real end, if earlier); Seconds its length.
	From, To time.Time
	Seconds  float64
	Count    int64
	// Errors counts requests without a response or with a status of 400 or more;
	// ErrorsByClass splits them by transport error class (timeout, refused, …) or
	// status (http_503).
	Errors        int64
	ErrorsByClass map[string]int64
	Bytes         int64
	// Latencies count from the intended send time. Percentiles are observed values.
	Mean, P50, P90, P99, P999, Min, Max time.Duration
	Throughput                          float64 // requests per second over Seconds
	// Missed counts open-loop sends that were due in the step but never went out
	// because every allowed request was in flight (whole step, warm-up included).
	Missed int64
	// SendLagMean and SendLagP99 are the generators' own delay between when a request
	// was due (open loop: its slot; closed loop: when its user was ready) and when it
	// went out: a busy generator shows here before anywhere else.
	SendLagMean, SendLagP99 time.Duration
	// Stalled is the longest time the target completed (almost) nothing (see
	// StallCycles); Omitted estimates, in a closed loop, the requests its users would
	// have sent meanwhile at the step's usual rate (coordinated omission: the step's
	// percentiles understate the latency an independent arrival would have seen).
	Stalled time.Duration
	Omitted int64
	// AppTimed is how many of the step's requests have app timings (the apps' own
	// account, flushed at the step's end); AppTotal, AppPoolWait and AppQuery are their
	// means, nil without any.
	AppTimed                        int64
	AppTotal, AppPoolWait, AppQuery *time.Duration
	// DBConnections is the most client connections the apps' database server had in the
	// step's window, DBMaxConnections its limit; nil when not watched.
	DBConnections, DBMaxConnections *int
	// Apps are the container metrics of the variant's app and generator app.
	Apps []AppStepMetrics
	// Stored tells figures read from step_metrics; false for a step computed live.
	Stored bool
}

// OmissionShare is Omitted relative to Count.
func (s StepSummary) OmissionShare() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Omitted) / float64(s.Count)
}

// ErrorRate is Errors/Count, 0 when nothing was sent.
func (s StepSummary) ErrorRate() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Count)
}

// OfferedLoad is the load the generators offered, in the unit of the model: requests
// per second for an open loop, concurrent users (instances seen × users) otherwise.
func (s StepSummary) OfferedLoad() float64 {
	if s.Open {
		if s.OfferedRate == nil {
			return 0
		}
		return *s.OfferedRate
	}
	return float64(s.InstancesSeen * s.Users)
}

// App returns the metrics of the app with role (RoleApp, RoleGenerator), if stored.
func (s StepSummary) App(role string) (AppStepMetrics, bool) {
	for _, a := range s.Apps {
		if a.Role == role {
			return a, true
		}
	}
	return AppStepMetrics{}, false
}

const insertStepSQL = `
INSERT INTO step_metrics (run_id, variant, step, seconds, count, errors, errors_by_class, bytes, throughput,
    mean_us, p50_us, p90_us, p99_us, p999_us, min_us, max_us, instances, instances_seen, users, offered_rate,
    missed, send_lag_mean_us, send_lag_p99_us, stalled_ms, omitted, app_timed, app_total_us, app_pool_wait_us, app_query_us,
    db_connections, db_max_connections)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31)
ON CONFLICT (run_id, variant, step) DO UPDATE SET seconds = EXCLUDED.seconds, count = EXCLUDED.count,
    errors = EXCLUDED.errors, errors_by_class = EXCLUDED.errors_by_class, bytes = EXCLUDED.bytes,
    throughput = EXCLUDED.throughput, mean_us = EXCLUDED.mean_us, p50_us = EXCLUDED.p50_us, p90_us = EXCLUDED.p90_us,
    p99_us = EXCLUDED.p99_us, p999_us = EXCLUDED.p999_us, min_us = EXCLUDED.min_us, max_us = EXCLUDED.max_us,
    instances = EXCLUDED.instances, instances_seen = EXCLUDED.instances_seen, users = EXCLUDED.users,
    offered_rate = EXCLUDED.offered_rate, missed = EXCLUDED.missed, send_lag_mean_us = EXCLUDED.send_lag_mean_us,
    send_lag_p99_us = EXCLUDED.send_lag_p99_us, stalled_ms = EXCLUDED.stalled_ms, omitted = EXCLUDED.omitted,
    app_timed = EXCLUDED.app_timed, app_total_us = EXCLUDED.app_total_us, app_pool_wait_us = EXCLUDED.app_pool_wait_us,
    app_query_us = EXCLUDED.app_query_us, db_connections = EXCLUDED.db_connections,
    db_max_connections = EXCLUDED.db_max_connections, computed_at = EXCLUDED.computed_at`

const insertAppStepSQL = `
INSERT INTO step_app_metrics (run_id, variant, step, app_name, role, instances, cpu_source, cpu_points, cpu_covered,
    cpu_mean_cores, cpu_max_cores, cpu_total_cores, mem_mean_bytes, mem_max_bytes, mem_quota_bytes, cells,
    cpu_available_cores, cpu_wait_cores, cpu_wait_share)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)`

// storeStepMetrics writes m in one transaction, replacing what the step had.
func (s *Store) storeStepMetrics(ctx context.Context, runID string, m *StepSummary) error {
	classes, err := json.Marshal(m.ErrorsByClass)
	if err != nil {
		return fmt.Errorf("store the metrics of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertStepSQL, runID, m.Variant, m.Step, m.Seconds, m.Count, m.Errors, classes, m.Bytes,
			m.Throughput, float64(m.Mean)/float64(time.Microsecond), durationUS(m.P50), durationUS(m.P90), durationUS(m.P99),
			durationUS(m.P999), durationUS(m.Min), durationUS(m.Max), m.Instances, m.InstancesSeen, m.Users, m.OfferedRate,
			m.Missed, float64(m.SendLagMean)/float64(time.Microsecond), durationUS(m.SendLagP99), m.Stalled.Milliseconds(),
			m.Omitted, m.AppTimed, optUS(m.AppTotal), optUS(m.AppPoolWait), optUS(m.AppQuery), m.DBConnections,
			m.DBMaxConnections); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM step_app_metrics WHERE run_id = $1 AND variant = $2 AND step = $3`,
			runID, m.Variant, m.Step); err != nil {
			return err
		}
		for _, a := range m.Apps {
			if _, err := tx.Exec(ctx, insertAppStepSQL, runID, m.Variant, m.Step, a.App, a.Role, a.Instances, a.CPUSource,
				a.CPUPoints, a.CPUCovered, a.CPUMeanCores, a.CPUMaxCores, a.CPUTotalCores, a.MemMeanBytes, a.MemMaxBytes,
				a.MemQuotaBytes, a.Cells, a.CPUAvailableCores, a.CPUWaitCores, a.CPUWaitShare); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store the metrics of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	return nil
}

const storedStepsSQL = `
SELECT m.variant, m.step, m.instances, m.instances_seen, m.users, m.offered_rate, st.warmup_until, m.seconds, m.count,
       m.errors, m.errors_by_class, m.bytes, m.throughput, m.mean_us, m.p50_us, m.p90_us, m.p99_us, m.p999_us, m.min_us,
       m.max_us, m.missed, m.send_lag_mean_us, m.send_lag_p99_us, m.stalled_ms, m.omitted, m.app_timed, m.app_total_us,
       m.app_pool_wait_us, m.app_query_us, m.db_connections, m.db_max_connections
FROM step_metrics m JOIN steps st ON st.run_id = m.run_id AND st.variant = m.variant AND st.idx = m.step
WHERE m.run_id = $1 AND ($2 = '' OR m.variant = $2) AND ($3 < 0 OR m.step = $3)`

// storedAppsSQL reads a run's step_app_metrics rows (of every variant when $2 is empty,
// of every step when $3 is negative) into appStepRow's destinations.
const storedAppsSQL = `
SELECT variant, step, app_name, role, instances, cpu_source, cpu_points, cpu_covered, cpu_mean_cores, cpu_max_cores,
       cpu_total_cores, mem_mean_bytes, mem_max_bytes, mem_quota_bytes, cells, cpu_available_cores, cpu_wait_cores, cpu_wait_share
FROM step_app_metrics
WHERE run_id = $1 AND ($2 = '' OR variant = $2) AND ($3 < 0 OR step = $3)
ORDER BY variant, step, role, app_name`

// appStepRow is where a row of storedAppsSQL is scanned to.
func appStepRow(variant *string, idx *int, a *AppStepMetrics) []any {
	return []any{variant, idx, &a.App, &a.Role, &a.Instances, &a.CPUSource, &a.CPUPoints, &a.CPUCovered, &a.CPUMeanCores,
		&a.CPUMaxCores, &a.CPUTotalCores, &a.MemMeanBytes, &a.MemMaxBytes, &a.MemQuotaBytes, &a.Cells, &a.CPUAvailableCores,
		&a.CPUWaitCores, &a.CPUWaitShare}
}

// storedSummaries reads the stored figures of steps.
func (s *Store) storedSummaries(ctx context.Context, runID, variant string, idx int) ([]StepSummary, error) {
	rows, err := s.pool.Query(ctx, storedStepsSQL, runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("read the step metrics of run %s: %w", runID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StepSummary, error) {
		var (
			m                                        StepSummary
			classes                                  []byte
			mean, lag                                float64
			appTotal, appWait, appQuery              *float64
			p50, p90, p99, p999, mn, mx, lp, stalled int64
		)
		err := r.Scan(&m.Variant, &m.Step, &m.Instances, &m.InstancesSeen, &m.Users, &m.OfferedRate, &m.From, &m.Seconds,
			&m.Count, &m.Errors, &classes, &m.Bytes, &m.Throughput, &mean, &p50, &p90, &p99, &p999, &mn, &mx, &m.Missed,
			&lag, &lp, &stalled, &m.Omitted, &m.AppTimed, &appTotal, &appWait, &appQuery, &m.DBConnections, &m.DBMaxConnections)
		if err != nil {
			return m, err
		}
		m.To = m.From.Add(time.Duration(m.Seconds * float64(time.Second)))
		m.Open = m.OfferedRate != nil
		m.Mean, m.SendLagMean = usFloat(mean), usFloat(lag)
		m.P50, m.P90, m.P99, m.P999, m.Min, m.Max, m.SendLagP99 = us(p50), us(p90), us(p99), us(p999), us(mn), us(mx), us(lp)
		m.Stalled = time.Duration(stalled) * time.Millisecond
		m.AppTotal, m.AppPoolWait, m.AppQuery = fromUS(appTotal), fromUS(appWait), fromUS(appQuery)
		m.Stored = true
		return m, json.Unmarshal(classes, &m.ErrorsByClass)
	})
	if err != nil {
		return nil, fmt.Errorf("read the step metrics of run %s: %w", runID, err)
	}
	rows, err = s.pool.Query(ctx, storedAppsSQL, runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("read the app step metrics of run %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			v string
			i int
			a AppStepMetrics
		)
		if err := rows.Scan(appStepRow(&v, &i, &a)...); err != nil {
			return nil, fmt.Errorf("read the app step metrics of run %s: %w", runID, err)
		}
		for j := range out {
			if out[j].Variant == v && out[j].Step == i {
				out[j].Apps = append(out[j].Apps, a)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the app step metrics of run %s: %w", runID, err)
	}
	return out, nil
}

// optUS is an optional duration in microseconds for a double precision column.
func optUS(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	v := float64(*d) / float64(time.Microsecond)
	return &v
}

// fromUS reads an optional double precision microseconds column.
func fromUS(v *float64) *time.Duration {
	if v == nil {
		return nil
	}
	d := usFloat(*v)
	return &d
}
