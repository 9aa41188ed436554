package command

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// textReporter prints the run's progress for people: a line per step and per finding.
type textReporter struct {
	w       io.Writer
	started func(*resultsdb.Run)
}

var _ engine.Reporter = (*textReporter)(nil)

func (r *textReporter) Started(run *resultsdb.Run, sp *spec.Spec) {
	fmt.Fprintf(r.w, "run %s: %s, %d variant(s), %d step(s) each\n", run.ID, sp.Name, len(sp.Variants), len(sp.Ramp.Steps()))
	if r.started != nil {
		r.started(run)
	}
}

func (r *textReporter) Note(msg string) { fmt.Fprintln(r.w, msg) }

func (r *textReporter) Step(s engine.StepReport) {
	fmt.Fprintln(r.w, report.StepLine(report.StepProgress{StepSummary: s.StepSummary, Steps: s.Steps, Left: s.Left}))
	if s.Stop != "" {
		fmt.Fprintf(r.w, "%s: stopping the ramp: %s\n", s.Variant, s.Stop)
	}
}

func (r *textReporter) Finding(variant string, step int, f engine.Finding) {
	level := "warning"
	if f.Level == spec.CheckFail {
		level = "FAILED"
	}
	fmt.Fprintf(r.w, "%s: %s step %d: %s: %s\n", level, variant, step+1, f.Check, f.Message)
}

// jsonReporter prints one JSON object per line for machines (--json): every object has
// "event" (started, note, step, finding, summary, export) and "time".
type jsonReporter struct {
	enc     *json.Encoder
	started func(*resultsdb.Run)
}

var _ engine.Reporter = (*jsonReporter)(nil)

func newJSONReporter(w io.Writer, started func(*resultsdb.Run)) *jsonReporter {
	return &jsonReporter{enc: json.NewEncoder(w), started: started}
}

func (r *jsonReporter) emit(event string, fields map[string]any) {
	fields["event"], fields["time"] = event, time.Now().UTC().Format(time.RFC3339Nano)
	r.enc.Encode(fields)
}

func (r *jsonReporter) Started(run *resultsdb.Run, sp *spec.Spec) {
	r.emit("started", map[string]any{"run": run.ID, "name": sp.Name, "variants": len(sp.Variants), "steps": len(sp.Ramp.Steps())})
	if r.started != nil {
		r.started(run)
	}
}

func (r *jsonReporter) Note(msg string) { r.emit("note", map[string]any{"message": msg}) }

func (r *jsonReporter) Step(s engine.StepReport) {
	f := stepFields(s.StepSummary)
	f["steps"], f["left_s"], f["stop"] = s.Steps, s.Left.Seconds(), s.Stop
	r.emit("step", f)
}

func (r *jsonReporter) Finding(variant string, step int, f engine.Finding) {
	r.emit("finding", map[string]any{"variant": variant, "step": step + 1, "check": f.Check, "level": string(f.Level), "message": f.Message,
		"evidence": f.Evidence})
}

// stepFields is a step summary as JSON fields; latencies in milliseconds, steps from 1.
func stepFields(s resultsdb.StepSummary) map[string]any {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	f := map[string]any{"variant": s.Variant, "step": s.Step + 1, "instances": s.Instances, "instances_seen": s.InstancesSeen,
		"users": s.Users, "offered_rate": s.OfferedRate, "count": s.Count, "errors": s.Errors, "errors_by_class": s.ErrorsByClass,
		"error_rate": s.ErrorRate(), "req_per_s": s.Throughput, "bytes": s.Bytes,
		"mean_ms": ms(s.Mean), "p50_ms": ms(s.P50), "p90_ms": ms(s.P90), "p99_ms": ms(s.P99), "p999_ms": ms(s.P999),
		"min_ms": ms(s.Min), "max_ms": ms(s.Max), "missed": s.Missed, "send_lag_mean_ms": ms(s.SendLagMean),
		"stalled_ms": s.Stalled.Milliseconds(), "omitted": s.Omitted}
	for _, a := range s.Apps {
		if a.CPUMeanCores != nil {
			f[a.Role+"_cpu_cores"] = *a.CPUMeanCores
		}
	}
	return f
}
