package resultsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Faults on purpose: the engine records each fault it injected as a run event of kind
// FaultEventKind (its evidence: the action, the instance it hit, how long until that
// ran again); FaultRecovery measures the requests of its step around it, and
// FaultRecovery.Back judges when the latency was back.

// FaultEventKind is the run_events kind of an injected fault.
const FaultEventKind = "fault"

// The rule of "back" (docs/spec.md, "Faults"). A second after the fault is good when it
// has requests, its p99 is at most the pre-fault p99 × RecoveryP99Factor or +
// RecoveryP99Floor (whichever is higher: a fast app's p99 doubles from a millisecond
// without anyone noticing), and its share of failed requests is at most the pre-fault
// share + RecoveryErrorShare; a window of RecoveryWindow seconds is good by the same
// rule over all its requests (its own p99: one noisy second of a loaded host does not
// break it). The step's latency is back at the start of the first good window that
// starts after the first second that was not good; undisturbed when every second was.
const (
	RecoveryWindow     = 3
	RecoveryP99Factor  = 1.2
	RecoveryP99Floor   = 5 * time.Millisecond
	RecoveryErrorShare = 0.01
)

// FaultPhase is the figures of the requests of a part of a step: how many were sent
// (by intended time), how many failed (no response, or a status ≥ 400), their p99.
type FaultPhase struct {
	Count, Errors int64
	P99           time.Duration
}

// ErrorShare is the share of the requests that failed, 0 without requests.
func (p FaultPhase) ErrorShare() float64 {
	if p.Count == 0 {
		return 0
	}
	return float64(p.Errors) / float64(p.Count)
}

// Fault is an injected fault as the run recorded it, with the requests of its step
// around it (FaultRecovery).
type Fault struct {
	Variant string
	Idx     int       // the step, 0-based
	At      time.Time // when it was applied, on the database's clock
	Level   string    // info when applied, warn when it could not be
	Message string
	// Action and the rest are the event's evidence: App is "app" or "generator",
	// Instances the guids it hit, RunningAgain how long after it the instances it hit
	// ran again (nil: not within the step, or it hit none), Error why it was not
	// applied.
	Action       string
	App          string
	Index        int
	Cell         string
	Instances    []string
	RunningAgain *time.Duration
	Error        string
	Recovery     FaultRecovery
}

// FaultRecovery is the requests of a step around a fault at At: Before from the end of
// the warm-up to the fault, After from the fault to the step's end, During from the
// fault until the latency was back (Back; to the step's end when it was not, and After
// when no second was disturbed); Seconds the second by second figures after the fault
// (the last may be partial); ErrorsByClass the failed requests after the fault by class
// (a transport error's class, else http_NNN, as a step's errors_by_class).
type FaultRecovery struct {
	Before, After, During FaultPhase
	Seconds               []FaultPhase
	// Windows are the sliding windows of RecoveryWindow seconds after the fault, one
	// starting at each second that has a whole window before the step's end.
	Windows       []FaultPhase
	ErrorsByClass map[string]int64
}

// RecoveryState is what Back found.
type RecoveryState string

const (
	// RecoveryNoBaseline: the step has no request between its warm-up and the fault.
	RecoveryNoBaseline RecoveryState = "no_baseline"
	// RecoveryUndisturbed: no second after the fault was bad.
	RecoveryUndisturbed RecoveryState = "undisturbed"
	// RecoveryBack: the latency was back within the step.
	RecoveryBack RecoveryState = "back"
	// RecoveryNotBack: not recovered within the step.
	RecoveryNotBack RecoveryState = "not_back"
)

// Limit is the p99 a second after the fault may have to count as good.
func (r FaultRecovery) Limit() time.Duration {
	return max(time.Duration(float64(r.Before.P99)*RecoveryP99Factor), r.Before.P99+RecoveryP99Floor)
}

// Good says whether second i after the fault is within the pre-fault level.
func (r FaultRecovery) Good(i int) bool { return r.good(r.Seconds[i]) }

func (r FaultRecovery) good(p FaultPhase) bool {
	return p.Count > 0 && p.P99 <= r.Limit() && p.ErrorShare() <= r.Before.ErrorShare()+RecoveryErrorShare
}

