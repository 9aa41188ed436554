package resultsdb

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

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

// appStepMetrics sums up one app's container metrics over [from, to], read through db
// (the pool, or a transaction's snapshot): what a finished step stores
// (ComputeStepMetrics), and a running step shows so far (ReadLiveRun).
func appStepMetrics(ctx context.Context, db queryer, runID string, a AppRole, from, to time.Time) (AppStepMetrics, error) {
	rows, err := db.Query(ctx, appMetricsSQL, runID, a.Name, from.Add(-metricsSlack), to.Add(metricsSlack))
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
