package resultsdb

import (
	"context"
	"fmt"
	"time"
)

// StepSummary is the client-side view of one ramp step of one variant, warm-up excluded.
type StepSummary struct {
	Variant   string
	Step      int
	Instances int
	Users     int
	// Seconds is the measured window: from the end of warm-up to the end of the step.
	Seconds float64
	Count   int64
	// Errors counts requests without a response or with a status of 400 or more.
	Errors                        int64
	Bytes                         int64
	Mean, P50, P90, P99, Min, Max time.Duration
	Throughput                    float64 // requests per second over Seconds
	// Missed counts open-loop sends that were due in the step but never went out
	// because every allowed request was in flight (whole step, warm-up included).
	Missed int64
	// Omitted estimates, for closed-loop steps, the requests users would have sent had
	// they not been stalled on slow responses (coordinated omission): for each response
	// lasting at least StallCycles usual cycles (median latency plus think time), one
	// per cycle beyond the first. Ordinary jitter does not count; a stall of many cycles
	// does, and the percentiles of such a step understate the latency an independent
	// arrival would see. 0 for open-loop steps.
	Omitted int64
}

// OmissionShare is Omitted relative to Count.
func (s StepSummary) OmissionShare() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Omitted) / float64(s.Count)
}

// OmissionWarnAt is the OmissionShare from which reports warn that a closed loop hid
// stalls.
const OmissionWarnAt = 0.05

// StallCycles is how many usual cycles a response must last to count as a stall.
const StallCycles = 10

// ErrorRate is Errors/Count, 0 when nothing was sent.
func (s StepSummary) ErrorRate() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Count)
}

// summarySQL computes every figure from the rows; percentiles are observed values
// (percentile_disc), as latency histograms report them.
const summarySQL = `
SELECT st.variant, st.idx, st.instances, st.users,
       greatest(extract(epoch FROM coalesce(st.ended_at, now()) - st.warmup_until), 0)::float8,
       count(s.seq),
       count(s.seq) FILTER (WHERE s.error <> 0 OR s.status >= 400),
       coalesce(sum(s.bytes), 0)::bigint,
       coalesce(avg(s.latency_us), 0)::float8,
       coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY s.latency_us), 0),
       coalesce(percentile_disc(0.9) WITHIN GROUP (ORDER BY s.latency_us), 0),
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY s.latency_us), 0),
       coalesce(min(s.latency_us), 0),
       coalesce(max(s.latency_us), 0),
       (SELECT coalesce(sum(ws.missed), 0) FROM worker_steps ws JOIN workers w2 ON w2.id = ws.worker_id
         WHERE w2.run_id = st.run_id AND w2.variant = st.variant AND ws.step = st.idx)::bigint
FROM steps st
LEFT JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
LEFT JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3)
GROUP BY st.run_id, st.variant, st.idx, st.instances, st.users, st.started_at, st.warmup_until, st.ended_at
ORDER BY st.started_at, st.variant, st.idx`

// omittedSQL estimates coordinated omission per closed-loop step (see
// StepSummary.Omitted), warm-up excluded.
const omittedSQL = `
SELECT st.variant, st.idx,
       coalesce(sum(floor(s.latency_us / m.cycle) - 1) FILTER (WHERE s.latency_us >= $4 * m.cycle), 0)::bigint
FROM steps st
LEFT JOIN run_variants rv ON rv.run_id = st.run_id AND rv.variant = st.variant
JOIN LATERAL (
    SELECT nullif(percentile_disc(0.5) WITHIN GROUP (ORDER BY s2.latency_us)
                  + coalesce((rv.workload->>'think_time_ns')::bigint, 0) / 1000, 0)::float8 AS cycle
    FROM workers w2 JOIN samples s2 ON s2.worker_id = w2.id AND s2.step = st.idx AND NOT s2.warmup
    WHERE w2.run_id = st.run_id AND w2.variant = st.variant) m ON true
JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3)
  AND coalesce(rv.workload->>'model', 'closed') <> 'open'
GROUP BY st.variant, st.idx`

// StepSummaries returns one summary per step of the run, in the order the steps ran.
func (s *Store) StepSummaries(ctx context.Context, runID string) ([]StepSummary, error) {
	return s.summaries(ctx, runID, "", -1)
}

// StepSummary returns the summary of one step.
func (s *Store) StepSummary(ctx context.Context, runID, variant string, idx int) (StepSummary, error) {
	out, err := s.summaries(ctx, runID, variant, idx)
	if err != nil {
		return StepSummary{}, err
	}
	if len(out) != 1 {
		return StepSummary{}, fmt.Errorf("summarise step %d of %s: step not found", idx, variant)
	}
	return out[0], nil
}

func (s *Store) summaries(ctx context.Context, runID, variant string, idx int) ([]StepSummary, error) {
	rows, err := s.pool.Query(ctx, summarySQL, runID, variant, idx)
	if err != nil {
		return nil, fmt.Errorf("summarise run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []StepSummary
	for rows.Next() {
		var (
			r                     StepSummary
			mean                  float64
			p50, p90, p99, mn, mx int64
		)
		if err := rows.Scan(&r.Variant, &r.Step, &r.Instances, &r.Users, &r.Seconds, &r.Count, &r.Errors, &r.Bytes,
			&mean, &p50, &p90, &p99, &mn, &mx, &r.Missed); err != nil {
			return nil, fmt.Errorf("summarise run %s: %w", runID, err)
		}
		us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
		r.Mean = time.Duration(mean * float64(time.Microsecond))
		r.P50, r.P90, r.P99, r.Min, r.Max = us(p50), us(p90), us(p99), us(mn), us(mx)
		if r.Seconds > 0 {
			r.Throughput = float64(r.Count) / r.Seconds
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summarise run %s: %w", runID, err)
	}
	rows, err = s.pool.Query(ctx, omittedSQL, runID, variant, idx, StallCycles)
	if err != nil {
		return nil, fmt.Errorf("estimate omissions of run %s: %w", runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			v       string
			i       int
			omitted int64
		)
		if err := rows.Scan(&v, &i, &omitted); err != nil {
			return nil, fmt.Errorf("estimate omissions of run %s: %w", runID, err)
		}
		for j := range out {
			if out[j].Variant == v && out[j].Step == i {
				out[j].Omitted = omitted
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("estimate omissions of run %s: %w", runID, err)
	}
	return out, nil
}
