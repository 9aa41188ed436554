package command

import (
	"encoding/json"
	"time"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
)

// jsonReporter prints one JSON object per line for machines (--json): every object has
// "event" (started, note, step, finding, summary, router_logs, export) and "time".
type jsonReporter struct {
	env *Env
	enc *json.Encoder
	// dashboard is the live page's URL (--dashboard), in the started event; "" for none.
	dashboard string
	// metrics is where the figures go (--metrics): the URL to scrape or pushed to; "" for none.
	metrics string
}

var _ engine.Display = (*jsonReporter)(nil)

func newJSONReporter(env *Env) *jsonReporter {
	return &jsonReporter{env: env, enc: json.NewEncoder(env.Stdout)}
}

func (r *jsonReporter) emit(event string, fields map[string]any) {
	fields["event"], fields["time"] = event, r.env.Now().UTC().Format(time.RFC3339Nano)
	r.enc.Encode(fields)
}

func (r *jsonReporter) Started(s engine.RunStarted) {
	f := map[string]any{"run": s.ID, "name": s.Spec.Name, "variants": len(s.Spec.Variants), "steps": s.Steps,
		"repeats": max(s.Spec.Repeat, 1), "export_dir": s.ExportDir}
	if r.dashboard != "" {
		f["dashboard"] = r.dashboard
	}
	if r.metrics != "" {
		f["metrics"] = r.metrics
	}
	r.emit("started", f)
}

func (r *jsonReporter) Note(msg string) { r.emit("note", map[string]any{"message": msg}) }

func (r *jsonReporter) Step(s engine.StepReport) {
	f := stepFields(s)
	f["steps"], f["left_s"], f["stop"] = s.Steps, s.Left.Seconds(), s.Stop
	r.emit("step", f)
}

func (r *jsonReporter) Finding(variant string, step int, f engine.Finding) {
	r.emit("finding", map[string]any{"variant": variant, "step": step + 1, "check": f.Check, "level": string(f.Level), "message": f.Message,
		"evidence": f.Evidence})
}

func (r *jsonReporter) Done(stage engine.Stage, o *engine.Outcome) {
	switch stage {
	case engine.StageRun:
		rows := make([]map[string]any, len(o.Summaries))
		for i, s := range o.Summaries {
			rows[i] = stepFields(engine.StepReport{StepSummary: s})
		}
		r.emit("summary", map[string]any{"run": o.Run.ID, "status": string(o.Run.Status), "reason": o.Run.Reason, "steps": rows})
	case engine.StageRouterLogs:
		if rp := o.RouterLogs; rp != nil {
			r.routerLogs(o.Run.ID, rp)
		}
		routerLogsFailed(r.env, o)
	case engine.StageExport:
		r.emit("export", map[string]any{"run": o.Run.ID, "dir": o.ExportDir, "files": o.Export.Files})
	case engine.StageReport:
		if o.ReportErr != nil {
			reportDone(r.env, o)
			return
		}
		r.emit("report", map[string]any{"run": o.Run.ID, "file": o.ReportFile, "report": o.Report})
	}
}

func (r *jsonReporter) routerLogs(runID string, rp *engine.RouterLogPull) {
	p := rp.Collection.Pull
	rows := make([]map[string]any, len(rp.Coverage))
	for i, c := range rp.Coverage {
		rows[i] = map[string]any{"variant": c.Variant, "step": c.Step + 1, "sent": c.Sent, "found": c.Found, "missing": c.Missing(),
			"coverage": c.Share(), "gaps": report.CoverageVerdict(c, p.BudgetExhausted)}
	}
	r.emit("router_logs", map[string]any{"run": runID, "source": rp.Source, "retrieved": p.Retrieved, "stored": p.Stored,
		"foreign": p.Foreign, "unparseable": p.Unparseable, "budget_exhausted": p.BudgetExhausted, "coverage": rows})
}

// stepFields is the summary of a step as JSON fields; latencies in milliseconds, steps
// from 1; seconds is the measured window (after warm-up) that count and req_per_s cover.
func stepFields(s engine.StepReport) map[string]any {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	f := map[string]any{"variant": s.Variant, "step": s.Step + 1, "instances": s.Instances, "instances_seen": s.InstancesSeen,
		"users": s.Users, "offered_rate": s.OfferedRate, "count": s.Count, "errors": s.Errors, "errors_by_class": s.ErrorsByClass,
		"error_rate": s.ErrorRate(), "seconds": s.Seconds, "req_per_s": s.Throughput, "bytes": s.Bytes,
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
