package resultsdb

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReportRows are the recorded rows of one run that a report is built from: read from the
// results database by Store.ReadRun, or from an export directory by package exportdir,
// which reproduces every figure below exactly as the SQL here defines it. Indexes (Idx)
// are 0-based steps, as the tables store them.
type ReportRows struct {
	// dialect is the SQL of the database the rows are read from.
	dialect dialect
	Run     Run
	Spec    string // the spec text the run was started with
	// Variants in the order their ramps started (variants without steps last), then by
	// name; Repeats tells whether any variant of the run is a repeat beyond the first.
	Variants []ReportVariant
	Repeats  bool
	Steps    []ReportStep // by variant (byte order), then step
	// Apps are the step_app_metrics rows by variant, step, role, app name; after them,
	// from ReadLiveRun, the running steps' so far.
	Apps []ReportApp
	// Pulls counts the run's router log pulls, PullSources their sources in order,
	// space-separated; BudgetExhausted whether one spent its document budget; HasRouter
	// and HasApp whether the run has router requests and app timings.
	Pulls             int
	PullSources       string
	BudgetExhausted   bool
	HasRouter, HasApp bool
	RouterSteps       []RouterStepMetrics // RouterMetrics, read when Pulls > 0 or both HasRouter and HasApp
	IntervalS         float64             // the width of Series' and Memory's intervals
	Series            map[string][]SeriesPoint
	Memory            map[string][]MemoryPoint
	Findings          []ReportFinding // run_events of kind check at level warn or fail, by id
	Flushes           []FlushSum      // by variant, step
	Faults            []Fault         // the injected faults, in order, with the requests around them
}

// ReportVariant is a variant of the run as its run_variants row says (empty fields for a
// variant with steps but no such row).
type ReportVariant struct {
	Name, App, GeneratorApp string
	Model                   string // the workload's model
	Config                  string // config, or the name when empty
	Repeat                  int    // 1 without a row
}

// ReportStep is a steps row with its step_metrics (zero values when HasMetrics is
// false), offsets in seconds from the run's epoch. Live marks a step without stored
// metrics whose client-side figures ReadLiveRun computed from its samples so far (as
// StepSummaries does; no stalls), and its apps' container metrics over its window so
// far (in Apps, as ComputeStepMetrics computes them).
type ReportStep struct {
	Variant              string
	Idx                  int
	HasMetrics, Live     bool
	StartS, WarmupEndS   float64
	EndS                 *float64
	Seconds              float64
	Count, Errors, Bytes int64
	ErrorsByClass        []byte // a JSON object
	Throughput, MeanUS   float64
	P50US, P90US, P99US  int64
	P999US, MinUS, MaxUS int64
	// Instances, InstancesSeen and Users are step_metrics', else the steps row's.
	Instances, InstancesSeen, Users int
	OfferedRate                     *float64
	Missed                          int64
	SendLagMeanUS                   float64
	SendLagP99US                    int64
	StalledMS, Omitted              int64
}

// ReportApp is a step_app_metrics row: the metrics of one app in step Idx of Variant.
type ReportApp struct {
	Variant string
	Idx     int
	AppStepMetrics
}

// SeriesPoint is one interval of a variant's step: K is the interval's number
// (intended_us / width in µs), N its requests, Errs those without a response or with a
// status ≥ 400, P50US and P99US the observed p50 and p99 latency (percentile_disc),
// MeanUS the mean intended time (µs since the epoch, the average of bigints in numeric,
// as float8). P50US is nil only where no reader could know it: a step stored before
// schema v16 read from an export directory without its samples (the database computes
// such a step's series from its samples).
type SeriesPoint struct {
	Idx               int
	K, N, Errs, P99US int64
	P50US             *int64
	MeanUS            float64
}

// MemoryPoint is one interval of an app's memory: T the first poll's offset in seconds,
// MeanBytes the mean over the interval's polls (in time order) of each poll's mean over
// its RUNNING instances, QuotaBytes the largest limit.
type MemoryPoint struct {
	T, MeanBytes float64
	QuotaBytes   *int64
}

// ReportFinding is a finding as run_events stores it; Idx is -1 when it concerns no
// step, Evidence the JSON object of its figures or empty.
type ReportFinding struct {
	At                    time.Time
	Variant               string
	Idx                   int
	Level, Message, Check string
	Evidence              []byte
}

// FlushSum sums up a variant's app-timing flushes of a step: Instances counts the
// distinct app instances, Failed the flushes with an error.
type FlushSum struct {
	Variant                                string
	Idx                                    int
	Instances, Failed                      int
	RowsReceived, Stored, Foreign, Dropped int64
}

