// Package exportcheck recomputes a run's step figures from the raw rows of its export
// directory (samples.csv, container_metrics.csv, steps.csv) and compares them with the
// figures the run stored (step_metrics.csv, step_app_metrics.csv). It is a second,
// deliberately plain reading of the rules that resultsdb states, for tests: a step's
// count, rate and percentiles from its samples, and each app's CPU, memory, cells and
// CPU available from its container metrics.
package exportcheck

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Checked counts what Compare compared, so that a caller can tell a check that held
// from one that found nothing to check.
type Checked struct {
	Steps, CPU, Memory, Cells int
}

// Compare recomputes every step's count, rate, p50/p90/p99/p99.9, and every app's CPU
// (where it rests on counters), memory, cells and CPU available, from the export in dir,
// and returns a line per figure that differs from the stored one by more than tol (0.01:
// 1%) of the larger, and what it compared. An error means the directory could not be
// read.
func Compare(dir string, tol float64) (diffs []string, n Checked, err error) {
	steps, err := read(dir, "steps.csv")
	if err != nil {
		return nil, n, err
	}
	stored, err := read(dir, "step_metrics.csv")
	if err != nil {
		return nil, n, err
	}
	apps, err := read(dir, "step_app_metrics.csv")
	if err != nil {
		return nil, n, err
	}
	samples, err := read(dir, "samples.csv")
	if err != nil {
		return nil, n, err
	}
	metrics, err := read(dir, "container_metrics.csv")
	if err != nil {
		return nil, n, err
	}
	type key struct{ variant, step string }
	latencies := map[key][]float64{}
	for _, s := range samples {
		if s["warmup"] == "false" {
			k := key{s["variant"], s["step"]}
			latencies[k] = append(latencies[k], num(s["latency_us"]))
		}
	}
	byApp := map[string]map[string][]reading{}
	for _, m := range metrics {
		inst := m["process_type"] + "/" + m["instance_index"]
		if byApp[m["app_name"]] == nil {
			byApp[m["app_name"]] = map[string][]reading{}
		}
		byApp[m["app_name"]][inst] = append(byApp[m["app_name"]][inst], reading{at: when(m["at"]), row: m})
	}
	for _, insts := range byApp {
		for _, rs := range insts {
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].at.Before(rs[j].at) })
		}
	}
	near := func(what string, got, want float64) {
		if math.IsNaN(got) || math.IsNaN(want) || math.Abs(got-want) > tol*math.Max(math.Abs(got), math.Abs(want))+1e-9 {
			diffs = append(diffs, fmt.Sprintf("%s: recomputed %.6g, stored %.6g", what, got, want))
		}
	}
	windows := map[key][2]time.Time{}
	for _, st := range steps {
		if st["ended_at"] == "" {
			continue
		}
		to := when(st["ends_at"])
		if e := when(st["ended_at"]); e.Before(to) {
			to = e
		}
		windows[key{st["variant"], st["step"]}] = [2]time.Time{when(st["warmup_until"]), to}
	}
	for _, sm := range stored {
		k := key{sm["variant"], sm["step"]}
		w, ok := windows[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("step %s of %s: stored metrics but no ended step", k.step, k.variant))
			continue
		}
		n.Steps++
		name := fmt.Sprintf("%s step %s", k.variant, k.step)
		lat := latencies[k]
		slices.Sort(lat)
		near(name+" count", float64(len(lat)), num(sm["count"]))
		near(name+" req/s", float64(len(lat))/w[1].Sub(w[0]).Seconds(), num(sm["throughput"]))
		for _, p := range []struct {
			col string
			q   float64
		}{{"p50_us", 0.5}, {"p90_us", 0.9}, {"p99_us", 0.99}, {"p999_us", 0.999}} {
			if len(lat) > 0 {
				near(name+" "+p.col, discrete(lat, p.q), num(sm[p.col]))
			}
		}
	}
	for _, a := range apps {
		k := key{a["variant"], a["step"]}
		w, ok := windows[k]
		if !ok {
			continue
		}
		name := fmt.Sprintf("%s step %s app %s", k.variant, k.step, a["app_name"])
		insts := byApp[a["app_name"]]
		if a["cpu_source"] == "counters" && a["cpu_total_cores"] != "" {
			var total float64
			for _, rs := range insts {
				if c, ok := rate(series(rs, "cpu_time_ns"), w[0], w[1]); ok {
					total += c / 1e9
				}
			}
			near(name+" CPU cores", total, num(a["cpu_total_cores"]))
			n.CPU++
		}
		if a["mem_mean_bytes"] != "" {
			var sum float64
			var count int
			for _, rs := range insts {
				if m, ok := timeMean(series(rs, "mem_bytes"), w[0], w[1]); ok {
					sum += m
					count++
				}
			}
			if count > 0 {
				near(name+" memory", sum/float64(count), num(a["mem_mean_bytes"]))
				n.Memory++
			}
		}
		if a["cells"] != "" {
			hosts := map[string]bool{}
			for _, rs := range insts {
				for _, r := range rs {
					if r.row["source"] == "stats" && r.row["state"] == "RUNNING" && r.row["host"] != "" && !r.at.Before(w[0]) && !r.at.After(w[1]) {
						hosts[r.row["host"]] = true
					}
				}
			}
			near(name+" cells", float64(len(hosts)), num(a["cells"]))
			n.Cells++
		}
	}
	return diffs, n, nil
}

