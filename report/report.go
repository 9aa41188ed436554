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
}

// StepLine is the one-line progress report printed when a step ends. Instances seen
// above those planned are shown: a user scaled the generators by hand.
func StepLine(p StepProgress) string {
	s := p.StepSummary
	inst := fmt.Sprint(s.Instances)
	if s.InstancesSeen > s.Instances {
		inst = fmt.Sprintf("%d (%d seen)", s.Instances, s.InstancesSeen)
	}
	load := fmt.Sprintf("instances %s x %d users", inst, s.Users)
	if s.Open && s.OfferedRate != nil {
		load = fmt.Sprintf("instances %s at %.1f req/s offered", inst, *s.OfferedRate)
	}
	return fmt.Sprintf("%s  step %d/%d  %s  %.1f req/s  p50 %sms  p99 %sms  errors %.2f%%%s  %s left",
		s.Variant, s.Step+1, p.Steps, load, s.Throughput, Millis(s.P50), Millis(s.P99), 100*s.ErrorRate(), cpuOf(s), p.Left.Round(time.Second))
}

// cpuOf writes the CPU of a step's app and generators in cores per instance, the app's
// share of the CPU available where known, saying when a figure rests on few sampled
// readings.
func cpuOf(s resultsdb.StepSummary) string {
	out := ""
	for _, role := range []string{resultsdb.RoleApp, resultsdb.RoleGenerator} {
		a, ok := s.App(role)
		if !ok || a.CPUMeanCores == nil {
			continue
		}
		name := "app"
		if role == resultsdb.RoleGenerator {
			name = "generators"
		}
		out += fmt.Sprintf("  %s CPU %.2f cores/instance", name, *a.CPUMeanCores)
		if role == resultsdb.RoleApp && a.Instances > 0 {
			out += fmt.Sprintf(" of %d instance(s)", a.Instances) // a ramp of app instances changes it step by step
			if u := a.Utilisation(); u != nil {
				out += fmt.Sprintf(", %.0f%% of the %.2f cores of %d cell(s)", 100**u, *a.CPUAvailableCores, *a.Cells)
			}
		}
		if a.CPUSource == resultsdb.CPUFromStats && a.CPUPoints < FewCPUReadings*max(a.Instances, 1) {
			out += fmt.Sprintf(" (%d readings)", a.CPUPoints)
		}
	}
	return out
}

// FewCPUReadings is the number of sampled CPU readings per instance under which a
// step's CPU figure is shown with its count: it rests on too little to trust alone.
const FewCPUReadings = 5

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

// Caveats explains the steps whose figures must not be read at face value. Stalls and
// the other confounders are findings of the checks; this is what the figures say alone.
func Caveats(rows []resultsdb.StepSummary) []string {
	var out []string
	for _, r := range rows {
		if r.Missed > 0 {
			out = append(out, fmt.Sprintf("warning: %s step %d: %d open-loop requests were due but never sent: every allowed request was in flight (workload.max_in_flight), so the target did not keep up with the rate",
				r.Variant, r.Step+1, r.Missed))
		}
		for _, a := range r.Apps {
			if a.CPUSource == resultsdb.CPUFromStats && a.CPUPoints < FewCPUReadings*max(a.Instances, 1) {
				out = append(out, fmt.Sprintf("note: %s step %d: the CPU of %s rests on %d sampled readings of %d instance(s); a longer hold or a shorter collectors.container_metrics.interval makes it firmer",
					r.Variant, r.Step+1, a.App, a.CPUPoints, a.Instances))
			}
		}
	}
	return out
}