// StepsSpan is the span of a run's steps in seconds from its epoch: the latest end of a
// step (its start when it has not ended), at least 0.
func StepsSpan(steps []ReportStep) float64 {
	var end float64
	for _, s := range steps {
		e := s.StartS
		if s.EndS != nil {
			e = *s.EndS
		}
		end = max(end, e)
	}
	return end
}

// ReadRun reads the rows of run id a report is built from, in one read-only snapshot so
// every figure comes from the same moment even while the run goes on. width is called
// once, with StepsSpan of the run's steps, and gives the width in seconds of the series'
// and memory's intervals. Every figure is aggregated here: the queries return per step,
// per interval and per layer rows, never per request. An error wraps ErrRunNotFound when
// there is no such run.
func (s *Store) ReadRun(ctx context.Context, id string, width func(spanS float64) float64) (*ReportRows, error) {
	return s.readRun(ctx, id, width, false)
}

// ReadLiveRun reads what ReadRun reads, and computes the figures of the steps without
// stored metrics (a step still running) from their samples and container metrics so
// far, in the same snapshot, marking them Live: what a live view of a run shows each
// second.
func (s *Store) ReadLiveRun(ctx context.Context, id string, width func(spanS float64) float64) (*ReportRows, error) {
	return s.readRun(ctx, id, width, true)
}

func (s *Store) readRun(ctx context.Context, id string, width func(spanS float64) float64, live bool) (*ReportRows, error) {
	run, err := s.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("report on run %s: %w", id, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The per-interval percentiles sort a run's samples: in memory, not in temporary
	// files; and the queries are too short for JIT compilation to pay off.
	if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'; SET LOCAL jit = off`); err != nil {
		return nil, fmt.Errorf("report on run %s: %w", id, err)
	}
	r := &ReportRows{Run: *run, dialect: s.dialect()}
	if r.Spec, err = runSpec(ctx, tx, id); err != nil {
		return nil, err
	}
	for _, read := range []func(context.Context, pgx.Tx, *ReportRows) error{readVariants, readSteps, readApps, readPulls} {
		if err := read(ctx, tx, r); err != nil {
			return nil, fmt.Errorf("report on run %s: %w", id, err)
		}
	}
	if live {
		if err := liveSteps(ctx, tx, r); err != nil {
			return nil, fmt.Errorf("report on run %s: %w", id, err)
		}
	}
	if r.Pulls > 0 || (r.HasRouter && r.HasApp) {
		if r.RouterSteps, err = routerMetrics(ctx, tx, id); err != nil {
			return nil, err
		}
	}
	r.IntervalS = width(StepsSpan(r.Steps))
	for _, read := range []func(context.Context, pgx.Tx, *ReportRows) error{readSeries, readMemory, readFindings, readFlushes, readRunFaults} {
		if err := read(ctx, tx, r); err != nil {
			return nil, fmt.Errorf("report on run %s: %w", id, err)
		}
	}
	return r, nil
}

func readVariants(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, `
SELECT v.variant, coalesce(rv.app_name, ''), coalesce(rv.generator_app, ''), coalesce(rv.workload->>'model', ''),
       coalesce(nullif(rv.config, ''), v.variant), coalesce(rv.repeat, 1),
       EXISTS (SELECT 1 FROM run_variants r2 WHERE r2.run_id = $1 AND r2.repeat > 1)
FROM (SELECT variant, min(started_at) AS first FROM steps WHERE run_id = $1 GROUP BY variant
      UNION ALL
      SELECT variant, NULL FROM run_variants rv0 WHERE run_id = $1
        AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run_id = $1 AND s.variant = rv0.variant)) v
LEFT JOIN run_variants rv ON rv.run_id = $1 AND rv.variant = v.variant
ORDER BY v.first NULLS LAST, v.variant`, r.Run.ID)
	if err != nil {
		return fmt.Errorf("read the variants: %w", err)
	}
	r.Variants, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportVariant, error) {
		var v ReportVariant
		err := row.Scan(&v.Name, &v.App, &v.GeneratorApp, &v.Model, &v.Config, &v.Repeat, &r.Repeats)
		return v, err
	})
	if err != nil {
		return fmt.Errorf("read the variants: %w", err)
	}
	return nil
}

