// Package exportdir reads a run back from its export directory (the CSV files and
// manifest.json package export writes, results/RUN_ID after a run), so a report can be
// made, compared and gated without the results database: Reader gives the rows a report
// is built from exactly as resultsdb.Store.ReadRun gives them from the database. It
// reads the precomputed tables the export carries (step_metrics, step_series,
// step_router_metrics, …) and, where the database would compute a figure from the raw
// rows (a run recorded before those were stored, series in intervals wider than a
// second), computes it from the CSV files with the same definition: percentile_disc,
// numeric averages rounded as PostgreSQL rounds them, the same grouping and order.
package exportdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/resultsdb/export"
)

// Reader reads runs from export directories; the zero value is ready. It is safe for
// concurrent use: every call opens its own files.
type Reader struct{}

// IsExportDir reports whether path is a directory holding an export's manifest.json.
func IsExportDir(path string) bool {
	st, err := os.Stat(filepath.Join(path, "manifest.json"))
	return err == nil && st.Mode().IsRegular()
}

// Manifest reads dir's manifest.json.
func Manifest(dir string) (*export.Manifest, error) {
	body, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no manifest.json (not an export directory): %w", dir, resultsdb.ErrRunNotFound)
	}
	if err != nil {
		return nil, err
	}
	var m export.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	if !resultsdb.ValidRunID(m.RunID) {
		return nil, fmt.Errorf("%s: run_id %q is not a run id", filepath.Join(dir, "manifest.json"), m.RunID)
	}
	return &m, nil
}

