package resultsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cf-benchmark/cf-benchmark/sample"
)

// Step metrics are computed once per step, after its end is recorded, and stored
// (tables step_metrics and step_app_metrics): the progress line, the stop conditions,
// the checks, the exports and the report all read the stored figures, so they agree to
// the request. A step still running has none stored; StepSummaries computes its figures
// live with the same code. The step's per-second series is stored with them
// (ComputeStepSeries).

// AppRole is an app whose container metrics a step's figures include.
type AppRole struct {
	Name string
	// Role is RoleApp (the variant's app under test) or RoleGenerator.
	Role string
	// HostCores is, per host (cell) the app's instances may run on, the CPU in cores
	// they may use there together, as the foundation says (the local foundation: the
	// whole cell, whatever the instance count); a host not in it has unknown cores.
	HostCores map[string]float64
}

// The roles of AppRole.
const (
	RoleApp       = "app"
	RoleGenerator = "generator"
)

// The sources of a step's CPU figure (AppStepMetrics.CPUSource).
const (
	CPUFromCounters = "counters" // cumulative CPU time: exact from two readings
	CPUFromStats    = "stats"    // sampled rates (CC process stats), averaged
)

// AppStepMetrics is one app's container metrics over a step's measured window.
type AppStepMetrics struct {
	App  string
	Role string
	// Instances is how many distinct instances reported usage in the window.
	Instances int
	// CPUSource says what the CPU figures rest on: CPUFromCounters, CPUFromStats, or ""
	// when there were no readings (the CPU figures are then nil).
	CPUSource string
	// CPUPoints is how many readings the CPU figures rest on, and CPUCovered the share
	// of the window (0..1) that those readings span, averaged over the instances: 1 when
	// every instance's counters have a reading beyond both edges of the window (the
	// figure is then exact to the edges), less where one edge had none.
	CPUPoints  int
	CPUCovered float64
	// CPUMeanCores is the mean CPU per instance, CPUMaxCores the busiest instance's and
	// CPUTotalCores all instances' together, in cores (1 = one full core); nil when
	// unknown.
	CPUMeanCores, CPUMaxCores, CPUTotalCores *float64
	// MemMeanBytes is the mean memory in use per instance, MemMaxBytes the most any
	// instance used, MemQuotaBytes its limit; nil when unknown.
	MemMeanBytes               *float64
	MemMaxBytes, MemQuotaBytes *int64
	// Cells is how many distinct hosts (cells) the instances ran on in the window, as
	// CC's process stats said; nil when no reading said (Log Cache rows carry no host;
	// a run without stats polls). Several instances on one cell count it once.
	Cells *int
	// CPUAvailableCores is the CPU all instances together could use in the window: the
	// sum over those cells of the cores the app's instances may use there
	// (AppRole.HostCores); nil when a cell's cores, or the cells, are unknown (on Cloud
	// Foundry, whose API does not say).
	CPUAvailableCores *float64
	// CPUWaitCores is the mean run-queue wait per instance over the window, in cores'
	// worth of time (1 = one thread ready but waiting all along), and CPUWaitShare the
	// wait over wait plus CPU time of all instances: the share of the time its threads
	// were ready to run that they did not. Both rest on cumulative counters
	// (container_metrics.cpu_wait_ns) bracketing the window, as the CPU does; nil
	// without them (on Cloud Foundry, whose cells send no such counter).
	CPUWaitCores, CPUWaitShare *float64
}

// Utilisation is the share of the CPU available that the instances used together
// (CPUTotalCores / CPUAvailableCores); nil when either, or the cells, are unknown.
func (a AppStepMetrics) Utilisation() *float64 {
	if a.CPUTotalCores == nil || a.CPUAvailableCores == nil || *a.CPUAvailableCores <= 0 || a.Cells == nil {
		return nil
	}
	u := *a.CPUTotalCores / *a.CPUAvailableCores
	return &u
}

// CoresPerInstance is the CPU available to one instance when all are busy: the CPU
// available to all over the instances (two instances sharing one core get half a core
// each); nil when unknown.
func (a AppStepMetrics) CoresPerInstance() *float64 {
	if a.CPUAvailableCores == nil || a.Instances == 0 {
		return nil
	}
	c := *a.CPUAvailableCores / float64(a.Instances)
	return &c
}

