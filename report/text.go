package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report's JSON form, the documented contract (REPORT.md).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write the report as JSON: %w", err)
	}
	return nil
}

// textWriter collects the first write error, so the renderer reads as a script.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// table writes rows (cells separated by tabs) aligned, indented by two spaces.
func (t *textWriter) table(header string, rows []string) {
	if t.err != nil {
		return
	}
	tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
	for _, line := range append([]string{header}, rows...) {
		fmt.Fprintf(tw, "  %s\n", line)
	}
	t.err = tw.Flush()
}

func fmtOpt(p *float64, format string) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf(format, *p)
}

func optNum(p *float64) string {
	if p == nil {
		return "–"
	}
	return num(*p)
}

// load formats a load level: whole users as integers.
func load(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprint(int64(x))
	}
	return num(x)
}

func ratioText(p *float64) string { return fmtOpt(p, "%.2f×") }

// inSpread marks a ratio whose difference is inside the repeats' spread, or apart from it.
func inSpread(p *bool) string {
	switch {
	case p == nil:
		return ""
	case *p:
		return " (inside)"
	}
	return " (apart)"
}

func mb(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

// WriteText writes the report as text: per run the seven sections, then the changes
// against the baseline, the run-to-run spread and the thresholds.
func (r *Report) WriteText(w io.Writer) error {
	t := &textWriter{w: w}
	if len(r.Headline) > 0 {
		t.printf("%s\n", headlineTitle(r))
		for _, h := range r.Headline {
			t.printf("  %s\n", h.Text)
		}
		t.printf("\n")
	}
	for i, run := range r.Runs {
		if i > 0 {
			t.printf("\n")
		}
		t.run(run, "run")
	}
	if r.Baseline != nil {
		t.printf("\n")
		t.run(r.Baseline, "baseline run")
		t.printf("\nChanges against the baseline %s (latency: the worst step of those both runs have)\n", r.Baseline.ID)
		var rows []string
		for _, c := range r.Changes {
			where := ""
			if c.Step > 0 {
				where = fmt.Sprint(c.Step)
			}
			ch := "–"
			if c.Change != nil {
				ch = fmt.Sprintf("%+.1f%%", 100**c.Change)
			}
			if c.Bound {
				ch += " (lower bound)"
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", c.Run, c.Variant, c.Metric, where, figureAs(c.Baseline, c.Unit, c.BaselineBasis), figureAs(c.Value, c.Unit, c.Basis), ch))
		}
		if len(rows) == 0 {
			t.printf("  no variant of the runs is in the baseline\n")
		} else {
			t.table("run\tvariant\tfigure\tstep\tbaseline\tthis run\tchange", rows)
		}
	}
	if len(r.Spread) > 0 {
		t.printf("\nRun-to-run spread (repeats of one spec)\n")
		var rows []string
		for _, s := range r.Spread {
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%.1f%%", s.Name, s.Variant, s.Metric, len(s.Values), num(s.Mean), num(s.Min), num(s.Max), 100*s.CV))
		}
		t.table("spec\tvariant\tfigure (req/s)\truns\tmean\tmin\tmax\tCV", rows)
	}
	if len(r.Thresholds) > 0 {
		t.printf("\nThresholds (--fail-on)\n")
		for _, th := range r.Thresholds {
			verdict := "ok  "
			if th.Failed {
				verdict = "FAIL"
			}
			t.printf("  %s %s: %s\n", verdict, th.Spec, th.Detail)
		}
	}
	return t.err
}

// headlineTitle heads the headline: with one run, the SLO its capacities are at.
func headlineTitle(r *Report) string {
	if len(r.Runs) == 1 && r.Runs[0].SLO != nil {
		return fmt.Sprintf("Headline (SLO: %s)", r.Runs[0].SLO.Text)
	}
	return "Headline"
}

func (t *textWriter) run(r *Run, what string) {
	t.printf("%s %s  %s (%s)  %s", what, r.ID, r.Name, r.SpecFile, r.Status)
	if r.Reason != "" {
		t.printf(": %s", r.Reason)
	}
	t.printf("\nstarted %s", r.Started.Format("2006-01-02 15:04:05 UTC"))
	if r.Ended != nil {
		t.printf(", took %s", r.Ended.Sub(r.Started).Round(time.Second))
	}
	t.printf("\n")
	if r.SLO != nil {
		t.printf("SLO: %s\n", r.SLO.Text)
	}
	for _, n := range r.Notes {
		t.printf("note: %s\n", n)
	}

	t.printf("\n1. Capacity at the SLO\n")
	if r.SLO == nil {
		t.printf("  not judged: the spec has no slo block\n")
	} else {
		for _, v := range r.Variants {
			t.printf("  %s: %s\n", v.Name, v.Capacity.Text)
			for _, l := range v.Capacity.LimitedBy {
				t.printf("    limited by %s\n", l)
			}
		}
	}

	t.printf("\n2. Steps (latency in ms from the intended send time, warm-up excluded; percentiles are observed values)\n")
	var rows, classes []string
	for _, v := range r.Variants {
		for _, s := range v.Steps {
			slo := ""
			if s.MeetsSLO != nil {
				slo = "meets"
				if !*s.MeetsSLO {
					slo = "breaks: " + strings.Join(s.SLOBreaches, ", ")
				}
			}
			if s.Disturbed() {
				slo = strings.TrimSpace(slo + " (disturbed)")
				classes = append(classes, fmt.Sprintf("  %s step %d disturbed: %s", v.Name, s.Step, disturbances(s)))
			}
			offered := "–"
			if s.OfferedRate != nil {
				offered = num(*s.OfferedRate)
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s%%\t%s\t%d\t%d\t%s",
				v.Name, s.Step, load(s.Load), s.Count, offered, num(s.Throughput), ms(s.MeanUS), ms(float64(s.P50US)), ms(float64(s.P90US)),
				ms(float64(s.P99US)), ms(float64(s.P999US)), ms(float64(s.MinUS)), ms(float64(s.MaxUS)), s.Errors, pct(s.ErrorRate),
				mb(s.BandwidthBytesPerSec), s.Missed, s.Omitted, slo))
			if len(s.ErrorsByClass) > 0 {
				keys := make([]string, 0, len(s.ErrorsByClass))
				for k := range s.ErrorsByClass {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				var parts []string
				for _, k := range keys {
					if s.ErrorsByClass[k] == 0 {
						continue
					}
					parts = append(parts, fmt.Sprintf("%s %d", k, s.ErrorsByClass[k]))
				}
				classes = append(classes, fmt.Sprintf("  errors of %s step %d: %s", v.Name, s.Step, strings.Join(parts, ", ")))
			}
		}
	}
	t.table("variant\tstep\tload\tcount\toffered/s\treq/s\tmean\tp50\tp90\tp99\tp99.9\tmin\tmax\terrors\terror%\tMiB/s\tmissed\tomitted\tSLO", rows)
	for _, c := range classes {
		t.printf("%s\n", c)
	}

	t.printf("\n3. Scaling (CPU in cores; req/s per core = requests per CPU-second; per CPU%% as cf app shows CPU)\n")
	rows = rows[:0]
	for _, v := range r.Variants {
		for _, s := range v.Steps {
			appInst, avail, cpu, perCore, perPct, util, gen := "–", "–", "–", "–", "–", "–", "–"
			if a := s.App; a != nil {
				appInst = fmt.Sprint(a.Instances)
				avail = available(a.CPUAvailableCores, a.Cells)
				cpu = fmtOpt(a.CPUTotalCores, "%.2f")
				if a.CPUSource == "stats" {
					cpu += " (sampled)"
				}
				if a.CPUTotalCores != nil && a.CPUCovered < coveredAll {
					cpu += fmt.Sprintf(" (over %.0f%% of the step)", 100*a.CPUCovered)
				}
				perCore, perPct = fmtOpt(a.ThroughputPerCore, "%.0f"), fmtOpt(a.ThroughputPerCPUPercent, "%.1f")
				if a.Utilisation != nil {
					util = fmt.Sprintf("%.0f%%", 100**a.Utilisation)
				}
			}
			if g := s.Generator; g != nil {
				gen = fmtOpt(g.CPUMeanCores, "%.2f")
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", v.Name, s.Step, load(s.Load), num(s.Throughput),
				ms(float64(s.P50US)), ms(float64(s.P99US)), appInst, avail, cpu, perCore, perPct, util, gen))
		}
	}
	t.table("variant\tstep\tload\treq/s\tp50 ms\tp99 ms\tapp instances\tCPU available\tapp CPU\treq/s per core\treq/s per CPU%\tutilisation\tgenerator CPU/instance", rows)
	rows = rows[:0]
	for _, v := range r.Variants {
		for _, u := range v.Utilisation {
			cells, avail, util := "unknown", "unknown", "–"
			if u.Cells != nil {
				cells = fmt.Sprint(*u.Cells)
			}
			if u.CoresAvailable != nil {
				avail = fmt.Sprintf("%.2f (%.0f%%)", *u.CoresAvailable, 100**u.CoresAvailable)
			}
			if u.Utilisation != nil {
				util = fmt.Sprintf("%.0f%%", 100**u.Utilisation)
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s\t%.2f (%.0f%%)\t%s\t%s", v.Name, u.AppInstances, cells, avail, u.CPUMaxTotalCores, 100*u.CPUMaxTotalCores, util, joinInts(u.Steps)))
		}
	}
	if len(rows) > 0 {
		t.printf("  CPU utilisation per app instance count (cells: the distinct cells the instances ran on, each counted once in the cores available):\n")
		t.table("variant\tapp instances\tcells\tcores available\tused at most\tutilisation\tsteps", rows)
	}
	for _, v := range r.Variants {
		if m := v.Memory; m != nil {
			state := "settled"
			if !m.Settled {
				state = "not settled: it still moved by more than 10% in the last quarter of the run"
			}
			quota := ""
			if m.QuotaBytes != nil {
				quota = fmt.Sprintf(", of a %s MiB quota", mb(float64(*m.QuotaBytes)))
			}
			t.printf("  memory of %s (%s): %s MiB per instance, the median of the run's last quarter%s (%s; %d readings)\n", v.Name, v.App, mb(m.SettledBytes), quota, state, len(m.T))
		}
	}

	t.printf("\n4. Latency decomposition (mean ms per request, over the requests with a router line and an app timing)\n")
	rows = rows[:0]
	for _, v := range r.Variants {
		for _, s := range v.Steps {
			d := s.Decomposition
			if d == nil {
				continue
			}
			cells := []string{v.Name, fmt.Sprint(s.Step), fmt.Sprint(d.Requests), pct(d.Share) + "%", ms(d.ClientMeanUS)}
			for _, l := range d.Layers {
				cells = append(cells, ms(l.MeanUS))
			}
			rows = append(rows, strings.Join(append(cells, d.Dominant), "\t"))
		}
	}
	if len(rows) == 0 {
		t.printf("  none: needs router logs and app timings of the same requests\n")
	} else {
		t.table("variant\tstep\trequests\tshare\tclient\t"+strings.Join(LayerNames, "\t")+"\tdominant", rows)
	}

	t.printf("\n5. Findings\n")
	if len(r.Findings) == 0 {
		t.printf("  none: no check tripped\n")
	}
	for _, f := range r.Findings {
		where := f.Variant
		if f.Step > 0 {
			where += fmt.Sprintf(" step %d", f.Step)
		}
		t.printf("  %s  %s  %s: %s\n", f.Level, where, f.Check, f.Message)
		if len(f.Figures) > 0 {
			keys := make([]string, 0, len(f.Figures))
			for k := range f.Figures {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = fmt.Sprintf("%s %v", k, f.Figures[k])
			}
			t.printf("      judged: %s\n", strings.Join(parts, ", "))
		}
		for _, e := range f.Evidence {
			t.printf("      %s\n", e)
		}
	}

	t.faults(r)

	t.printf("\n6. Variants side by side\n")
	if len(r.Repeats) > 0 {
		t.printf("  spread over the repeats (the run's variants interleaved, each repeat a variant NAME#R):\n")
		rows = rows[:0]
		for _, rs := range r.Repeats {
			tp, p99 := rs.Throughput, rs.P99US
			rows = append(rows, fmt.Sprintf("%s\t%d\t%d\t%s / %s / %s\t%s ± %s\t%s / %s / %s\t%s ± %s", rs.Config, rs.Step, tp.N,
				num(tp.Min), num(tp.Median), num(tp.Max), num(tp.Mean), num(tp.SD), ms(p99.Min), ms(p99.Median), ms(p99.Max), ms(p99.Mean), ms(p99.SD)))
		}
		t.table("config\tstep\trepeats\treq/s min / median / max\tmean ± sd\tp99 ms min / median / max\tmean ± sd", rows)
	}
	if c := r.Comparison; c == nil {
		t.printf("  one variant: nothing to compare\n")
	} else {
		what := "variant"
		if c.Repeats > 0 {
			what = "config"
			t.printf("  configurations, each the mean of its repeats; \"inside\" marks a difference within the repeats' spread (their min-max ranges overlap):\n")
		}
		rows = rows[:0]
		for _, v := range c.Variants {
			capa := optNum(v.Capacity)
			if v.CapacityBound == "at_least" {
				capa = "≥ " + capa
			}
			if v.CapacityBasis != "" {
				capa += " (" + v.CapacityBasis + ")"
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", v.Variant, capa, boundedRatio(v.CapacityRatio, v.CapacityRatioBound), num(v.MaxThroughput), ratioText(v.ThroughputRatio)))
		}
		t.table(fmt.Sprintf("%s\tcapacity req/s\t× %s\tmax req/s\t× %s", what, c.Reference, c.Reference), rows)
		rows = rows[:0]
		for _, v := range c.Variants[1:] {
			for _, s := range v.Steps {
				rows = append(rows, fmt.Sprintf("%s\t%d\t%s%s\t%s\t%s%s\t%s", v.Variant, s.Step, ratioText(s.ThroughputRatio), inSpread(s.ThroughputInSpread),
					ratioText(s.MeanRatio), ratioText(s.P99Ratio), inSpread(s.P99InSpread), ratioText(s.CPUPerRequestRatio)))
			}
		}
		if len(rows) > 0 {
			t.printf("  per step, against %s:\n", c.Reference)
			t.table(what+"\tstep\treq/s\tmean\tp99\tapp CPU per request", rows)
		}
	}

	t.printf("\n7. Router-log coverage and app-timing flushes\n")
	if len(r.Coverage) == 0 {
		t.printf("  router logs: not pulled\n")
	} else {
		t.printf("  router logs from %s\n", sourceWords(r.RouterLogSource))
		rows = rows[:0]
		for _, c := range r.Coverage {
			rows = append(rows, fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%.1f%%\t%s", c.Variant, c.Step, c.Sent, c.Found, c.Missing, 100*c.Share, c.Verdict))
		}
		t.table("variant\tstep\tsent\tfound\tmissing\tcoverage\tgaps", rows)
	}
	if len(r.Flushes) == 0 {
		t.printf("  app timings: none flushed\n")
	} else {
		rows = rows[:0]
		for _, f := range r.Flushes {
			rows = append(rows, fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s", f.Variant, f.Step, f.Instances, f.RowsReceived, f.Stored, f.Foreign, f.Dropped, f.Verdict))
		}
		t.table("variant\tstep\tinstances\treceived\tstored\tforeign\tdropped\tflushes", rows)
	}
}

// sourceWords says where router lines came from, for people.
func sourceWords(src string) string {
	if src == "drain" {
		return "the run's syslog drain (every line as it happened, no pull)"
	}
	return src + " (pulled after the run)"
}

// coveredAll is the CPUCovered below which a CPU figure says how much of its step it
// rests on: counters interpolated to both edges of the window cover all of it.
const coveredAll = 0.995

// available is the CPU available to an app's instances as the scaling table shows it:
// the cores and the cells they shared, each "unknown" where it is.
func available(cores *float64, cells *int) string {
	c := "unknown"
	if cores != nil {
		c = fmt.Sprintf("%.2f", *cores)
	}
	switch {
	case cells == nil:
		return c + " (cells unknown)"
	case *cells == 1:
		return c + " on 1 cell"
	}
	return fmt.Sprintf("%s on %d cells", c, *cells)
}