// ReadRun reads the run exported into the directory dir. width is called once, with
// resultsdb.StepsSpan of the run's steps. A missing or damaged file (a row count or
// SHA-256 other than manifest.json's, a value that is not of its column's type) is an
// error naming the file, and the line and column where it can.
func (Reader) ReadRun(ctx context.Context, dir string, width func(spanS float64) float64) (*resultsdb.ReportRows, error) {
	m, err := Manifest(dir)
	if err != nil {
		return nil, err
	}
	if err := checkSizes(dir, m); err != nil {
		return nil, err
	}
	d := &reading{dir: dir, m: m, ctx: ctx}
	r := &resultsdb.ReportRows{}
	if err := d.run(r); err != nil {
		return nil, err
	}
	for _, read := range []func(*resultsdb.ReportRows) error{d.steps, d.variants, d.apps, d.pulls} {
		if err := read(r); err != nil {
			return nil, err
		}
	}
	if r.Pulls > 0 || (r.HasRouter && r.HasApp) {
		if r.RouterSteps, err = d.routerSteps(r); err != nil {
			return nil, err
		}
	}
	r.IntervalS = width(resultsdb.StepsSpan(r.Steps))
	for _, read := range []func(*resultsdb.ReportRows) error{d.series, d.memory, d.findings, d.flushes, d.faults} {
		if err := read(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkSizes checks that every file the manifest lists is there with its size: cheap
// for files the report does not read (samples.csv may be gigabytes). Files it reads are
// checked against their row count and SHA-256 as they are read.
func checkSizes(dir string, m *export.Manifest) error {
	for _, f := range m.Files {
		path := filepath.Join(dir, f.Name)
		if f.Name != filepath.Base(f.Name) || !strings.HasSuffix(f.Name, ".csv") {
			return fmt.Errorf("%s: file %q is not a CSV file of this directory", filepath.Join(dir, "manifest.json"), f.Name)
		}
		st, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: listed in manifest.json but missing", path)
		}
		if err != nil {
			return err
		}
		if st.Size() != f.Bytes {
			return fmt.Errorf("%s: %d bytes, manifest.json says %d (a cut or changed file)", path, st.Size(), f.Bytes)
		}
	}
	return nil
}

// reading is one ReadRun.
type reading struct {
	ctx             context.Context
	dir             string
	m               *export.Manifest
	routerLogSource string // runs.csv's
}

// each calls row for every record of table, after checking it has cols.
func (d *reading) each(name string, cols []string, row func(t *table)) error {
	t, err := open(d.dir, d.m, name)
	if err != nil {
		return err
	}
	defer t.close()
	if err := t.need(cols...); err != nil {
		return err
	}
	for {
		ok, err := t.scan()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if t.rows%65536 == 0 && d.ctx.Err() != nil {
			return d.ctx.Err()
		}
		row(t)
		if t.err != nil {
			return t.err
		}
	}
}

// has tells whether the directory has table's file.
func (d *reading) has(table string) bool {
	_, err := os.Stat(filepath.Join(d.dir, table+".csv"))
	return err == nil
}

// rows is the manifest's row count of table, -1 when it lists no such file.
func (d *reading) rows(table string) int64 {
	for _, f := range d.m.Files {
		if f.Table == table {
			return f.Rows
		}
	}
	return -1
}

func (d *reading) run(r *resultsdb.ReportRows) error {
	n := 0
	err := d.each("runs", []string{"id", "name", "spec_file", "status", "reason", "epoch", "started_at", "ended_at", "spec"}, func(t *table) {
		n++
		r.Run = resultsdb.Run{ID: t.str("id"), Name: t.str("name"), SpecFile: t.str("spec_file"), Status: resultsdb.RunStatus(t.str("status")),
			Reason: t.str("reason"), Epoch: t.time("epoch"), Started: t.time("started_at"), Ended: t.optTime("ended_at")}
		r.Spec = t.str("spec")
		if _, ok := t.cols["router_log_source"]; ok {
			d.routerLogSource = t.str("router_log_source")
		}
	})
	if err != nil {
		return err
	}
	if n != 1 || r.Run.ID != d.m.RunID {
		return fmt.Errorf("%s: want the one row of run %s (manifest.json), found %d rows (first: %q)", filepath.Join(d.dir, "runs.csv"), d.m.RunID, n, r.Run.ID)
	}
	return nil
}

// micros is the offset of at from the epoch in seconds, as extract(epoch FROM
// interval)::float8 gives it: exact microseconds, rounded once to a float.
func offset(at, epoch int64) float64 { return float64(at-epoch) / 1e6 }

func (d *reading) steps(r *resultsdb.ReportRows) error {
	type key struct {
		variant string
		idx     int
	}
	metrics := map[key]resultsdb.ReportStep{}
	err := d.each("step_metrics", []string{"variant", "step", "seconds", "count", "errors", "errors_by_class", "bytes", "throughput", "mean_us",
		"p50_us", "p90_us", "p99_us", "p999_us", "min_us", "max_us", "instances", "instances_seen", "users", "offered_rate", "missed",
		"send_lag_mean_us", "send_lag_p99_us", "stalled_ms", "omitted"}, func(t *table) {
		s := resultsdb.ReportStep{HasMetrics: true, Seconds: t.float("seconds"), Count: t.int("count"), Errors: t.int("errors"),
			ErrorsByClass: []byte(t.str("errors_by_class")), Bytes: t.int("bytes"), Throughput: t.float("throughput"), MeanUS: t.float("mean_us"),
			P50US: t.int("p50_us"), P90US: t.int("p90_us"), P99US: t.int("p99_us"), P999US: t.int("p999_us"), MinUS: t.int("min_us"),
			MaxUS: t.int("max_us"), Instances: int(t.int("instances")), InstancesSeen: int(t.int("instances_seen")), Users: int(t.int("users")),
			OfferedRate: t.optFloat("offered_rate"), Missed: t.int("missed"), SendLagMeanUS: t.float("send_lag_mean_us"),
			SendLagP99US: t.int("send_lag_p99_us"), StalledMS: t.int("stalled_ms"), Omitted: t.int("omitted")}
		metrics[key{t.str("variant"), int(t.int("step")) - 1}] = s
	})
	if err != nil {
		return err
	}
	epoch := r.Run.Epoch.UnixMicro()
	err = d.each("steps", []string{"variant", "step", "instances", "users", "started_at", "warmup_until", "ended_at", "instances_seen"}, func(t *table) {
		k := key{t.str("variant"), int(t.int("step")) - 1}
		s, ok := metrics[k]
		if !ok {
			s = resultsdb.ReportStep{ErrorsByClass: []byte("{}"), Instances: int(t.int("instances")), Users: int(t.int("users"))}
			s.InstancesSeen = s.Instances
			if seen := t.optInt("instances_seen"); seen != nil {
				s.InstancesSeen = int(*seen)
			}
		}
		s.Variant, s.Idx = k.variant, k.idx
		s.StartS = offset(t.time("started_at").UnixMicro(), epoch)
		s.WarmupEndS = offset(t.time("warmup_until").UnixMicro(), epoch)
		if e := t.optTime("ended_at"); e != nil {
			x := offset(e.UnixMicro(), epoch)
			s.EndS = &x
		}
		r.Steps = append(r.Steps, s)
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(r.Steps, func(a, b resultsdb.ReportStep) int {
		if c := strings.Compare(a.Variant, b.Variant); c != 0 {
			return c
		}
		return a.Idx - b.Idx
	})
	return nil
}

// variants orders the variants as the database does: by their first step's start,
// those without steps last, then by name (the results database collates in byte order).
func (d *reading) variants(r *resultsdb.ReportRows) error {
	first := map[string]float64{}
	for _, s := range r.Steps {
		if f, ok := first[s.Variant]; !ok || s.StartS < f {
			first[s.Variant] = s.StartS
		}
	}
	listed := map[string]resultsdb.ReportVariant{}
	err := d.each("variants", []string{"variant", "app_name", "generator_app", "workload", "config", "repeat"}, func(t *table) {
		v := resultsdb.ReportVariant{Name: t.str("variant"), App: t.str("app_name"), GeneratorApp: t.str("generator_app"),
			Config: t.str("config"), Repeat: int(t.int("repeat"))}
		var w map[string]any
		if err := json.Unmarshal([]byte(t.str("workload")), &w); err != nil {
			t.fail("workload", t.str("workload"), "a JSON object")
		}
		switch m := w["model"].(type) {
		case string:
			v.Model = m
		case nil:
		default:
			v.Model = fmt.Sprint(m)
		}
		if v.Config == "" {
			v.Config = v.Name
		}
		if v.Repeat > 1 {
			r.Repeats = true
		}
		listed[v.Name] = v
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(listed)+len(first))
	for n := range first {
		names = append(names, n)
	}
	for n := range listed {
		if _, ok := first[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		fa, oka := first[a]
		fb, okb := first[b]
		switch {
		case oka && okb && fa != fb:
			if fa < fb {
				return -1
			}
			return 1
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, n := range names {
		v, ok := listed[n]
		if !ok {
			v = resultsdb.ReportVariant{Name: n, Config: n, Repeat: 1}
		}
		r.Variants = append(r.Variants, v)
	}
	return nil
}

func (d *reading) apps(r *resultsdb.ReportRows) error {
	err := d.each("step_app_metrics", []string{"variant", "step", "app_name", "role", "instances", "cpu_source", "cpu_points", "cpu_covered",
		"cpu_mean_cores", "cpu_max_cores", "cpu_total_cores", "mem_mean_bytes", "mem_max_bytes", "mem_quota_bytes"}, func(t *table) {
		a := resultsdb.ReportApp{Variant: t.str("variant"), Idx: int(t.int("step")) - 1, AppStepMetrics: resultsdb.AppStepMetrics{
			App: t.str("app_name"), Role: t.str("role"), Instances: int(t.int("instances")), CPUSource: t.str("cpu_source"),
			CPUPoints: int(t.int("cpu_points")), CPUCovered: t.float("cpu_covered"), CPUMeanCores: t.optFloat("cpu_mean_cores"),
			CPUMaxCores: t.optFloat("cpu_max_cores"), CPUTotalCores: t.optFloat("cpu_total_cores"), MemMeanBytes: t.optFloat("mem_mean_bytes"),
			MemMaxBytes: t.optInt("mem_max_bytes"), MemQuotaBytes: t.optInt("mem_quota_bytes")}}
		if _, ok := t.cols["cpu_available_cores"]; ok {
			a.CPUAvailableCores = t.optFloat("cpu_available_cores")
			if n := t.optInt("cells"); n != nil {
				c := int(*n)
				a.Cells = &c
			}
		} else if c := t.optFloat("cores_available"); c != nil {
			// An export of schema v14 or older: cores_available came only from the local
			// foundation, whose one cell per segment ran all the app's instances (the
			// results DB's migration 0015 reads it alike).
			one := 1
			a.Cells, a.CPUAvailableCores = &one, c
		}
		if _, ok := t.cols["cpu_wait_cores"]; ok { // exports of schema v8 and later
			a.CPUWaitCores, a.CPUWaitShare = t.optFloat("cpu_wait_cores"), t.optFloat("cpu_wait_share")
		}
		r.Apps = append(r.Apps, a)
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(r.Apps, func(a, b resultsdb.ReportApp) int {
		if c := strings.Compare(a.Variant, b.Variant); c != 0 {
			return c
		}
		if a.Idx != b.Idx {
			return a.Idx - b.Idx
		}
		if c := strings.Compare(a.Role, b.Role); c != 0 {
			return c
		}
		return strings.Compare(a.App, b.App)
	})
	return nil
}

func (d *reading) pulls(r *resultsdb.ReportRows) error {
	var sources []string
	err := d.each("router_log_pulls", []string{"source", "budget_exhausted"}, func(t *table) {
		sources = append(sources, t.str("source"))
		r.BudgetExhausted = r.BudgetExhausted || t.bool("budget_exhausted")
	})
	if errors.Is(err, errNoFile) {
		// An export without the file (export.tables left it out): the run's row names
		// the sources; whether a pull spent its budget is not known then.
		sources = strings.Fields(d.routerLogSource)
	} else if err != nil {
		return err
	}
	slices.Sort(sources)
	r.Pulls, r.PullSources = len(sources), strings.Join(sources, " ")
	r.HasRouter, r.HasApp = d.rows("router_requests") > 0, d.rows("app_timings") > 0
	return nil
}

func (d *reading) findings(r *resultsdb.ReportRows) error {
	return d.each("run_events", []string{"id", "at", "variant", "step", "kind", "level", "check_name", "message", "evidence"}, func(t *table) {
		level := t.str("level")
		if t.str("kind") != "check" || (level != "warn" && level != "fail") {
			return
		}
		f := resultsdb.ReportFinding{At: t.time("at"), Variant: t.str("variant"), Idx: -1, Level: level, Message: t.str("message"),
			Check: t.str("check_name")}
		if s := t.optInt("step"); s != nil {
			f.Idx = int(*s) - 1
		}
		if e := t.optStr("evidence"); e != nil {
			f.Evidence = []byte(*e)
		}
		r.Findings = append(r.Findings, f) // the file is in id order
	})
}

func (d *reading) flushes(r *resultsdb.ReportRows) error {
	type key struct {
		variant string
		idx     int
	}
	type inst struct {
		app string
		idx int64
	}
	sums := map[key]*resultsdb.FlushSum{}
	seen := map[key]map[inst]bool{}
	err := d.each("app_timing_flushes", []string{"variant", "step", "app_name", "instance_index", "rows_received", "stored", "foreign_rows",
		"dropped", "error"}, func(t *table) {
		k := key{t.str("variant"), int(t.int("step")) - 1}
		s := sums[k]
		if s == nil {
			s = &resultsdb.FlushSum{Variant: k.variant, Idx: k.idx}
			sums[k], seen[k] = s, map[inst]bool{}
		}
		seen[k][inst{t.str("app_name"), t.int("instance_index")}] = true
		if t.str("error") != "" {
			s.Failed++
		}
		s.RowsReceived += t.int("rows_received")
		s.Stored += t.int("stored")
		s.Foreign += t.int("foreign_rows")
		s.Dropped += t.int("dropped")
	})
	if err != nil {
		return err
	}
	for k, s := range sums {
		s.Instances = len(seen[k])
		r.Flushes = append(r.Flushes, *s)
	}
	slices.SortFunc(r.Flushes, func(a, b resultsdb.FlushSum) int {
		if c := strings.Compare(a.Variant, b.Variant); c != 0 {
			return c
		}
		return a.Idx - b.Idx
	})
	return nil
}