// Stall detection (StepSummary.Stalled, Omitted). Completions are counted per bucket of
// the measured window; a bucket spans at least stallBucketMin and is wide enough for
// stallExpected completions at the step's mean rate. A bucket with at most
// stallQuiet of the step's median bucket count is quiet; a stall is a run of at least
// two quiet buckets lasting at least StallCycles median latencies. So a target that
// answers nothing for a while trips it, while single slow responses among many users,
// steady jitter, do not: the others' completions keep every bucket busy.
const (
	stallBase      = 10 * time.Millisecond
	stallBucketMin = 100 * time.Millisecond
	stallExpected  = 20
	stallQuiet     = 0.1
)

// StallCycles is how many median latencies a quiet time must last to count as a stall.
const StallCycles = 10

// windowSQL is a step's measured window: from the end of warm-up to the planned end, or
// to when the step really ended if that was earlier (an aborted step), or to now while
// it runs. Requests are intended only within the plan, so waiting for the last samples
// and flushing app timings after the planned end do not dilute the throughput.
const windowSQL = `least(coalesce(st.ended_at, now()), coalesce(st.ends_at, st.ended_at, now()))`

// summarySQL computes the client-side figures of steps from the raw rows; percentiles
// are observed values (percentile_disc), as latency histograms report them.
var summarySQL = `
SELECT st.variant, st.idx, st.instances, coalesce(st.instances_seen, st.instances), st.users,
       st.warmup_until, ` + windowSQL + `,
       count(s.seq),
       count(s.seq) FILTER (WHERE s.error <> 0 OR s.status >= 400),
       coalesce(sum(s.bytes), 0)::bigint,
       coalesce(avg(s.latency_us), 0)::float8,
       coalesce(percentile_disc(ARRAY[0.5, 0.9, 0.99, 0.999]) WITHIN GROUP (ORDER BY s.latency_us), '{0,0,0,0}')::bigint[],
       coalesce(min(s.latency_us), 0)::bigint,
       coalesce(max(s.latency_us), 0)::bigint,
       coalesce(avg(s.start_delay_us), 0)::float8,
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY s.start_delay_us), 0)::bigint,
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

// errorClassesSQL counts the failed requests of steps by class: a transport error class,
// or the HTTP status of an error response.
const errorClassesSQL = `
SELECT st.variant, st.idx, s.error, s.status, count(*)
FROM steps st
JOIN workers w ON w.run_id = st.run_id AND w.variant = st.variant
JOIN samples s ON s.worker_id = w.id AND s.step = st.idx AND NOT s.warmup
WHERE st.run_id = $1 AND ($2 = '' OR st.variant = $2) AND ($3 < 0 OR st.idx = $3) AND (s.error <> 0 OR s.status >= 400)
GROUP BY 1, 2, 3, 4`

// completionsSQL counts the step's completions, warm-up included (a request intended
// in the warm-up may complete inside the window), per stallBase bucket of the window
// that starts at $4 (µs since the run's epoch) and lasts $5 µs.
const completionsSQL = `
SELECT (s.intended_us + s.latency_us - $4) / $6 AS b, count(*)
FROM workers w JOIN samples s ON s.worker_id = w.id AND s.step = $3
WHERE w.run_id = $1 AND w.variant = $2 AND s.intended_us + s.latency_us >= $4 AND s.intended_us + s.latency_us < $4 + $5
GROUP BY 1`

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
		live, err := liveSummaries(ctx, s.pool, runID, k.variant, k.idx)
		if err != nil {
			return nil, err
		}
		out = append(out, live...)
	}
	return out, nil
}

// liveSummaries computes the client-side figures of steps from the raw rows, read
// through db (the pool, or a transaction's snapshot).
func liveSummaries(ctx context.Context, db queryer, runID, variant string, idx int) ([]StepSummary, error) {
	rows, err := db.Query(ctx, summarySQL, runID, variant, idx)
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
	live, err := liveSummaries(ctx, s.pool, runID, variant, idx)
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
		am, err := s.appStepMetrics(ctx, runID, a, m.From, m.To)
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

// stalls finds the longest stall of the step (see StallCycles) and, in a closed loop,
// estimates the requests its users did not send meanwhile.
func (s *Store) stalls(ctx context.Context, runID string, m *StepSummary) error {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if m.Seconds <= 0 || m.Count == 0 {
		return nil
	}
	start := m.From.Sub(run.Epoch).Microseconds()
	length := m.To.Sub(m.From).Microseconds()
	rows, err := s.pool.Query(ctx, completionsSQL, runID, m.Variant, m.Step, start, length, stallBase.Microseconds())
	if err != nil {
		return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	counts := make([]int64, (length+stallBase.Microseconds()-1)/stallBase.Microseconds())
	for rows.Next() {
		var b, n int64
		if err := rows.Scan(&b, &n); err != nil {
			rows.Close()
			return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
		}
		if b >= 0 && b < int64(len(counts)) {
			counts[b] = n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count completions of step %d of %s: %w", m.Step+1, m.Variant, err)
	}
	m.Stalled, m.Omitted = FindStalls(counts, stallBase, m.P50)
	if m.Open {
		m.Omitted = 0 // the open loop sent them anyway; their latency counts the stall
	}
	return nil
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

// FindStalls finds the longest stall in completions counted per base interval (see
// StallCycles) and the completions missing in all stalls against the usual rate. p50
// is the step's median latency.
//
// The usual rate is the median bucket outside the stalls: a stall that fills half the
// window or more would otherwise be its own yardstick (the median of all buckets is then
// a quiet one, and nothing looks missing). So stalls are found twice: first against the
// median of all buckets, then against the median of the buckets outside those stalls.
func FindStalls(counts []int64, base time.Duration, p50 time.Duration) (longest time.Duration, missing int64) {
	var total int64
	for _, c := range counts {
		total += c
	}
	if total == 0 || len(counts) == 0 {
		return 0, 0
	}
	perBase := float64(total) / float64(len(counts))
	k := max(int(math.Ceil(stallExpected/perBase)), int(stallBucketMin/base), 1)
	var buckets []int64
	for i := 0; i+k <= len(counts); i += k { // a last partial bucket would look quiet
		var n int64
		for _, c := range counts[i : i+k] {
			n += c
		}
		buckets = append(buckets, n)
	}
	if len(buckets) < 3 {
		return 0, 0
	}
	width := time.Duration(k) * base
	minBuckets := int(math.Ceil(float64(max(2*width, StallCycles*p50)) / float64(width)))
	usual := medianOf(buckets)
	if outside := outsideStalls(buckets, stallRuns(buckets, usual, minBuckets)); len(outside) > 0 {
		usual = medianOf(outside)
	}
	for _, r := range stallRuns(buckets, usual, minBuckets) {
		longest = max(longest, time.Duration(r.end-r.start)*width)
		var got int64
		for _, n := range buckets[r.start:r.end] {
			got += n
		}
		missing += max(int64(r.end-r.start)*usual-got, 0)
	}
	return longest, missing
}

// bucketRun is a run of buckets [start, end).
type bucketRun struct{ start, end int }

// stallRuns are the runs of at least minBuckets quiet buckets: at most stallQuiet of
// the usual count each.
func stallRuns(buckets []int64, usual int64, minBuckets int) []bucketRun {
	quiet := int64(stallQuiet * float64(usual))
	var out []bucketRun
	for i := 0; i < len(buckets); {
		if buckets[i] > quiet {
			i++
			continue
		}
		j := i
		for j < len(buckets) && buckets[j] <= quiet {
			j++
		}
		if j-i >= minBuckets {
			out = append(out, bucketRun{i, j})
		}
		i = j
	}
	return out
}

// outsideStalls is the buckets in none of runs.
func outsideStalls(buckets []int64, runs []bucketRun) []int64 {
	var out []int64
	last := 0
	for _, r := range runs {
		out = append(out, buckets[last:r.start]...)
		last = r.end
	}
	return append(out, buckets[last:]...)
}

func medianOf(v []int64) int64 {
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// metricRow is one container-metrics reading of an instance.
type metricRow struct {
	instance  string
	at        time.Time
	source    string // SourceStats or SourceLogCache
	state     string
	host      string // where CC's process stats said it ran; "" on Log Cache rows
	cpu       *float64
	cpuTimeNS *int64
	waitNS    *int64
	mem       *int64
	quota     *int64
}

// metricsSlack is how far before and after a window readings are read, so that
// cumulative counters have a reading on each side of it.
const metricsSlack = time.Minute

const appMetricsSQL = `
SELECT process_type || '/' || instance_index, at, source, state, host, cpu, cpu_time_ns, cpu_wait_ns, mem_bytes, mem_quota_bytes
FROM container_metrics
WHERE run_id = $1 AND app_name = $2 AND at BETWEEN $3 AND $4
  AND (cpu IS NOT NULL OR cpu_time_ns IS NOT NULL OR mem_bytes IS NOT NULL OR (source = 'stats' AND state = 'RUNNING'))
