package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Options shape a report.
type Options struct {
	// Baseline is a run id the runs are compared with; "" for none.
	Baseline string
	// FailOn are thresholds on the changes against the baseline (ParseThresholds).
	FailOn []Threshold
	// MaxPoints bounds the points of every time series per variant (default 1500):
	// a long run is shown in wider intervals, so the report's size does not grow with
	// the run's length or its request count.
	MaxPoints int
}

// ErrNoRuns is returned by Build when given no run.
var ErrNoRuns = errors.New("no run to report on")

// Build reads everything the report shows about runIDs (and opts.Baseline) from store.
// Every figure is aggregated in Postgres: the queries return per step, per interval
// and per layer rows, never per request, so the work on this side and the report's
// size do not grow with the number of requests. It fails when a run does not exist.
func Build(ctx context.Context, store *resultsdb.Store, runIDs []string, opts Options) (*Report, error) {
	if len(runIDs) == 0 {
		return nil, ErrNoRuns
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = 1500
	}
	rep := &Report{Schema: Schema, Version: Version, Runs: []*Run{}}
	for _, id := range runIDs {
		r, err := buildRun(ctx, store, id, opts)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	if opts.Baseline != "" {
		b, err := buildRun(ctx, store, opts.Baseline, opts)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		rep.Baseline = b
		rep.Changes = changes(b, rep.Runs)
	}
	rep.Spread = spread(rep)
	rep.Thresholds = judge(opts.FailOn, rep)
	return rep, nil
}

// Failed reports whether any --fail-on threshold failed.
func (r *Report) Failed() bool {
	for _, t := range r.Thresholds {
		if t.Failed {
			return true
		}
	}
	return false
}

// querier is what the queries run on: one read-only transaction per run, so that
// every figure of a run comes from one snapshot even while the run goes on.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// q is what the queries need: the snapshot and the run.
type q struct {
	pool  querier
	run   *resultsdb.Run
	opts  Options
	notes []string
	// pulls counts the run's router log pulls, budget tells whether one spent its
	// document budget; router and app whether the run has router lines and app timings;
	// routerSteps are its coverage and decomposition sums per step.
	pulls       int
	sources     string // the pulls' sources, space-separated
	budget      bool
	router, app bool
	routerSteps []resultsdb.RouterStepMetrics
}

func (b *q) notef(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

func buildRun(ctx context.Context, store *resultsdb.Store, id string, opts Options) (*Run, error) {
	run, err := store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	tx, err := store.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("report on run %s: %w", id, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The per-interval percentiles sort a run's samples: in memory, not in temporary
	// files; and the queries are too short for JIT compilation to pay off.
	if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'; SET LOCAL jit = off`); err != nil {
		return nil, fmt.Errorf("report on run %s: %w", id, err)
	}
	b := &q{pool: tx, run: run, opts: opts}
	r := &Run{ID: run.ID, Name: run.Name, SpecFile: run.SpecFile, Status: string(run.Status), Reason: run.Reason,
		Started: run.Started.UTC(), Variants: []*Variant{}, Findings: []Finding{}}
	if run.Ended != nil {
		e := run.Ended.UTC()
		r.Ended = &e
	}
	var slo *spec.SLO
	if text, err := store.RunSpec(ctx, id); err != nil {
		return nil, err
	} else if sp, perr := spec.Parse(run.SpecFile, []byte(text), filepath.Dir(run.SpecFile)); perr != nil {
		b.notef("the run's spec does not parse any more, so its slo block is unknown: %v", firstLine(perr.Error()))
	} else if sp.SLO == nil {
		b.notef("the spec has no slo block: capacity at the SLO is not judged (add slo: to the spec)")
	} else {
		slo = sp.SLO
		r.SLO = sloOf(slo)
	}
	if r.Variants, err = b.variants(ctx); err != nil {
		return nil, err
	}
	if err := b.steps(ctx, r.Variants); err != nil {
		return nil, err
	}
	if err := b.series(ctx, store, r.Variants); err != nil {
		return nil, err
	}
	if err := b.memory(ctx, r.Variants); err != nil {
		return nil, err
	}
	if err := b.decomposition(ctx, r.Variants); err != nil {
		return nil, err
	}
	if r.Findings, err = b.findings(ctx, r.Variants); err != nil {
		return nil, err
	}
	r.Coverage, r.RouterLogSource = b.coverage(r.Variants), b.sources
	if r.Flushes, err = b.flushes(ctx); err != nil {
		return nil, err
	}
	for _, v := range r.Variants {
		v.Utilisation = utilisation(v.Steps)
		if slo != nil {
			v.Capacity = capacity(slo, v, r.Findings)
		}
	}
	if r.Repeats = repeatSpread(r.Variants); r.Repeats != nil {
		r.Comparison = compareConfigs(r.Variants, r.Repeats)
	} else {
		r.Comparison = compareVariants(r.Variants)
	}
	r.Notes = b.notes
	return r, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// variants lists the run's variants in the order their ramps started.
func (b *q) variants(ctx context.Context) ([]*Variant, error) {
	rows, err := b.pool.Query(ctx, `
SELECT v.variant, coalesce(rv.app_name, ''), coalesce(rv.generator_app, ''), coalesce(rv.workload->>'model', ''),
       coalesce(nullif(rv.config, ''), v.variant), coalesce(rv.repeat, 1),
       EXISTS (SELECT 1 FROM run_variants r2 WHERE r2.run_id = $1 AND r2.repeat > 1)
FROM (SELECT variant, min(started_at) AS first FROM steps WHERE run_id = $1 GROUP BY variant
      UNION ALL
      SELECT variant, NULL FROM run_variants rv0 WHERE run_id = $1
        AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.run_id = $1 AND s.variant = rv0.variant)) v
LEFT JOIN run_variants rv ON rv.run_id = $1 AND rv.variant = v.variant
ORDER BY v.first NULLS LAST, v.variant`, b.run.ID)
	if err != nil {
		return nil, fmt.Errorf("read the variants of run %s: %w", b.run.ID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Variant, error) {
		v := &Variant{Steps: []*Step{}}
		var (
			model   string
			repeats bool
		)
		err := r.Scan(&v.Name, &v.App, &v.GeneratorApp, &model, &v.Config, &v.Repeat, &repeats)
		if !repeats {
			v.Config, v.Repeat = "", 0
		}
		v.LoadUnit = "users"
		if model == string(spec.ModelOpen) {
			v.LoadUnit = "req/s offered"
		}
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the variants of run %s: %w", b.run.ID, err)
	}
	return out, nil
}

func variantNamed(vs []*Variant, name string) *Variant {
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// steps reads the stored step figures (step_metrics) and the apps' CPU and memory
// (step_app_metrics) of every variant, and the steps' windows.
func (b *q) steps(ctx context.Context, vs []*Variant) error {
	rows, err := b.pool.Query(ctx, `
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
ORDER BY st.variant, st.idx`, b.run.ID)
	if err != nil {
		return fmt.Errorf("read the step metrics of run %s: %w", b.run.ID, err)
	}
	defer rows.Close()
	missing := map[string][]int{}
	for rows.Next() {
		var (
			variant string
			idx     int
			has     bool
			w       StepWindow
			byClass []byte
			s       Step
		)
		if err := rows.Scan(&variant, &idx, &has, &w.StartS, &w.WarmupEndS, &w.EndS,
			&s.Seconds, &s.Count, &s.Errors, &byClass, &s.Bytes, &s.Throughput, &s.MeanUS,
			&s.P50US, &s.P90US, &s.P99US, &s.P999US, &s.MinUS, &s.MaxUS,
			&s.Instances, &s.InstancesSeen, &s.Users, &s.OfferedRate, &s.Missed, &s.SendLagMeanUS, &s.SendLagP99US,
			&s.StalledMS, &s.Omitted); err != nil {
			return fmt.Errorf("read the step metrics of run %s: %w", b.run.ID, err)
		}
		v := variantNamed(vs, variant)
		if v == nil {
			continue
		}
		w.Step = idx + 1
		if v.Series == nil {
			v.Series = &Series{}
		}
		v.Series.Steps = append(v.Series.Steps, w)
		if !has {
			missing[variant] = append(missing[variant], idx+1)
			continue
		}
		s.Step = idx + 1
		if err := json.Unmarshal(byClass, &s.ErrorsByClass); err != nil {
			return fmt.Errorf("step %d of %s: errors_by_class: %w", idx+1, variant, err)
		}
		if s.Count > 0 {
			s.ErrorRate = float64(s.Errors) / float64(s.Count)
		}
		if s.Seconds > 0 {
			s.BandwidthBytesPerSec = float64(s.Bytes) / s.Seconds
		}
		s.Load = float64(max(s.InstancesSeen, s.Instances) * s.Users)
		if v.LoadUnit != "users" && s.OfferedRate != nil {
			s.Load = *s.OfferedRate
		}
		v.Steps = append(v.Steps, &s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the step metrics of run %s: %w", b.run.ID, err)
	}
	for _, v := range vs {
		if m := missing[v.Name]; len(m) > 0 {
			b.notef("%s: step(s) %s have no stored figures (step_metrics is written after a step ends): left out", v.Name, joinInts(m))
		}
	}
	return b.appMetrics(ctx, vs)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func (b *q) appMetrics(ctx context.Context, vs []*Variant) error {
	rows, err := b.pool.Query(ctx, `
SELECT variant, step, app_name, role, instances, cpu_source, cpu_points, cpu_covered, cpu_mean_cores, cpu_max_cores, cpu_total_cores,
       cores_available, mem_mean_bytes, mem_max_bytes, mem_quota_bytes
FROM step_app_metrics WHERE run_id = $1 ORDER BY variant, step, role, app_name`, b.run.ID)
	if err != nil {
		return fmt.Errorf("read the step app metrics of run %s: %w", b.run.ID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			variant, role string
			idx           int
			a             AppUsage
		)
		if err := rows.Scan(&variant, &idx, &a.Name, &role, &a.Instances, &a.CPUSource, &a.CPUPoints, &a.CPUCovered, &a.CPUMeanCores,
			&a.CPUMaxCores, &a.CPUTotalCores, &a.CoresAvailable, &a.MemMeanBytes, &a.MemMaxBytes, &a.MemQuotaBytes); err != nil {
			return fmt.Errorf("read the step app metrics of run %s: %w", b.run.ID, err)
		}
		v := variantNamed(vs, variant)
		if v == nil {
			continue
		}
		i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == idx+1 })
		if i < 0 {
			continue
		}
		s := v.Steps[i]
		if role == "generator" {
			s.Generator = &a
			continue
		}
		if a.CPUTotalCores != nil && *a.CPUTotalCores > 0 {
			per := s.Throughput / *a.CPUTotalCores
			perPct := per / 100
			a.ThroughputPerCore, a.ThroughputPerCPUPercent = &per, &perPct
		}
		if a.CPUTotalCores != nil && a.CoresAvailable != nil && *a.CoresAvailable > 0 && a.Instances > 0 {
			u := *a.CPUTotalCores / (float64(a.Instances) * *a.CoresAvailable)
			a.Utilisation = &u
		}
		s.App = &a
		if v.App == "" {
			v.App = a.Name
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the step app metrics of run %s: %w", b.run.ID, err)
	}
	return nil
}

// interval is the width of a series' intervals in seconds: 1 s, or wider so that a
// span of seconds fits in maxPoints.
func interval(span float64, maxPoints int) float64 {
	return max(1, math.Ceil(span/float64(maxPoints)))
}

func (b *q) span(vs []*Variant) float64 {
	var end float64
	for _, v := range vs {
		if v.Series == nil {
			continue
		}
		for _, w := range v.Series.Steps {
			e := w.StartS
			if w.EndS != nil {
				e = *w.EndS
			}
			end = max(end, e)
		}
	}
	return end
}

// series reads each variant's throughput, p99 and errors per interval of intended send
// time and step (warm-up included), and the run's router-log coverage and latency
// decomposition per step. Percentiles per interval are observed values, like the
// steps'. Per-second series and the router figures are read as the run stored them
// (resultsdb.Store.ComputeStepSeries, ComputeRouterMetrics); wider intervals, and runs
// recorded before those were stored, are computed from the samples.
func (b *q) series(ctx context.Context, store *resultsdb.Store, vs []*Variant) error {
	if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM router_log_pulls WHERE run_id = $1),
		(SELECT coalesce(bool_or(budget_exhausted), false) FROM router_log_pulls WHERE run_id = $1),
		(SELECT coalesce(string_agg(source, ' ' ORDER BY source), '') FROM router_log_pulls WHERE run_id = $1),
		EXISTS (SELECT 1 FROM router_requests WHERE run_id = $1), EXISTS (SELECT 1 FROM app_timings WHERE run_id = $1)`,
		b.run.ID).Scan(&b.pulls, &b.budget, &b.sources, &b.router, &b.app); err != nil {
		return fmt.Errorf("look for router logs and app timings of run %s: %w", b.run.ID, err)
	}
	if b.pulls > 0 || (b.router && b.app) {
		var err error
		if b.routerSteps, err = store.RouterMetrics(ctx, b.run.ID); err != nil {
			return err
		}
	}
	width := interval(b.span(vs), b.opts.MaxPoints)
	for _, v := range vs {
		if v.Series == nil {
			v.Series = &Series{}
		}
		sr := v.Series
		sr.IntervalS = width
		rows, err := b.seriesRows(ctx, v.Name, width)
		if err != nil {
			return fmt.Errorf("read the time series of %s in run %s: %w", v.Name, b.run.ID, err)
		}
		for rows.Next() {
			var (
				step       int
				k, n, errs int64
				p99        int64
				mean       float64
			)
			if err := rows.Scan(&step, &k, &n, &errs, &p99, &mean); err != nil {
				rows.Close()
				return fmt.Errorf("read the time series of %s in run %s: %w", v.Name, b.run.ID, err)
			}
			// Requests per second over the part of the interval the step covers.
			from, to := float64(k)*width, float64(k+1)*width
			if i := slices.IndexFunc(sr.Steps, func(w StepWindow) bool { return w.Step == step+1 }); i >= 0 {
				from = max(from, sr.Steps[i].StartS)
				if e := sr.Steps[i].EndS; e != nil {
					to = min(to, *e)
				}
			}
			if to-from < 0.05*width {
				to = from + width // a sliver: do not blow its rate up
			}
			sr.T = append(sr.T, mean/1e6)
			sr.Throughput = append(sr.Throughput, float64(n)/(to-from))
			sr.Errors = append(sr.Errors, errs)
			sr.P99US = append(sr.P99US, p99)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the time series of %s in run %s: %w", v.Name, b.run.ID, err)
		}
	}
	for _, m := range b.routerSteps {
		if v := variantNamed(vs, m.Variant); v != nil {
			b.decompose(v, m)
		}
	}
	return nil
}

// seriesRows returns a variant's (step, interval, count, errors, p99, mean intended
// time) ordered by time: from step_series when the intervals are seconds and every
// step has its series stored, else computed from the samples, read by key.
func (b *q) seriesRows(ctx context.Context, variant string, width float64) (pgx.Rows, error) {
	if width == 1 {
		var complete bool
		if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM steps WHERE run_id = $1 AND variant = $2) =
			(SELECT count(*) FROM step_series WHERE run_id = $1 AND variant = $2)`, b.run.ID, variant).Scan(&complete); err != nil {
			return nil, err
		}
		if complete {
			return b.pool.Query(ctx, `
SELECT ss.step::int, x.k, x.n, x.errs, x.p99, x.mean
FROM step_series ss CROSS JOIN LATERAL unnest(ss.second, ss.count, ss.errors, ss.p99_us, ss.intended_mean_us) AS x(k, n, errs, p99, mean)
WHERE ss.run_id = $1 AND ss.variant = $2
ORDER BY x.mean`, b.run.ID, variant)
		}
	}
	return b.pool.Query(ctx, `
SELECT s.step::int, s.intended_us / $3 AS k, count(*), count(*) FILTER (WHERE s.error <> 0 OR s.status >= 400),
       percentile_disc(0.99) WITHIN GROUP (ORDER BY s.latency_us)::bigint, avg(s.intended_us)::float8
FROM samples s
WHERE s.worker_id = ANY(ARRAY(SELECT id FROM workers WHERE run_id = $2 AND variant = $1))
GROUP BY 1, 2 ORDER BY 6`, variant, b.run.ID, int64(width*1e6))
}

// memory reads each variant app's memory per instance over the run, per poll (or per
// interval when there are more polls than MaxPoints).
func (b *q) memory(ctx context.Context, vs []*Variant) error {
	width := interval(b.span(vs), b.opts.MaxPoints)
	for _, v := range vs {
		if v.App == "" {
			continue
		}
		rows, err := b.pool.Query(ctx, `
WITH polls AS (
    SELECT extract(epoch FROM cm.at - r.epoch)::float8 AS t, avg(cm.mem_bytes)::float8 AS mem, max(cm.mem_quota_bytes) AS quota
    FROM container_metrics cm JOIN runs r ON r.id = cm.run_id
    WHERE cm.run_id = $1 AND cm.app_name = $2 AND cm.mem_bytes IS NOT NULL AND cm.state = 'RUNNING'
    GROUP BY cm.at, r.epoch)
SELECT min(t), avg(mem)::float8, max(quota) FROM polls GROUP BY floor(t / $3) ORDER BY 1`, b.run.ID, v.App, width)
		if err != nil {
			return fmt.Errorf("read the memory of %s in run %s: %w", v.App, b.run.ID, err)
		}
		m := &Memory{}
		for rows.Next() {
			var (
				t, mem float64
				quota  *int64
			)
			if err := rows.Scan(&t, &mem, &quota); err != nil {
				rows.Close()
				return fmt.Errorf("read the memory of %s in run %s: %w", v.App, b.run.ID, err)
			}
			m.T = append(m.T, t)
			m.MeanBytes = append(m.MeanBytes, mem)
			if quota != nil {
				m.QuotaBytes = quota
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read the memory of %s in run %s: %w", v.App, b.run.ID, err)
		}
		if len(m.T) == 0 {
			continue
		}
		m.SettledBytes, m.Settled = settle(m.MeanBytes)
		v.Memory = m
	}
	return nil
}

// settle returns the median of the last quarter of xs (at least 1 reading) and
// whether that quarter stays within SettleBand of it.
func settle(xs []float64) (float64, bool) {
	n := max(len(xs)/4, 1)
	tail := slices.Clone(xs[len(xs)-n:])
	sort.Float64s(tail)
	med := tail[len(tail)/2]
	if len(tail)%2 == 0 {
		med = (tail[len(tail)/2-1] + tail[len(tail)/2]) / 2
	}
	return med, len(xs) >= 4 && tail[0] >= med*(1-SettleBand) && tail[len(tail)-1] <= med*(1+SettleBand)
}

// SettleBand is how far, relative to its median, memory in the last quarter of a run
// may move for it to count as settled.
const SettleBand = 0.10

// decomposition says why there is none when the run lacks router lines or app
// timings; the figures themselves come from the pass of series.
func (b *q) decomposition(_ context.Context, _ []*Variant) error {
	switch {
	case !b.router && !b.app:
		b.notef("no router logs and no app timings: no latency decomposition (collectors.router_logs, collectors.app_timings)")
	case !b.router:
		b.notef("no router logs: no latency decomposition, which needs router and app timings of the same requests (collectors.router_logs)")
	case !b.app:
		b.notef("no app timings: no latency decomposition, which needs router and app timings of the same requests (collectors.app_timings)")
	}
	return nil
}

// decompose turns a step's router metrics into its Decomposition.
func (b *q) decompose(v *Variant, m resultsdb.RouterStepMetrics) {
	i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == m.Step+1 })
	if i < 0 || m.Decomposed == 0 {
		return
	}
	n := float64(m.Decomposed)
	d := &Decomposition{Requests: m.Decomposed, ClientMeanUS: m.ClientSumUS / n}
	best := 0
	for j, name := range LayerNames {
		d.Layers = append(d.Layers, Layer{Name: name, MeanUS: m.LayerSumsUS[j] / n})
		if d.Layers[j].MeanUS > d.Layers[best].MeanUS {
			best = j
		}
	}
	d.Dominant = LayerNames[best]
	if c := v.Steps[i].Count; c > 0 {
		d.Share = float64(d.Requests) / float64(c)
	}
	v.Steps[i].Decomposition = d
}

// LayerNames are the layers of a Decomposition, in the order a request crosses them.
var LayerNames = []string{"generator+network", "router", "router→app", "app code", "pool wait", "query"}

// findings reads the checks that tripped, with the figures of their steps.
func (b *q) findings(ctx context.Context, vs []*Variant) ([]Finding, error) {
	rows, err := b.pool.Query(ctx, `SELECT at, coalesce(variant, ''), coalesce(step, -1), level, message, coalesce(check_name, ''), evidence
FROM run_events WHERE run_id = $1 AND kind = 'check' AND level IN ('warn', 'fail') ORDER BY id`, b.run.ID)
	if err != nil {
		return nil, fmt.Errorf("read the findings of run %s: %w", b.run.ID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Finding, error) {
		var (
			f        Finding
			idx      int
			evidence []byte
		)
		err := r.Scan(&f.At, &f.Variant, &idx, &f.Level, &f.Message, &f.Check, &evidence)
		if err != nil {
			return f, err
		}
		f.At = f.At.UTC()
		f.Step = idx + 1
		// Older runs put the check's name in front of the message only.
		if check, msg, ok := strings.Cut(f.Message, ": "); ok && !strings.Contains(check, " ") && (f.Check == "" || f.Check == check) {
			f.Check, f.Message = check, msg
		}
		if len(evidence) > 0 {
			if err := json.Unmarshal(evidence, &f.Figures); err != nil {
				return f, fmt.Errorf("evidence of a finding: %w", err)
			}
		}
		return f, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the findings of run %s: %w", b.run.ID, err)
	}
	for i := range out {
		f := &out[i]
		v := variantNamed(vs, f.Variant)
		if v == nil || f.Step == 0 {
			continue
		}
		if j := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == f.Step }); j >= 0 {
			f.Evidence = evidence(v.Steps[j], v.Steps[:j])
		}
	}
	if out == nil {
		out = []Finding{}
	}
	return out, nil
}

// evidence is the step's figures a finding is judged on, in words.
func evidence(s *Step, before []*Step) []string {
	e := []string{fmt.Sprintf("%s req/s at %s %s, p99 %s ms", num(s.Throughput), load(s.Load), loadWord(s), ms(float64(s.P99US)))}
	if len(before) > 0 {
		p := before[len(before)-1]
		if p.Throughput > 0 {
			e = append(e, fmt.Sprintf("throughput %+.1f%% over step %d", 100*(s.Throughput-p.Throughput)/p.Throughput, p.Step))
		}
	}
	if a := s.App; a != nil && a.CPUMeanCores != nil {
		line := fmt.Sprintf("app CPU %.2f cores per instance (%d instance(s), %s)", *a.CPUMeanCores, a.Instances, sourceWord(a.CPUSource))
		if a.Utilisation != nil {
			line += fmt.Sprintf(", %.0f%% of the CPU available", 100**a.Utilisation)
		}
		e = append(e, line)
	}
	if g := s.Generator; g != nil && g.CPUMeanCores != nil {
		e = append(e, fmt.Sprintf("generator CPU %.2f cores per instance (%d instance(s))", *g.CPUMeanCores, g.Instances))
	}
	if s.SendLagP99US > 0 {
		e = append(e, fmt.Sprintf("generators' send lag p99 %s ms", ms(float64(s.SendLagP99US))))
	}
	return e
}

func loadWord(s *Step) string {
	if s.OfferedRate != nil && s.Users == 0 {
		return "req/s offered"
	}
	return "users"
}

func sourceWord(src string) string {
	switch src {
	case "counters":
		return "from CPU counters"
	case "stats":
		return "from sampled stats"
	}
	return "no CPU source"
}

// coverage is the router-log coverage per step when the run pulled router logs, in the
// order of the variants, then steps.
func (b *q) coverage(vs []*Variant) []CoverageRow {
	if b.pulls == 0 {
		b.notef("no router logs were pulled for this run: no coverage")
		return nil
	}
	out := make([]CoverageRow, len(b.routerSteps))
	for i, m := range b.routerSteps {
		c := m.Coverage
		out[i] = CoverageRow{Variant: c.Variant, Step: c.Step + 1, Sent: c.Sent, Found: c.Found, Missing: c.Missing(),
			Share: c.Share(), Verdict: CoverageVerdict(c, b.budget)}
	}
	rank := func(name string) int {
		if i := slices.IndexFunc(vs, func(v *Variant) bool { return v.Name == name }); i >= 0 {
			return i
		}
		return len(vs)
	}
	slices.SortStableFunc(out, func(x, y CoverageRow) int { return rank(x.Variant) - rank(y.Variant) })
	return out
}

// flushes sums up the app-timing flushes per variant and step.
func (b *q) flushes(ctx context.Context) ([]FlushRow, error) {
	rows, err := b.pool.Query(ctx, `
SELECT variant, step, count(DISTINCT (app_name, instance_index))::int, (count(*) FILTER (WHERE error <> ''))::int,
       sum(rows_received)::bigint, sum(stored)::bigint, sum(foreign_rows)::bigint, sum(dropped)::bigint
FROM app_timing_flushes WHERE run_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`, b.run.ID)
	if err != nil {
		return nil, fmt.Errorf("read the app timing flushes of run %s: %w", b.run.ID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FlushRow, error) {
		var f FlushRow
		err := r.Scan(&f.Variant, &f.Step, &f.Instances, &f.Failed, &f.RowsReceived, &f.Stored, &f.Foreign, &f.Dropped)
		f.Step++
		var bad []string
		if f.Failed > 0 {
			bad = append(bad, fmt.Sprintf("%d flush(es) failed", f.Failed))
		}
		if f.Dropped > 0 {
			bad = append(bad, fmt.Sprintf("%d timings dropped in the apps (buffer full): the decomposition rests on the rest", f.Dropped))
		}
		f.Verdict = "healthy"
		if len(bad) > 0 {
			f.Verdict = strings.Join(bad, "; ")
		}
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the app timing flushes of run %s: %w", b.run.ID, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// utilisation groups a variant's steps by app instance count.
func utilisation(steps []*Step) []Utilisation {
	var out []Utilisation
	for _, s := range steps {
		a := s.App
		if a == nil || a.CPUTotalCores == nil || a.Instances == 0 {
			continue
		}
		i := slices.IndexFunc(out, func(u Utilisation) bool { return u.AppInstances == a.Instances })
		if i < 0 {
			out = append(out, Utilisation{AppInstances: a.Instances})
			i = len(out) - 1
		}
		u := &out[i]
		u.Steps = append(u.Steps, s.Step)
		u.CPUMaxTotalCores = max(u.CPUMaxTotalCores, *a.CPUTotalCores)
		if a.CoresAvailable != nil {
			c := float64(a.Instances) * *a.CoresAvailable
			u.CoresAvailable = &c
		}
	}
	for i := range out {
		if u := &out[i]; u.CoresAvailable != nil && *u.CoresAvailable > 0 {
			x := u.CPUMaxTotalCores / *u.CoresAvailable
			u.Utilisation = &x
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AppInstances < out[j].AppInstances })
	return out
}

func sloOf(s *spec.SLO) *SLO {
	out := &SLO{Latency: string(s.Latency), MaxLatencyUS: s.MaxLatency.Microseconds(), MaxErrorRate: s.MaxErrorRate, MaxAppCPUCores: s.MaxAppCPUCores}
	var parts []string
	if s.MaxLatency > 0 {
		parts = append(parts, fmt.Sprintf("%s ≤ %s ms", s.Latency, ms(float64(s.MaxLatency)/float64(time.Microsecond))))
	}
	if s.MaxErrorRate != nil {
		parts = append(parts, fmt.Sprintf("errors ≤ %s%%", pct(*s.MaxErrorRate)))
	}
	if s.MaxAppCPUCores != nil {
		parts = append(parts, fmt.Sprintf("app CPU ≤ %g core(s) per instance", *s.MaxAppCPUCores))
	}
	out.Text = strings.Join(parts, ", ")
	return out
}