// reading is one container_metrics.csv row of an instance.
type reading struct {
	at  time.Time
	row map[string]string
}

// point is one value of a counter or gauge.
type point struct {
	at time.Time
	v  float64
}

// series is the readings of rs that have col, in time order.
func series(rs []reading, col string) []point {
	var out []point
	for _, r := range rs {
		if r.row[col] != "" {
			out = append(out, point{r.at, num(r.row[col])})
		}
	}
	return out
}

// valueAt is the straight line between the readings on either side of t.
func valueAt(ps []point, t time.Time) float64 {
	for i := 1; i < len(ps); i++ {
		if !ps[i].at.Before(t) {
			a, b := ps[i-1], ps[i]
			if !t.After(a.at) {
				return a.v
			}
			return a.v + (b.v-a.v)*t.Sub(a.at).Seconds()/b.at.Sub(a.at).Seconds()
		}
	}
	return ps[len(ps)-1].v
}

// clip is [from, to] within the readings' span.
func clip(ps []point, from, to time.Time) (time.Time, time.Time, bool) {
	if len(ps) == 0 {
		return from, to, false
	}
	if ps[0].at.After(from) {
		from = ps[0].at
	}
	if ps[len(ps)-1].at.Before(to) {
		to = ps[len(ps)-1].at
	}
	return from, to, to.After(from)
}

// rate is a counter's increase per second over [from, to] (clipped to its readings).
func rate(ps []point, from, to time.Time) (float64, bool) {
	lo, hi, ok := clip(ps, from, to)
	if !ok {
		return 0, false
	}
	return (valueAt(ps, hi) - valueAt(ps, lo)) / hi.Sub(lo).Seconds(), true
}

// timeMean is a gauge's mean over [from, to] (clipped to its readings), integrated over
// time in small slices of the line through its readings; without a span, the mean of
// the readings inside the window.
func timeMean(ps []point, from, to time.Time) (float64, bool) {
	lo, hi, ok := clip(ps, from, to)
	if !ok {
		var sum float64
		var n int
		for _, p := range ps {
			if !p.at.Before(from) && !p.at.After(to) {
				sum += p.v
				n++
			}
		}
		return sum / float64(n), n > 0
	}
	const slices = 4000
	d := hi.Sub(lo) / slices
	var sum float64
	for i := range slices {
		sum += valueAt(ps, lo.Add(d*time.Duration(i)+d/2))
	}
	return sum / slices, true
}

// discrete is Postgres's percentile_disc over sorted values: the first whose cumulative
// share reaches q.
func discrete(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// read reads a CSV file of the export into rows keyed by column name.
func read(dir, name string) ([]map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: no header", name)
	}
	out := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		m := make(map[string]string, len(r))
		for i, h := range recs[0] {
			m[h] = strings.TrimPrefix(r[i], "'") // the export's guard against spreadsheet formulas
		}
		out = append(out, m)
	}
	return out, nil
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// when parses the export's timestamps (2026-11-22 13:05:01.123456+00); a value that is
// none is the zero time, which no window contains.
func when(s string) time.Time {
	t, _ := time.Parse("2006-01-02 15:04:05.999999-07", strings.TrimSpace(s))
	return t
}