ORDER BY 1, at`

// appStepMetrics sums up one app's container metrics over [from, to].
func (s *Store) appStepMetrics(ctx context.Context, runID string, a AppRole, from, to time.Time) (AppStepMetrics, error) {
	rows, err := s.pool.Query(ctx, appMetricsSQL, runID, a.Name, from.Add(-metricsSlack), to.Add(metricsSlack))
	if err != nil {
		return AppStepMetrics{}, fmt.Errorf("sum up container metrics of %s: %w", a.Name, err)
	}
	readings, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (metricRow, error) {
		var m metricRow
		return m, r.Scan(&m.instance, &m.at, &m.source, &m.state, &m.host, &m.cpu, &m.cpuTimeNS, &m.waitNS, &m.mem, &m.quota)
	})
	if err != nil {
		return AppStepMetrics{}, fmt.Errorf("sum up container metrics of %s: %w", a.Name, err)
	}
	out := SumAppMetrics(readings, from, to, a.HostCores)
	out.App, out.Role = a.Name, a.Role
	return out, nil
}

// SumAppMetrics sums up an app's readings (sorted by instance, then time) over
// [from, to].
//
// CPU: per instance, its cumulative CPU time interpolated linearly to from and to from
// the readings on either side of each; where an edge has no reading beyond it, the
// span stops at the reading nearest to it (CPUCovered then says how much of the window
// the figure rests on). Without counters the sampled rates inside the window are
// averaged.
//
// Memory: per instance the time-weighted mean of its readings over the window (joined
// by straight lines, interpolated to the edges as the counters are), so a step's figure
// does not lean towards wherever readings happen to be dense; MemMeanBytes is the mean
// of those over the instances, MemMaxBytes the highest point of any instance's line.
//
// Cells and CPUAvailableCores: the distinct hosts the instances ran on (appHosts) and
// the sum of hostCores over them; see AppStepMetrics.
func SumAppMetrics(readings []metricRow, from, to time.Time, hostCores map[string]float64) AppStepMetrics {
	var out AppStepMetrics
	window := to.Sub(from)
	byInstance := map[string][]metricRow{}
	var order []string
	for _, r := range readings {
		if _, ok := byInstance[r.instance]; !ok {
			order = append(order, r.instance)
		}
		byInstance[r.instance] = append(byInstance[r.instance], r)
	}
	var cpus []instanceCPU
	var counted []string
	var memSum float64
	var memN int
	for _, inst := range order {
		rs := byInstance[inst]
		var mem []point
		for _, r := range rs {
			if r.mem != nil {
				mem = append(mem, point{r.at, float64(*r.mem)})
			}
			if r.quota != nil && (out.MemQuotaBytes == nil || *r.quota > *out.MemQuotaBytes) {
				out.MemQuotaBytes = r.quota
			}
		}
		if mean, top, ok := gaugeOver(mem, from, to); ok {
			memSum += mean
			memN++
			if t := int64(math.Round(top)); out.MemMaxBytes == nil || t > *out.MemMaxBytes {
				out.MemMaxBytes = &t
			}
		}
		if c, ok := counterCPU(rs, from, to); ok {
			cpus, counted = append(cpus, c), append(counted, inst)
			continue
		}
		var sum float64
		var n int
		var first, last time.Time
		for _, r := range rs {
			if inside(r.at, from, to) && r.cpu != nil {
				if n == 0 {
					first = r.at
				}
				last = r.at
				sum += *r.cpu
				n++
			}
		}
		if n > 0 {
			covered := 0.0
			if window > 0 {
				covered = min(last.Sub(first).Seconds()/window.Seconds(), 1)
			}
			cpus = append(cpus, instanceCPU{cores: sum / float64(n), points: n, covered: covered, source: CPUFromStats})
			counted = append(counted, inst)
		}
	}
	if memN > 0 {
		mean := memSum / float64(memN)
		out.MemMeanBytes = &mean
	}
	out.Instances = len(cpus)
	if len(cpus) == 0 {
		return out
	}
	if hosts, known := appHosts(byInstance, counted, from, to); known {
		n := len(hosts)
		out.Cells = &n
		avail, all := 0.0, true
		for _, h := range hosts {
			c, ok := hostCores[h]
			all = all && ok && c > 0
			avail += c
		}
		if all {
			out.CPUAvailableCores = &avail
		}
	}
	var total, maxCores, covered, waitCores, waitTotal float64
	waitN := 0
	out.CPUSource = CPUFromCounters
	for _, c := range cpus {
		total += c.cores
		maxCores = max(maxCores, c.cores)
		covered += c.covered
		out.CPUPoints += c.points
		if c.source == CPUFromStats {
			out.CPUSource = CPUFromStats // the weaker source names the figure
		}
		if c.waitCores != nil {
			waitCores += *c.waitCores
			waitTotal += c.cores
			waitN++
		}
	}
	if waitN == len(cpus) { // a figure of some instances only would understate the wait
		mean, share := waitCores/float64(waitN), 0.0
		if waitCores+waitTotal > 0 {
			share = waitCores / (waitCores + waitTotal)
		}
		out.CPUWaitCores, out.CPUWaitShare = &mean, &share
	}
	mean := total / float64(len(cpus))
	out.CPUMeanCores, out.CPUMaxCores, out.CPUTotalCores = &mean, &maxCores, &total
	out.CPUCovered = covered / float64(len(cpus))
	return out
}

// inside tells whether at is within [from, to].
func inside(at, from, to time.Time) bool { return !at.Before(from) && !at.After(to) }

// appHosts is where the instances (the counted ones of byInstance) ran in [from, to]:
// the distinct hosts of their RUNNING process-stats readings inside the window, or, for
// an instance with none inside (polls sparser than the window), of its last reading
// before the window and its first after. Each host counts once however many instances
// it ran. known is false when an instance has no such reading at all (only Log Cache
// rows, which carry no host; a run without stats polls): the hosts are then unknown,
// and no number of cells is assumed.
func appHosts(byInstance map[string][]metricRow, counted []string, from, to time.Time) (hosts []string, known bool) {
	seen := map[string]bool{}
	for _, inst := range counted {
		var in []string
		var before, after string
		for _, r := range byInstance[inst] {
			if r.source != SourceStats || r.state != "RUNNING" || r.host == "" {
				continue
			}
			switch {
			case inside(r.at, from, to):
				in = append(in, r.host)
			case r.at.Before(from):
				before = r.host
			case after == "":
				after = r.host
			}
		}
		if len(in) == 0 {
			for _, h := range []string{before, after} {
				if h != "" {
					in = append(in, h)
				}
			}
		}
		if len(in) == 0 {
			return nil, false
		}
		for _, h := range in {
			if !seen[h] {
				seen[h] = true
				hosts = append(hosts, h)
			}
		}
	}
	slices.Sort(hosts)
	return hosts, true
}

// instanceCPU is one instance's CPU over a window.
type instanceCPU struct {
	cores   float64 // mean, in cores
	points  int     // readings it rests on
	covered float64 // share of the window they span
	source  string
	// waitCores is the run-queue wait over the same span, in cores; nil without the
	// counter on every reading used.
	waitCores *float64
}

// point is one reading of a counter or gauge.
type point struct {
	at time.Time
	v  float64
}

// span is [from, to] clipped to the readings' span (ps sorted by time), and the
// readings its interpolation uses: from the last at or before lo to the first at or
// after hi. ok is false when the clipped span is empty.
func span(ps []point, from, to time.Time) (lo, hi time.Time, used []point, ok bool) {
	if len(ps) == 0 {
		return lo, hi, nil, false
	}
	lo, hi = from, to
	if ps[0].at.After(lo) {
		lo = ps[0].at
	}
	if last := ps[len(ps)-1].at; last.Before(hi) {
		hi = last
	}
	if !hi.After(lo) {
		return lo, hi, nil, false
	}
	b, a := 0, len(ps)-1
	for i, p := range ps {
		if !p.at.After(lo) {
			b = i
		}
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if !ps[i].at.Before(hi) {
			a = i
		}
	}
	return lo, hi, ps[b : a+1], true
}

// interpolate is the value at t of the straight line through the readings on either
// side of it (ps sorted by time, t within their span).
func interpolate(ps []point, t time.Time) float64 {
	i, _ := slices.BinarySearchFunc(ps, t, func(p point, t time.Time) int { return p.at.Compare(t) })
	if i == len(ps) {
		i--
	}
	if i == 0 || ps[i].at.Equal(t) {
		return ps[i].v
	}
	a, b := ps[i-1], ps[i]
	return a.v + (b.v-a.v)*t.Sub(a.at).Seconds()/b.at.Sub(a.at).Seconds()
}

// rising tells whether a cumulative counter never went backwards (the container did not
// restart) over ps.
func rising(ps []point) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i].v < ps[i-1].v {
			return false
		}
	}
	return true
}

// counterRate is a cumulative counter's increase per second over [from, to], each edge
// interpolated from the readings on either side of it, or at the reading nearest to it
// where there is none beyond it; secs is the span it rests on. ok is false without a
// span, or when the counter went backwards within it.
func counterRate(ps []point, from, to time.Time) (rate, secs float64, used int, ok bool) {
	lo, hi, u, ok := span(ps, from, to)
	if !ok || !rising(u) {
		return 0, 0, 0, false
	}
	secs = hi.Sub(lo).Seconds()
	return (interpolate(u, hi) - interpolate(u, lo)) / secs, secs, len(u), true
}

// counterCPU is an instance's CPU over [from, to] from its cumulative CPU-time readings
// (rs sorted by time; counterRate). ok is false without two usable readings.
func counterCPU(rs []metricRow, from, to time.Time) (instanceCPU, bool) {
	var cpu, wait []point
	waitAll := true
	for _, r := range rs {
		if r.cpuTimeNS == nil {
			continue
		}
		cpu = append(cpu, point{r.at, float64(*r.cpuTimeNS) / 1e9})
		if r.waitNS != nil {
			wait = append(wait, point{r.at, float64(*r.waitNS) / 1e9})
		} else {
			waitAll = false
		}
	}
	cores, secs, used, ok := counterRate(cpu, from, to)
	if !ok {
		return instanceCPU{}, false
	}
	out := instanceCPU{cores: cores, points: used, source: CPUFromCounters}
	if w := to.Sub(from).Seconds(); w > 0 {
		out.covered = min(secs/w, 1)
	}
	if waitAll {
		if w, _, _, ok := counterRate(wait, from, to); ok {
			out.waitCores = &w
		}
	}
	return out, true
}

// gaugeOver is a gauge's time-weighted mean over [from, to] clipped to its readings'
// span (ps sorted by time), the readings joined by straight lines, and the line's
// highest point there. Readings at one instant only (no span) give their mean, when
// inside the window. ok is false without readings for the window.
func gaugeOver(ps []point, from, to time.Time) (mean, top float64, ok bool) {
	lo, hi, used, ok := span(ps, from, to)
	if !ok {
		var n int
		for _, p := range ps {
			if inside(p.at, from, to) {
				mean += p.v
				top = max(top, p.v)
				n++
			}
		}
		if n == 0 {
			return 0, 0, false
		}
		return mean / float64(n), top, true
	}
	line := []point{{lo, interpolate(used, lo)}}
	for _, p := range used {
		if p.at.After(lo) && p.at.Before(hi) {
			line = append(line, p)
		}
	}
	line = append(line, point{hi, interpolate(used, hi)})
	var area float64
	top = line[0].v
	for i := 1; i < len(line); i++ {
		area += (line[i-1].v + line[i].v) / 2 * line[i].at.Sub(line[i-1].at).Seconds()
		top = max(top, line[i].v)
	}
	return area / hi.Sub(lo).Seconds(), top, true
}
