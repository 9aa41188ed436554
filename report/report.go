// Package report renders what a user reads about a run: the progress line of a step and
// the summary table per variant and step. It only formats; the figures come from resultsdb.
package report

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// Millis formats a latency in milliseconds with enough digits for sub-millisecond values.
func Millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.3f", ms)
	case ms < 1000:
		return fmt.Sprintf("%.1f", ms)
	}
	return fmt.Sprintf("%.0f", ms)
}

// StepProgress is a finished step as its progress line shows it.
type StepProgress struct {
	resultsdb.StepSummary
	Steps int           // steps of the variant's ramp
	Left  time.Duration // at least this long until the run ends
	// InstancesSeen, when above Instances, is shown: a user scaled the generators by hand.
	InstancesSeen int
	// AppCPU is the app's mean CPU per instance as a fraction of a core, and
	// AppEntitlement the same relative to its entitlement; nil when unknown.
	AppCPU, AppEntitlement *float64
}

// StepLine is the one-line progress report printed when a step ends.
func StepLine(p StepProgress) string {
	s := p.StepSummary
	inst := fmt.Sprint(s.Instances)
	if p.InstancesSeen > s.Instances {
		inst = fmt.Sprintf("%d (%d seen)", s.Instances, p.InstancesSeen)
	}
	cpu := ""
	if p.AppCPU != nil {
		cpu = fmt.Sprintf("  app CPU %.0f%%", 100**p.AppCPU)
		if p.AppEntitlement != nil {
			cpu += fmt.Sprintf(" (%.0f%% of entitlement)", 100**p.AppEntitlement)
		}
	}
	return fmt.Sprintf("%s  step %d/%d  instances %s x %d users  %.1f req/s  p50 %sms  p99 %sms  errors %.2f%%%s  %s left",
		s.Variant, s.Step+1, p.Steps, inst, s.Users, s.Throughput, Millis(s.P50), Millis(s.P99), 100*s.ErrorRate(), cpu, p.Left.Round(time.Second))
}

// Summary writes the summary table: one row per variant and step, latencies in ms,
// warm-up excluded; then a line for every step whose figures need a caveat.
func Summary(w io.Writer, rows []resultsdb.StepSummary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tstep\tinstances\tusers\tcount\treq/s\tmean ms\tp50 ms\tp90 ms\tp99 ms\tmin ms\tmax ms\terrors\tmissed\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
			r.Variant, r.Step+1, r.Instances, r.Users, r.Count, r.Throughput,
			Millis(r.Mean), Millis(r.P50), Millis(r.P90), Millis(r.P99), Millis(r.Min), Millis(r.Max), r.Errors, r.Missed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range Caveats(rows) {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// Caveats explains the steps whose figures must not be read at face value.
func Caveats(rows []resultsdb.StepSummary) []string {
	var out []string
	for _, r := range rows {
		if r.OmissionShare() >= resultsdb.OmissionWarnAt {
			out = append(out, fmt.Sprintf("warning: %s step %d: the closed loop hid stalls: about %d requests (%.0f%% of the step) were never sent while its users waited on slow responses, so its percentiles understate latency. Try: model: open",
				r.Variant, r.Step+1, r.Omitted, 100*r.OmissionShare()))
		}
		if r.Missed > 0 {
			out = append(out, fmt.Sprintf("warning: %s step %d: %d open-loop requests were due but never sent: every allowed request was in flight (workload.max_in_flight), so the target did not keep up with the rate",
				r.Variant, r.Step+1, r.Missed))
		}
	}
	return out
}