// Back is how long after the fault its step's latency was back within the pre-fault
// level, by the rule above, and what it found.
func (r FaultRecovery) Back() (time.Duration, RecoveryState) {
	if r.Before.Count == 0 {
		return 0, RecoveryNoBaseline
	}
	first := -1
	for i := range r.Seconds {
		if !r.Good(i) {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, RecoveryUndisturbed
	}
	for k := first + 1; k < len(r.Windows); k++ {
		if r.good(r.Windows[k]) {
			return time.Duration(k) * time.Second, RecoveryBack
		}
	}
	return 0, RecoveryNotBack
}

// Disturbed is how many seconds after the fault were not good.
func (r FaultRecovery) Disturbed() int {
	n := 0
	for i := range r.Seconds {
		if !r.Good(i) {
			n++
		}
	}
	return n
}

// Faults returns the run's injected faults in the order they were recorded, each with
// the requests around it.
func (s *Store) Faults(ctx context.Context, runID string) ([]Fault, error) {
	return readFaults(ctx, s.pool, s.dialect(), runID)
}

// FaultSpan is what a fault's recovery is measured over, on the database's clock: the
// pre-fault level from the end of the step's warm-up to Baseline (the step's first
// fault: a second fault is judged against the step undisturbed, not against the first
// one's aftermath), the fault at At, and its aftermath to Until (the step's next fault;
// the zero time for none: the step's end), so that a later fault's disturbance is not
// counted as this one's.
type FaultSpan struct {
	Baseline, At, Until time.Time
}

// FaultSpans are the spans of faults (as Faults returns them): per step, the first
// fault's time as the baseline of all, and each fault's aftermath to the next one.
func FaultSpans(faults []Fault) []FaultSpan {
	out := make([]FaultSpan, len(faults))
	for i, f := range faults {
		out[i] = FaultSpan{Baseline: f.At, At: f.At}
		for _, g := range faults {
			if g.Variant != f.Variant || g.Idx != f.Idx || g.Error != "" {
				continue
			}
			if g.At.Before(out[i].Baseline) {
				out[i].Baseline = g.At
			}
			if g.At.After(f.At) && (out[i].Until.IsZero() || g.At.Before(out[i].Until)) {
				out[i].Until = g.At
			}
		}
	}
	return out
}

// FaultRecovery measures the requests of step idx of variant around a fault (span).
func (s *Store) FaultRecovery(ctx context.Context, runID, variant string, idx int, span FaultSpan) (FaultRecovery, error) {
	return faultRecovery(ctx, s.pool, s.dialect(), runID, variant, idx, span)
}

func readFaults(ctx context.Context, db queryer, d dialect, runID string) ([]Fault, error) {
	rows, err := db.Query(ctx, `SELECT at, coalesce(variant, ''), coalesce(step, -1), level, message, evidence
FROM run_events WHERE run_id = $1 AND kind = $2 ORDER BY id`, runID, FaultEventKind)
	if err != nil {
		return nil, fmt.Errorf("read the faults of run %s: %w", runID, err)
	}
	type row struct {
		f        Fault
		evidence []byte
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.f.At, &x.f.Variant, &x.f.Idx, &x.f.Level, &x.f.Message, &x.evidence)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the faults of run %s: %w", runID, err)
	}
	var out []Fault // nil without faults, as an export directory gives
	for _, x := range got {
		f, err := FaultOfEvent(x.f.At, x.f.Variant, x.f.Idx, x.f.Level, x.f.Message, x.evidence)
		if err != nil {
			return nil, fmt.Errorf("read the faults of run %s: %w", runID, err)
		}
		out = append(out, f)
	}
	for i, span := range FaultSpans(out) {
		if f := &out[i]; f.Idx >= 0 && f.Error == "" {
			if f.Recovery, err = faultRecovery(ctx, db, d, runID, f.Variant, f.Idx, span); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// FaultOfEvent is the fault a run event of kind FaultEventKind records (idx the 0-based
// step, -1 for none), without its Recovery.
func FaultOfEvent(at time.Time, variant string, idx int, level, message string, evidence []byte) (Fault, error) {
	f := Fault{At: at, Variant: variant, Idx: idx, Level: level, Message: message}
	var ev struct {
		Action       string   `json:"action"`
		App          string   `json:"app"`
		Index        int      `json:"index"`
		Cell         string   `json:"cell"`
		Instances    []string `json:"instance_guids"`
		RunningAgain *int64   `json:"running_again_ms"`
		Error        string   `json:"error"`
	}
	if len(evidence) > 0 {
		if err := json.Unmarshal(evidence, &ev); err != nil {
			return f, fmt.Errorf("the evidence of a fault: %w", err)
		}
	}
	f.Action, f.App, f.Index, f.Cell, f.Instances, f.Error = ev.Action, ev.App, ev.Index, ev.Cell, ev.Instances, ev.Error
	if ev.RunningAgain != nil {
		d := time.Duration(*ev.RunningAgain) * time.Millisecond
		f.RunningAgain = &d
	}
	return f, nil
}

// faultSamples are the samples of the step that count: after its warm-up ($1 run, $2
// variant, $3 step); afterFault those of them from the fault ($4, µs from the epoch) to
// the end of its span ($5).
const (
	faultSamples = `FROM workers w JOIN samples s ON s.worker_id = w.id AND s.step = $3
WHERE w.run_id = $1 AND w.variant = $2 AND NOT s.warmup`
	afterFault = faultSamples + ` AND s.intended_us >= $4::bigint AND s.intended_us < $5::bigint`
)

func faultRecovery(ctx context.Context, db queryer, d dialect, runID, variant string, idx int, span FaultSpan) (FaultRecovery, error) {
	fail := func(err error) (FaultRecovery, error) {
		return FaultRecovery{}, fmt.Errorf("measure the recovery from the fault in step %d of %s: %w", idx+1, variant, err)
	}
	// The span in µs since the run's epoch, as samples count; its end the step's when
	// nothing comes sooner.
	var until *time.Time
	if !span.Until.IsZero() {
		until = &span.Until
	}
	var baseUS, atUS, endUS int64
	if err := db.QueryRow(ctx, `SELECT (extract(epoch FROM $4::timestamptz - r.epoch) * 1e6)::bigint,
       (extract(epoch FROM $5::timestamptz - r.epoch) * 1e6)::bigint,
       (extract(epoch FROM least(coalesce(st.ended_at, st.ends_at, now()), $6::timestamptz) - r.epoch) * 1e6)::bigint
FROM runs r JOIN steps st ON st.run_id = r.id AND st.variant = $2 AND st.idx = $3 WHERE r.id = $1`,
		runID, variant, idx, span.Baseline, span.At, until).Scan(&baseUS, &atUS, &endUS); err != nil {
		return fail(err)
	}
	r := FaultRecovery{ErrorsByClass: map[string]int64{}}
	var mean float64
	phase := func(sql string, args ...any) (FaultPhase, error) {
		var p FaultPhase
		var p99 int64
		err := db.QueryRow(ctx, intervalsSQL(d, sql, column{"1", "one"}), args...).Scan(new(int32), &p.Count, &p.Errors, new(int64), &p99, &mean)
		if errors.Is(err, pgx.ErrNoRows) {
			return FaultPhase{}, nil
		}
		p.P99 = us(p99)
		return p, err
	}
	var err error
	// Before the step's first fault, and from this one to the end of its span.
	if r.Before, err = phase(faultSamples+` AND s.intended_us < $4::bigint`, runID, variant, idx, baseUS); err != nil {
		return fail(err)
	}
	if r.After, err = phase(afterFault, runID, variant, idx, atUS, endUS); err != nil {
		return fail(err)
	}
	// Second by second after it, and in sliding windows of RecoveryWindow seconds: each
	// sample is in the windows that start at its second and the RecoveryWindow-1 before.
	n := max(int(math.Ceil(float64(endUS-atUS)/1e6)), 0)
	r.Seconds = make([]FaultPhase, n)
	r.Windows = make([]FaultPhase, max(n-RecoveryWindow+1, 0))
	for _, q := range []struct {
		from string
		key  column
		into []FaultPhase
	}{
		{afterFault, column{"(s.intended_us - $4::bigint) / 1000000", "k"}, r.Seconds},
		{`FROM workers w JOIN samples s ON s.worker_id = w.id AND s.step = $3
CROSS JOIN LATERAL generate_series((s.intended_us - $4::bigint) / 1000000 - ` + strconv.Itoa(RecoveryWindow-1) + `, (s.intended_us - $4::bigint) / 1000000) AS win(k)
WHERE w.run_id = $1 AND w.variant = $2 AND NOT s.warmup AND s.intended_us >= $4::bigint AND s.intended_us < $5::bigint AND win.k >= 0`,
			column{"win.k", "k"}, r.Windows},
	} {
		rows, err := db.Query(ctx, intervalsSQL(d, q.from, q.key), runID, variant, idx, atUS, endUS)
		if err != nil {
			return fail(err)
		}
		for rows.Next() {
			var k, p50, p99 int64
			var p FaultPhase
			if err := rows.Scan(&k, &p.Count, &p.Errors, &p50, &p99, &mean); err != nil {
				rows.Close()
				return fail(err)
			}
			p.P99 = us(p99)
			if k >= 0 && k < int64(len(q.into)) {
				q.into[k] = p
			}
		}
		if err := rows.Err(); err != nil {
			return fail(err)
		}
	}
	// From it until the latency was back.
	r.During = r.After
	if back, state := r.Back(); state == RecoveryBack {
		if r.During, err = phase(afterFault, runID, variant, idx, atUS, atUS+back.Microseconds()); err != nil {
			return fail(err)
		}
	}
	// The failed requests after it, by class.
	rows, err := db.Query(ctx, `SELECT s.error, s.status, count(*) `+afterFault+`
  AND (s.error <> 0 OR s.status >= 400) GROUP BY 1, 2`, runID, variant, idx, atUS, endUS)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var class, status int16
		var c int64
		if err := rows.Scan(&class, &status, &c); err != nil {
			rows.Close()
			return fail(err)
		}
		r.ErrorsByClass[errorClass(class, status)] += c
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return r, nil
}

// RecoverySample is a request of a fault's step as FaultRecoveryOf reads it: when it was
// due and its latency (µs from the run's epoch), whether it failed and its class (as
// errorClass names it), whether it was sent in the warm-up.
type RecoverySample struct {
	IntendedUS, LatencyUS int64
	Failed                bool
	Class                 string
	Warmup                bool
}

// FaultRecoveryOf computes what FaultRecovery reads from the database from a step's
// samples (any order), the span in µs from the run's epoch: the baseline, the fault and
// the end of its span (the step's end or its next fault, whichever is sooner): for
// readers of an export directory, which must give the same figures.
func FaultRecoveryOf(baseUS, atUS, endUS int64, samples []RecoverySample) FaultRecovery {
	n := max(int(math.Ceil(float64(endUS-atUS)/1e6)), 0)
	r := FaultRecovery{ErrorsByClass: map[string]int64{}, Seconds: make([]FaultPhase, n), Windows: make([]FaultPhase, max(n-RecoveryWindow+1, 0))}
	var before, after []int64
	seconds := map[int64][]int64{}
	windows := map[int64][]int64{}
	add := func(p *FaultPhase, s RecoverySample) {
		p.Count++
		if s.Failed {
			p.Errors++
		}
	}
	var rest []RecoverySample
	for _, s := range samples {
		if s.Warmup {
			continue
		}
		if s.IntendedUS < baseUS {
			add(&r.Before, s)
			before = append(before, s.LatencyUS)
		}
		if s.IntendedUS < atUS || s.IntendedUS >= endUS {
			continue
		}
		rest = append(rest, s)
		add(&r.After, s)
		after = append(after, s.LatencyUS)
		if s.Failed {
			r.ErrorsByClass[s.Class]++
		}
		k := (s.IntendedUS - atUS) / 1_000_000
		if k < int64(n) {
			add(&r.Seconds[k], s)
			seconds[k] = append(seconds[k], s.LatencyUS)
		}
		for w := max(k-RecoveryWindow+1, 0); w <= k; w++ {
			if w < int64(len(r.Windows)) {
				add(&r.Windows[w], s)
				windows[w] = append(windows[w], s.LatencyUS)
			}
		}
	}
	r.Before.P99, r.After.P99 = p99Of(before), p99Of(after)
	for k, l := range seconds {
		r.Seconds[k].P99 = p99Of(l)
	}
	for k, l := range windows {
		r.Windows[k].P99 = p99Of(l)
	}
	r.During = r.After
	if back, state := r.Back(); state == RecoveryBack {
		until := atUS + back.Microseconds()
		var during []int64
		r.During = FaultPhase{}
		for _, s := range rest {
			if s.IntendedUS < until {
				add(&r.During, s)
				during = append(during, s.LatencyUS)
			}
		}
		r.During.P99 = p99Of(during)
	}
	return r
}

// p99Of is percentile_disc(0.99) of xs, 0 for none. It sorts xs.
func p99Of(xs []int64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return us(xs[max(int64(math.Ceil(0.99*float64(len(xs)))), 1)-1])
}

// readRunFaults reads the run's faults into r, for a report.
func readRunFaults(ctx context.Context, tx pgx.Tx, r *ReportRows) (err error) {
	r.Faults, err = readFaults(ctx, tx, r.dialect, r.Run.ID)
	return err
}
