package command

import (
	"fmt"

	"github.com/cf-benchmark/cf-benchmark/engine"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// textReporter prints a session's progress for people: a line per step and per finding,
// then what each stage produced (summary table, router-log coverage, export).
type textReporter struct{ env *Env }

var _ engine.Display = (*textReporter)(nil)

func (r *textReporter) Started(s engine.RunStarted) {
	fmt.Fprintf(r.env.Stdout, "run %s: %s, %d variant(s), %d step(s) each%s\n", s.ID, s.Spec.Name, len(s.Spec.Variants), s.Steps, repeats(s.Spec))
	fmt.Fprintf(r.env.Stdout, "export to %s\n", s.ExportDir)
}

// repeats is ", 3 repeats interleaved" for a spec that repeats its variants, else "".
func repeats(sp *spec.Spec) string {
	if sp.Repeat <= 1 {
		return ""
	}
	return fmt.Sprintf(", %d repeats interleaved", sp.Repeat)
}

func (r *textReporter) Note(msg string) { fmt.Fprintln(r.env.Stdout, msg) }

func (r *textReporter) Step(s engine.StepReport) {
	fmt.Fprintln(r.env.Stdout, report.StepLine(report.StepProgress{StepSummary: s.StepSummary, Steps: s.Steps, Left: s.Left}))
	if s.Stop != "" {
		fmt.Fprintf(r.env.Stdout, "%s: stopping the ramp: %s\n", s.Variant, s.Stop)
	}
}

func (r *textReporter) Finding(variant string, step int, f engine.Finding) {
	printFinding(r.env, variant, step, f)
}

// printFinding writes a finding of a step (0-based idx; -1 for none) as a line.
func printFinding(env *Env, variant string, idx int, f engine.Finding) {
	where := variant
	if idx >= 0 {
		where = fmt.Sprintf("%s step %d", variant, idx+1)
	}
	if where != "" {
		where += ": "
	}
	fmt.Fprintf(env.Stdout, "%s: %s%s: %s\n", findingLevel(f.Level), where, f.Check, f.Message)
}

func findingLevel(l spec.CheckLevel) string {
	if l == spec.CheckFail {
		return "FAILED"
	}
	return "warning"
}

func (r *textReporter) Done(stage engine.Stage, o *engine.Outcome) {
	w := r.env.Stdout
	switch stage {
	case engine.StageRun:
		fmt.Fprintf(w, "\nrun %s %s", o.Run.ID, o.Run.Status)
		if o.Run.Reason != "" {
			fmt.Fprintf(w, " (%s)", o.Run.Reason)
		}
		fmt.Fprintln(w, "; latencies from the intended send time, warm-up excluded")
		if err := report.Summary(w, o.Summaries); err != nil {
			fmt.Fprintf(r.env.Stderr, "summary: %v\n", err)
		}
		for _, f := range o.Findings {
			printFinding(r.env, f.Variant, f.Step, f.Finding)
		}
	case engine.StageRouterLogs:
		if o.RouterLogs != nil {
			printRouterLogs(r.env, o.Run.ID, o.RouterLogs)
		}
		routerLogsFailed(r.env, o)
	case engine.StageExport:
		fmt.Fprintln(w)
		printExport(r.env, o.ExportDir, o.Export.RunID, o.Export.RowCounts())
		fmt.Fprintf(w, "status: %s %s\n", r.env.command("status"), o.Run.ID)
	case engine.StageReport:
		if o.Report != nil {
			fmt.Fprintln(w)
			if err := o.Report.WriteText(w); err != nil {
				fmt.Fprintf(r.env.Stderr, "report: %v\n", err)
			}
		}
		reportDone(r.env, o)
	}
}

// reportDone says where the run's report is, or on stderr why it is not.
func reportDone(env *Env, o *engine.Outcome) {
	if o.ReportErr != nil {
		fmt.Fprintf(env.Stderr, "report: %v\nTry: %s %s --format html -o report.html\n", o.ReportErr, env.command("report"), o.Run.ID)
		return
	}
	fmt.Fprintf(env.Stdout, "report: %s\n", o.ReportFile)
}

// routerLogsFailed says on stderr why a session's router logs were not (all) pulled:
// the run's own data is complete, and the logs can be pulled again.
func routerLogsFailed(env *Env, o *engine.Outcome) {
	if o.RouterLogsErr != nil {
		fmt.Fprintf(env.Stderr, "router logs: %v\nTry: %s %s\n", o.RouterLogsErr, env.command("collect-logs"), o.Run.ID)
	}
}

// printRouterLogs prints what a pull of router logs did and the coverage per step.
func printRouterLogs(env *Env, runID string, rp *engine.RouterLogPull) {
	p := rp.Collection.Pull
	if rp.FromDrain() {
		fmt.Fprintf(env.Stdout, "router logs of run %s from its drain (every line as it came, no pull): %d router lines, %d requests of this run stored, %d of other clients, %d unparseable",
			runID, p.Retrieved, p.Stored, p.Foreign, p.Unparseable)
	} else {
		fmt.Fprintf(env.Stdout, "router logs of run %s from %s: %d documents read, %d requests of this run stored, %d of other clients, %d unparseable",
			runID, rp.Source, p.Retrieved, p.Stored, p.Foreign, p.Unparseable)
	}
	if p.BudgetExhausted {
		fmt.Fprint(env.Stdout, " (document budget spent)")
	}
	fmt.Fprintln(env.Stdout)
	if err := report.CoverageTable(env.Stdout, rp.Coverage, p.BudgetExhausted); err != nil {
		fmt.Fprintf(env.Stderr, "coverage: %v\n", err)
	}
}
