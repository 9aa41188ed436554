package exportdir

import (
	"fmt"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// faults reads the run's injected faults (run_events of kind fault) and measures the
// requests of their steps around them from samples.csv, as resultsdb.Store.ReadRun
// does with its SQL (resultsdb.FaultRecoveryOf); a run without faults reads no
// sample.
func (d *reading) faults(r *resultsdb.ReportRows) error {
	err := d.each("run_events", []string{"at", "variant", "step", "kind", "level", "message", "evidence"}, func(t *table) {
		if t.str("kind") != resultsdb.FaultEventKind {
			return
		}
		idx := -1
		if s := t.optInt("step"); s != nil {
			idx = int(*s) - 1
		}
		var evidence []byte
		if e := t.optStr("evidence"); e != nil {
			evidence = []byte(*e)
		}
		f, err := resultsdb.FaultOfEvent(t.time("at"), t.str("variant"), idx, t.str("level"), t.str("message"), evidence)
		if err != nil && t.err == nil {
			t.err = fmt.Errorf("%s line %d: %w", t.path, t.line, err)
		}
		r.Faults = append(r.Faults, f) // the file is in id order
	})
	if err != nil || len(r.Faults) == 0 {
		return err
	}
	epoch := r.Run.Epoch
	ends := map[stepKey]int64{}
	measured := map[stepKey][]resultsdb.RecoverySample{}
	for _, f := range r.Faults {
		if f.Idx >= 0 && f.Error == "" {
			measured[stepKey{f.Variant, f.Idx}] = nil
		}
	}
	err = d.each("steps", []string{"variant", "step", "ends_at", "ended_at"}, func(t *table) {
		k := stepKey{t.str("variant"), int(t.int("step")) - 1}
		end := t.optTime("ended_at")
		if end == nil {
			end = t.optTime("ends_at")
		}
		if end != nil {
			ends[k] = end.Sub(epoch).Microseconds()
		}
	})
	if err != nil {
		return err
	}
	err = d.each("samples", []string{"variant", "step", "intended_us", "latency_us", "status", "error", "warmup"}, func(t *table) {
		k := stepKey{t.str("variant"), int(t.int("step")) - 1}
		got, ok := measured[k]
		if !ok {
			return
		}
		s := resultsdb.RecoverySample{IntendedUS: t.int("intended_us"), LatencyUS: t.int("latency_us"), Class: t.str("error"), Warmup: t.bool("warmup")}
		status := t.int("status")
		s.Failed = s.Class != "" || status >= 400
		if s.Class == "" {
			s.Class = fmt.Sprintf("http_%d", status)
		}
		measured[k] = append(got, s)
	})
	if err != nil {
		return err
	}
	for i, span := range resultsdb.FaultSpans(r.Faults) {
		f := &r.Faults[i]
		k := stepKey{f.Variant, f.Idx}
		samples, ok := measured[k]
		if !ok || f.Error != "" {
			continue
		}
		end := ends[k]
		if !span.Until.IsZero() {
			end = min(end, span.Until.Sub(epoch).Microseconds())
		}
		f.Recovery = resultsdb.FaultRecoveryOf(span.Baseline.Sub(epoch).Microseconds(), span.At.Sub(epoch).Microseconds(), end, samples)
	}
	return nil
}