func readSteps(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, `
SELECT st.variant, st.idx, (sm.step IS NOT NULL),
       extract(epoch FROM st.started_at - r.epoch)::float8, extract(epoch FROM st.warmup_until - r.epoch)::float8,
       extract(epoch FROM st.ended_at - r.epoch)::float8,
       coalesce(sm.seconds, 0), coalesce(sm.count, 0), coalesce(sm.errors, 0), coalesce(sm.errors_by_class, '{}'),
       coalesce(sm.bytes, 0), coalesce(sm.throughput, 0), coalesce(sm.mean_us, 0),
       coalesce(sm.p50_us, 0), coalesce(sm.p90_us, 0), coalesce(sm.p99_us, 0), coalesce(sm.p999_us, 0),
       coalesce(sm.min_us, 0), coalesce(sm.max_us, 0),
       coalesce(sm.instances, st.instances), coalesce(sm.instances_seen, st.instances_seen, st.instances), coalesce(sm.users, st.users),
       sm.offered_rate, coalesce(sm.missed, 0), coalesce(sm.send_lag_mean_us, 0), coalesce(sm.send_lag_p99_us, 0),
       coalesce(sm.stalled_ms, 0), coalesce(sm.omitted, 0)
FROM steps st
JOIN runs r ON r.id = st.run_id
LEFT JOIN step_metrics sm ON sm.run_id = st.run_id AND sm.variant = st.variant AND sm.step = st.idx
WHERE st.run_id = $1
ORDER BY st.variant, st.idx`, r.Run.ID)
	if err != nil {
		return fmt.Errorf("read the step metrics: %w", err)
	}
	r.Steps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportStep, error) {
		var s ReportStep
		err := row.Scan(&s.Variant, &s.Idx, &s.HasMetrics, &s.StartS, &s.WarmupEndS, &s.EndS,
			&s.Seconds, &s.Count, &s.Errors, &s.ErrorsByClass, &s.Bytes, &s.Throughput, &s.MeanUS,
			&s.P50US, &s.P90US, &s.P99US, &s.P999US, &s.MinUS, &s.MaxUS,
			&s.Instances, &s.InstancesSeen, &s.Users, &s.OfferedRate, &s.Missed, &s.SendLagMeanUS, &s.SendLagP99US,
			&s.StalledMS, &s.Omitted)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("read the step metrics: %w", err)
	}
	return nil
}

// liveSteps gives the steps without stored metrics their client-side figures so far,
// and their apps' (liveApps); a step still in its warm-up has none (warm-up is
// excluded), and stays without.
func liveSteps(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.HasMetrics {
			continue
		}
		sums, err := liveSummaries(ctx, tx, r.dialect, r.Run.ID, st.Variant, st.Idx)
		if err != nil {
			return err
		}
		if len(sums) != 1 || sums[0].Count == 0 {
			continue
		}
		m := sums[0]
		classes, err := json.Marshal(m.ErrorsByClass)
		if err != nil {
			return err
		}
		st.Live, st.Seconds, st.Count, st.Errors, st.ErrorsByClass, st.Bytes = true, m.Seconds, m.Count, m.Errors, classes, m.Bytes
		st.Throughput, st.MeanUS = m.Throughput, float64(m.Mean)/float64(time.Microsecond)
		st.P50US, st.P90US, st.P99US, st.P999US = durationUS(m.P50), durationUS(m.P90), durationUS(m.P99), durationUS(m.P999)
		st.MinUS, st.MaxUS, st.Missed = durationUS(m.Min), durationUS(m.Max), m.Missed
		st.Instances, st.InstancesSeen, st.Users, st.OfferedRate = m.Instances, m.InstancesSeen, m.Users, m.OfferedRate
		st.SendLagMeanUS, st.SendLagP99US = float64(m.SendLagMean)/float64(time.Microsecond), durationUS(m.SendLagP99)
		if err := liveApps(ctx, tx, r, st.Variant, st.Idx, m.From, m.To); err != nil {
			return err
		}
	}
	return nil
}

