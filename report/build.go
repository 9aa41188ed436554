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

// Reader reads the recorded rows of a run that a report is built from:
// *resultsdb.Store reads them from the results database, *exportdir.Dir from an export
// directory, and both give the same rows for the same run. ReadRun returns the rows of
// the run that id names to the reader, from one consistent view of them; it calls width
// once, with resultsdb.StepsSpan of the run's steps, and reads the series and memory in
// intervals of the width it returns. An error wrapping resultsdb.ErrRunNotFound means
// the reader has no such run; any other error means its rows could not be read. Build
// calls it from one goroutine at a time.
type Reader interface {
	ReadRun(ctx context.Context, id string, width func(spanS float64) float64) (*resultsdb.ReportRows, error)
}

// Build reads everything the report shows about runIDs (and opts.Baseline) from src.
// The readers aggregate every figure (per step, per interval and per layer), so the
// work on this side and the report's size do not grow with the number of requests. It
// fails when a run does not exist.
func Build(ctx context.Context, src Reader, runIDs []string, opts Options) (*Report, error) {
	if len(runIDs) == 0 {
		return nil, ErrNoRuns
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = 1500
	}
	rep := &Report{Schema: Schema, Version: Version, Runs: []*Run{}}
	for _, id := range runIDs {
		r, err := buildRun(ctx, src, id, opts)
		if err != nil {
			return nil, err
		}
		rep.Runs = append(rep.Runs, r)
	}
	if opts.Baseline != "" {
		b, err := buildRun(ctx, src, opts.Baseline, opts)
		if err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		rep.Baseline = b
		rep.Changes = changes(b, rep.Runs)
	}
	rep.Spread = spread(rep)
	rep.Thresholds = judge(opts.FailOn, rep)
	rep.Headline = headlines(rep)
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

// q is what turning a run's rows into its report needs: the rows and the notes so far.
type q struct {
	rows  *resultsdb.ReportRows
	opts  Options
	notes []string
}

func (b *q) notef(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

func buildRun(ctx context.Context, src Reader, id string, opts Options) (*Run, error) {
	rows, err := src.ReadRun(ctx, id, func(span float64) float64 { return interval(span, opts.MaxPoints) })
	if err != nil {
		return nil, err
	}
	run := &rows.Run
	b := &q{rows: rows, opts: opts}
	r := &Run{ID: run.ID, Name: run.Name, SpecFile: run.SpecFile, Status: string(run.Status), Reason: run.Reason,
		Started: run.Started.UTC(), Variants: []*Variant{}, Findings: []Finding{}}
	if run.Ended != nil {
		e := run.Ended.UTC()
		r.Ended = &e
	}
	var slo *spec.SLO
	if sp, perr := spec.Parse(run.SpecFile, []byte(rows.Spec), filepath.Dir(run.SpecFile)); perr != nil {
		b.notef("the run's spec does not parse any more, so its slo block is unknown: %v", firstLine(perr.Error()))
	} else if sp.SLO == nil {
		b.notef("the spec has no slo block: capacity at the SLO is not judged (add slo: to the spec)")
	} else {
		slo = sp.SLO
		r.SLO = sloOf(slo)
	}
	r.Variants = b.variants()
	if err := b.steps(r.Variants); err != nil {
		return nil, err
	}
	b.series(r.Variants)
	b.memory(r.Variants)
	b.decomposition()
	if r.Findings, err = b.findings(r.Variants); err != nil {
		return nil, err
	}
	r.Coverage, r.RouterLogSource = b.coverage(r.Variants), rows.PullSources
	r.Flushes = b.flushes()
	b.faults(r)
	// Steps disturbed besides their load, marked before the capacity is judged on them.
	markDisturbed(r)
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
func (b *q) variants() []*Variant {
	out := make([]*Variant, 0, len(b.rows.Variants))
	for _, rv := range b.rows.Variants {
		v := &Variant{Name: rv.Name, App: rv.App, GeneratorApp: rv.GeneratorApp, Config: rv.Config, Repeat: rv.Repeat, Steps: []*Step{}}
		if !b.rows.Repeats {
			v.Config, v.Repeat = "", 0
		}
		v.LoadUnit = "users"
		if rv.Model == string(spec.ModelOpen) {
			v.LoadUnit = "req/s offered"
		}
		out = append(out, v)
	}
	return out
}

func variantNamed(vs []*Variant, name string) *Variant {
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// steps turns the stored step figures (step_metrics) and the apps' CPU and memory
// (step_app_metrics) of every variant into its steps, and the steps' windows.
func (b *q) steps(vs []*Variant) error {
	missing := map[string][]int{}
	for _, st := range b.rows.Steps {
		v := variantNamed(vs, st.Variant)
		if v == nil {
			continue
		}
		idx := st.Idx
		w := StepWindow{Step: idx + 1, StartS: st.StartS, WarmupEndS: st.WarmupEndS, EndS: st.EndS}
		if v.Series == nil {
			v.Series = &Series{}
		}
		v.Series.Steps = append(v.Series.Steps, w)
		if !st.HasMetrics && !st.Live {
			missing[st.Variant] = append(missing[st.Variant], idx+1)
			continue
		}
		s := Step{Step: idx + 1, Seconds: st.Seconds, Count: st.Count, Errors: st.Errors, Bytes: st.Bytes, Throughput: st.Throughput,
			MeanUS: st.MeanUS, P50US: st.P50US, P90US: st.P90US, P99US: st.P99US, P999US: st.P999US, MinUS: st.MinUS, MaxUS: st.MaxUS,
			Instances: st.Instances, InstancesSeen: st.InstancesSeen, Users: st.Users, OfferedRate: st.OfferedRate, Missed: st.Missed,
			SendLagMeanUS: st.SendLagMeanUS, SendLagP99US: st.SendLagP99US, StalledMS: st.StalledMS, Omitted: st.Omitted, Live: st.Live}
		if err := json.Unmarshal(st.ErrorsByClass, &s.ErrorsByClass); err != nil {
			return fmt.Errorf("step %d of %s: errors_by_class: %w", idx+1, st.Variant, err)
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
	for _, v := range vs {
		if m := missing[v.Name]; len(m) > 0 {
			b.notef("%s: step(s) %s have no stored figures (step_metrics is written after a step ends): left out", v.Name, joinInts(m))
		}
	}
	b.appMetrics(vs)
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func (b *q) appMetrics(vs []*Variant) {
	for _, ra := range b.rows.Apps {
		v := variantNamed(vs, ra.Variant)
		if v == nil {
			continue
		}
		i := slices.IndexFunc(v.Steps, func(s *Step) bool { return s.Step == ra.Idx+1 })
		if i < 0 {
			continue
		}
		a := AppUsage{Name: ra.App, Instances: ra.Instances, CPUSource: ra.CPUSource, CPUPoints: ra.CPUPoints, CPUCovered: ra.CPUCovered,
			CPUMeanCores: ra.CPUMeanCores, CPUMaxCores: ra.CPUMaxCores, CPUTotalCores: ra.CPUTotalCores, Cells: ra.Cells,
			CPUAvailableCores: ra.CPUAvailableCores, MemMeanBytes: ra.MemMeanBytes, MemMaxBytes: ra.MemMaxBytes, MemQuotaBytes: ra.MemQuotaBytes}
		s := v.Steps[i]
		if ra.Role == "generator" {
			s.Generator = &a
			continue
		}
		if a.CPUTotalCores != nil && *a.CPUTotalCores > 0 {
			per := s.Throughput / *a.CPUTotalCores
			perPct := per / 100
			a.ThroughputPerCore, a.ThroughputPerCPUPercent = &per, &perPct
		}
		if a.CPUTotalCores != nil && a.CPUAvailableCores != nil && *a.CPUAvailableCores > 0 {
			u := *a.CPUTotalCores / *a.CPUAvailableCores
			a.Utilisation = &u
		}
		s.App = &a
		if v.App == "" {
			v.App = a.Name
		}
	}
}

// interval is the width of a series' intervals in seconds: 1 s, or wider so that a
// span of seconds fits in maxPoints.
func interval(span float64, maxPoints int) float64 {
	return max(1, math.Ceil(span/float64(maxPoints)))
}

// series turns each variant's throughput, p50, p99 and errors per interval of intended
// send time and step (warm-up included) into its series, and the run's router-log
// coverage and latency decomposition per step into the steps'. Percentiles per
// interval are observed values, like the steps'.
func (b *q) series(vs []*Variant) {
	width := b.rows.IntervalS
	for _, v := range vs {
		if v.Series == nil {
			v.Series = &Series{}
		}
		sr := v.Series
		sr.IntervalS = width
		for _, p := range b.rows.Series[v.Name] {
			// Requests per second over the part of the interval the step covers.
			from, to := float64(p.K)*width, float64(p.K+1)*width
			if i := slices.IndexFunc(sr.Steps, func(w StepWindow) bool { return w.Step == p.Idx+1 }); i >= 0 {
				from = max(from, sr.Steps[i].StartS)
				if e := sr.Steps[i].EndS; e != nil {
					to = min(to, *e)
				}
			}
			if to-from < 0.05*width {
				to = from + width // a sliver: do not blow its rate up
			}
			sr.T = append(sr.T, p.MeanUS/1e6)
			sr.Throughput = append(sr.Throughput, float64(p.N)/(to-from))
			sr.Errors = append(sr.Errors, p.Errs)
			sr.P99US = append(sr.P99US, p.P99US)
			if p.P50US != nil {
				sr.P50US = append(sr.P50US, *p.P50US)
			}
		}
		if len(sr.P50US) != len(sr.P99US) { // a point without: none, rather than some out of place
			sr.P50US = nil
		}
	}
	for _, m := range b.rows.RouterSteps {
		if v := variantNamed(vs, m.Variant); v != nil {
			b.decompose(v, m)
		}
	}
}

// memory gives each variant's app its memory per instance over the run, per poll (or
// per interval when there are more polls than MaxPoints).
func (b *q) memory(vs []*Variant) {
	for _, v := range vs {
		if v.App == "" {
			continue
		}
		m := &Memory{}
		for _, p := range b.rows.Memory[v.App] {
			m.T = append(m.T, p.T)
			m.MeanBytes = append(m.MeanBytes, p.MeanBytes)
			if p.QuotaBytes != nil {
				m.QuotaBytes = p.QuotaBytes
			}
		}
		if len(m.T) == 0 {
			continue
		}
		m.SettledBytes, m.Settled = settle(m.MeanBytes)
		v.Memory = m
	}
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
func (b *q) decomposition() {
	switch {
	case !b.rows.HasRouter && !b.rows.HasApp:
		b.notef("no router logs and no app timings: no latency decomposition (collectors.router_logs, collectors.app_timings)")
	case !b.rows.HasRouter:
		b.notef("no router logs: no latency decomposition, which needs router and app timings of the same requests (collectors.router_logs)")
	case !b.rows.HasApp:
		b.notef("no app timings: no latency decomposition, which needs router and app timings of the same requests (collectors.app_timings)")
	}
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
func (b *q) findings(vs []*Variant) ([]Finding, error) {
	out := make([]Finding, 0, len(b.rows.Findings))
	for _, rf := range b.rows.Findings {
		f := Finding{At: rf.At.UTC(), Variant: rf.Variant, Step: rf.Idx + 1, Level: rf.Level, Message: rf.Message, Check: rf.Check}
		// Older runs put the check's name in front of the message only.
		if check, msg, ok := strings.Cut(f.Message, ": "); ok && !strings.Contains(check, " ") && (f.Check == "" || f.Check == check) {
			f.Check, f.Message = check, msg
		}
		if len(rf.Evidence) > 0 {
			if err := json.Unmarshal(rf.Evidence, &f.Figures); err != nil {
				return nil, fmt.Errorf("read the findings of run %s: evidence of a finding: %w", b.rows.Run.ID, err)
			}
		}
		out = append(out, f)
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
	if b.rows.Pulls == 0 {
		b.notef("no router logs were pulled for this run: no coverage")
		return nil
	}
	out := make([]CoverageRow, len(b.rows.RouterSteps))
	for i, m := range b.rows.RouterSteps {
		c := m.Coverage
		out[i] = CoverageRow{Variant: c.Variant, Step: c.Step + 1, Sent: c.Sent, Found: c.Found, Missing: c.Missing(),
			Share: c.Share(), Verdict: CoverageVerdict(c, b.rows.BudgetExhausted)}
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
func (b *q) flushes() []FlushRow {
	var out []FlushRow
	for _, fs := range b.rows.Flushes {
		f := FlushRow{Variant: fs.Variant, Step: fs.Idx + 1, Instances: fs.Instances, Failed: fs.Failed, RowsReceived: fs.RowsReceived,
			Stored: fs.Stored, Foreign: fs.Foreign, Dropped: fs.Dropped}
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
		out = append(out, f)
	}
	return out
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
		if len(u.Steps) == 1 || *a.CPUTotalCores > u.CPUMaxTotalCores {
			u.CPUMaxTotalCores, u.Cells, u.CoresAvailable, u.Utilisation = *a.CPUTotalCores, a.Cells, a.CPUAvailableCores, a.Utilisation
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