// liveApps adds to r.Apps what the running step idx of variant has of the variant's
// app and generator app (its run_variants row's) over its measured window so far,
// [from, to]: the CPU and memory a finished step stores, by the same code
// (appStepMetrics). Only the run's deployment knows the cores of the cells the
// instances run on (AppRole.HostCores), so the CPU available, and the utilisation, come
// when the step ends. An app with no reading for the window yet (none collected, as in a
// run without a foundation's container metrics) gets no row.
func liveApps(ctx context.Context, tx pgx.Tx, r *ReportRows, variant string, idx int, from, to time.Time) error {
	vi := slices.IndexFunc(r.Variants, func(v ReportVariant) bool { return v.Name == variant })
	if vi < 0 {
		return nil
	}
	v := r.Variants[vi]
	for _, a := range []AppRole{{Name: v.App, Role: RoleApp}, {Name: v.GeneratorApp, Role: RoleGenerator}} {
		if a.Name == "" {
			continue
		}
		m, err := appStepMetrics(ctx, tx, r.Run.ID, a, from, to)
		if err != nil {
			return fmt.Errorf("step %d of %s: %w", idx+1, variant, err)
		}
		if m.Instances == 0 && m.MemMeanBytes == nil {
			continue
		}
		r.Apps = append(r.Apps, ReportApp{Variant: variant, Idx: idx, AppStepMetrics: m})
	}
	return nil
}

func readApps(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, storedAppsSQL, r.Run.ID, "", -1)
	if err != nil {
		return fmt.Errorf("read the step app metrics: %w", err)
	}
	r.Apps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportApp, error) {
		var a ReportApp
		err := row.Scan(appStepRow(&a.Variant, &a.Idx, &a.AppStepMetrics)...)
		return a, err
	})
	if err != nil {
		return fmt.Errorf("read the step app metrics: %w", err)
	}
	return nil
}

func readPulls(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM router_log_pulls WHERE run_id = $1),
		(SELECT coalesce(bool_or(budget_exhausted), false) FROM router_log_pulls WHERE run_id = $1),
		(SELECT coalesce(string_agg(source, ' ' ORDER BY source), '') FROM router_log_pulls WHERE run_id = $1),
		EXISTS (SELECT 1 FROM router_requests WHERE run_id = $1), EXISTS (SELECT 1 FROM app_timings WHERE run_id = $1)`,
		r.Run.ID).Scan(&r.Pulls, &r.BudgetExhausted, &r.PullSources, &r.HasRouter, &r.HasApp); err != nil {
		return fmt.Errorf("look for router logs and app timings: %w", err)
	}
	return nil
}

// readSeries reads each variant's series: per second, each step's from step_series where
// it is stored and computed from its samples with the same SQL where not (a step still
// running); in wider intervals computed from the samples, read by key.
func readSeries(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	r.Series = map[string][]SeriesPoint{}
	for _, v := range r.Variants {
		pts, err := seriesOf(ctx, tx, r.dialect, r.Run.ID, v.Name, r.IntervalS)
		if err != nil {
			return fmt.Errorf("read the time series of %s: %w", v.Name, err)
		}
		r.Series[v.Name] = pts
	}
	return nil
}

// seriesSQL is a variant's series in intervals of $3 µs, by step, in time order.
var seriesSQL = [...]string{onePostgres: seriesQuery(onePostgres), citusSQL: seriesQuery(citusSQL)}

func seriesQuery(d dialect) string {
	return intervalsSQL(d, `FROM samples s
WHERE s.worker_id = ANY(ARRAY(SELECT id FROM workers WHERE run_id = $2 AND variant = $1))`,
		column{"s.step::int", "step"}, column{"s.intended_us / $3", "k"}) + `
ORDER BY mean`
}

func seriesOf(ctx context.Context, tx pgx.Tx, d dialect, runID, variant string, width float64) ([]SeriesPoint, error) {
	if width == 1 {
		return secondsOf(ctx, tx, d, runID, variant)
	}
	rows, err := tx.Query(ctx, seriesSQL[d], variant, runID, int64(width*1e6))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanSeriesPoint)
}

func scanSeriesPoint(row pgx.CollectableRow) (SeriesPoint, error) {
	var p SeriesPoint
	err := row.Scan(&p.Idx, &p.K, &p.N, &p.Errs, &p.P50US, &p.P99US, &p.MeanUS)
	return p, err
}

// secondsOf reads a variant's series per second: the stored series of its steps, and
// for a step without one (it is still running, or its run was recorded before they were
// stored) or whose stored one has no p50 (stored before schema v16) the same series
// computed from its samples (stepSeriesSQL); in time order.
func secondsOf(ctx context.Context, tx pgx.Tx, d dialect, runID, variant string) ([]SeriesPoint, error) {
	rows, err := tx.Query(ctx, `
SELECT ss.step::int, x.k, x.n, x.errs, x.p50, x.p99, x.mean
FROM step_series ss
CROSS JOIN LATERAL unnest(ss.second, ss.count, ss.errors, ss.p50_us, ss.p99_us, ss.intended_mean_us) AS x(k, n, errs, p50, p99, mean)
WHERE ss.run_id = $1 AND ss.variant = $2 AND ss.p50_us IS NOT NULL`, runID, variant)
	if err != nil {
		return nil, err
	}
	pts, err := pgx.CollectRows(rows, scanSeriesPoint)
	if err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT idx FROM steps st WHERE run_id = $1 AND variant = $2
		AND NOT EXISTS (SELECT 1 FROM step_series ss WHERE ss.run_id = $1 AND ss.variant = $2 AND ss.step = st.idx AND ss.p50_us IS NOT NULL)
		ORDER BY idx`, runID, variant)
	if err != nil {
		return nil, err
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	for _, idx := range missing {
		var (
			ks, ns, es, p50s, p99s []int64
			ms                     []float64
		)
		if err := tx.QueryRow(ctx, stepSeriesSQL[d], runID, variant, idx).Scan(&ks, &ns, &es, &p50s, &p99s, &ms); err != nil {
			return nil, fmt.Errorf("step %d: %w", idx+1, err)
		}
		for i := range ks {
			pts = append(pts, SeriesPoint{Idx: idx, K: ks[i], N: ns[i], Errs: es[i], P50US: &p50s[i], P99US: p99s[i], MeanUS: ms[i]})
		}
	}
	slices.SortStableFunc(pts, func(a, b SeriesPoint) int { return cmp.Compare(a.MeanUS, b.MeanUS) })
	return pts, nil
}

// readMemory reads every app's memory per instance over the run, per interval: the
// polls' means averaged in time order (an ordered avg, so the float sum has one order).
func readMemory(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, `
WITH polls AS (
    SELECT cm.app_name AS app, extract(epoch FROM cm.at - r.epoch)::float8 AS t, avg(cm.mem_bytes)::float8 AS mem,
           max(cm.mem_quota_bytes) AS quota
    FROM container_metrics cm JOIN runs r ON r.id = cm.run_id
    WHERE cm.run_id = $1 AND cm.mem_bytes IS NOT NULL AND cm.state = 'RUNNING'
    GROUP BY cm.app_name, cm.at, r.epoch)
SELECT app, min(t), avg(mem ORDER BY t)::float8, max(quota) FROM polls GROUP BY app, floor(t / $2) ORDER BY 1, 2`, r.Run.ID, r.IntervalS)
	if err != nil {
		return fmt.Errorf("read the memory: %w", err)
	}
	defer rows.Close()
	r.Memory = map[string][]MemoryPoint{}
	for rows.Next() {
		var (
			app string
			p   MemoryPoint
		)
		if err := rows.Scan(&app, &p.T, &p.MeanBytes, &p.QuotaBytes); err != nil {
			return fmt.Errorf("read the memory: %w", err)
		}
		r.Memory[app] = append(r.Memory[app], p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the memory: %w", err)
	}
	return nil
}

func readFindings(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, `SELECT at, coalesce(variant, ''), coalesce(step, -1), level, message, coalesce(check_name, ''), evidence
FROM run_events WHERE run_id = $1 AND kind = 'check' AND level IN ('warn', 'fail') ORDER BY id`, r.Run.ID)
	if err != nil {
		return fmt.Errorf("read the findings: %w", err)
	}
	r.Findings, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportFinding, error) {
		var f ReportFinding
		err := row.Scan(&f.At, &f.Variant, &f.Idx, &f.Level, &f.Message, &f.Check, &f.Evidence)
		return f, err
	})
	if err != nil {
		return fmt.Errorf("read the findings: %w", err)
	}
	return nil
}

func readFlushes(ctx context.Context, tx pgx.Tx, r *ReportRows) error {
	rows, err := tx.Query(ctx, `
SELECT variant, step, count(DISTINCT (app_name, instance_index))::int, (count(*) FILTER (WHERE error <> ''))::int,
       sum(rows_received)::bigint, sum(stored)::bigint, sum(foreign_rows)::bigint, sum(dropped)::bigint
FROM app_timing_flushes WHERE run_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`, r.Run.ID)
	if err != nil {
		return fmt.Errorf("read the app timing flushes: %w", err)
	}
	r.Flushes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (FlushSum, error) {
		var f FlushSum
		err := row.Scan(&f.Variant, &f.Idx, &f.Instances, &f.Failed, &f.RowsReceived, &f.Stored, &f.Foreign, &f.Dropped)
		return f, err
	})
	if err != nil {
		return fmt.Errorf("read the app timing flushes: %w", err)
	}
	return nil
}
