package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

func TestStatOf(t *testing.T) {
	t.Parallel()
	s := statOf([]float64{104, 98, 100, 110})
	if s.N != 4 || s.Min != 98 || s.Max != 110 || s.Median != 102 || s.Mean != 103 {
		t.Errorf("statOf = %+v, want n 4, min 98, median 102, max 110, mean 103", s)
	}
	// Sample standard deviation: sqrt((1+25+9+49)/3) = sqrt(28).
	if d := s.SD - 5.2915; d > 1e-4 || d < -1e-4 {
		t.Errorf("sd = %v, want 5.2915", s.SD)
	}
	if one := statOf([]float64{7}); one.Median != 7 || one.SD != 0 {
		t.Errorf("statOf one value = %+v", one)
	}
}

// repeatSteps are per configuration and repeat the throughput and p99 (ms) of steps 1
// and 2: in step 1 b is 1% over a, inside the spread of both; in step 2 b is 27%
// faster with a lower p99, its repeats' range apart from a's.
var repeatSteps = map[string][3][2][2]float64{
	"a": {{{100, 5}, {200, 10}}, {{104, 6}, {190, 11}}, {{98, 5.5}, {210, 12}}},
	"b": {{{101, 5}, {260, 8}}, {{99, 5.2}, {250, 8.5}}, {{103, 5.8}, {255, 9}}},
}

// seedRepeats stores a run of configurations a and b, 3 repeats interleaved, 2 steps
// each, as the engine leaves its steps, step_metrics and run_variants.
func seedRepeats(t *testing.T, store *resultsdb.Store, id string) {
	t.Helper()
	ctx, db := context.Background(), store.Pool()
	epoch := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	spec := "version: 1\nname: rep\nrepeat: 3\nvariants:\n  - {name: a, url: \"http://127.0.0.1:1\"}\n  - {name: b, url: \"http://127.0.0.1:2\"}\n" +
		"workload: {model: closed, requests: [{name: r, path: /}]}\nramp: {max: 2, hold: 10s}\n"
	execSQL(t, db, `INSERT INTO runs (id, name, spec_file, spec, trace_tag, status, epoch, started_at, ended_at)
		VALUES ($1, 'rep', 'rep.yml', $2, 7, 'completed', $3, $3, $4)`, id, spec, epoch, epoch.Add(2*time.Minute))
	at := epoch
	for r := 1; r <= 3; r++ {
		for _, c := range []string{"a", "b"} {
			name := fmt.Sprintf("%s#%d", c, r)
			if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: id, Variant: name, Config: c, Repeat: r, GeneratorApp: "rep-gen-" + c,
				TargetURL: "http://127.0.0.1", Workload: []byte(`{"model": "closed", "users": 1}`)}); err != nil {
				t.Fatal(err)
			}
			for si, fig := range repeatSteps[c][r-1] {
				st := resultsdb.Step{RunID: id, Variant: name, Index: si, Instances: si + 1, Users: 1, Started: at,
					WarmupUntil: at.Add(time.Second), Ends: at.Add(10 * time.Second)}
				if err := store.StartStep(ctx, st); err != nil {
					t.Fatal(err)
				}
				if err := store.EndStep(ctx, id, name, si, st.Ends, ""); err != nil {
					t.Fatal(err)
				}
				p99 := int64(fig[1] * 1000)
				execSQL(t, db, `INSERT INTO step_metrics (run_id, variant, step, seconds, count, errors, errors_by_class, bytes, throughput,
					mean_us, p50_us, p90_us, p99_us, p999_us, min_us, max_us, instances, instances_seen, users, offered_rate, missed,
					send_lag_mean_us, send_lag_p99_us, stalled_ms, omitted, app_timed, computed_at)
					VALUES ($1,$2,$3, 9, $4, 0, '{}', 0, $5, $6, $7, $7, $8, $8, 100, $8, $9, $9, 1, NULL, 0, 10, 20, 0, 0, 0, $10)`,
					id, name, si, int64(fig[0]*9), fig[0], float64(p99/3), p99/3, p99, si+1, st.Ends)
				at = at.Add(10 * time.Second)
			}
		}
	}
}

// A run with repeats: every repeat is a variant, the spread per configuration and step
// is reported, and the configurations are compared by their means, saying which
// differences are inside the spread.
func TestReportOfRepeats(t *testing.T) {
	store, err := resultsdb.Open(context.Background(), testpg.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	const id = "20261123-100000-0003"
	seedRepeats(t, store, id)
	rep, err := Build(context.Background(), store, []string{id}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "repeats.txt", text.Bytes())
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	if v := run.Variants[2]; v.Name != "a#2" || v.Config != "a" || v.Repeat != 2 {
		t.Errorf("third variant = %s (config %q, repeat %d), want a#2, the second repeat of a", v.Name, v.Config, v.Repeat)
	}
	if len(run.Repeats) != 4 {
		t.Fatalf("repeats = %+v, want a and b × 2 steps", run.Repeats)
	}
	a2 := run.Repeats[1]
	if a2.Config != "a" || a2.Step != 2 || a2.Throughput.N != 3 || a2.Throughput.Min != 190 || a2.Throughput.Median != 200 ||
		a2.Throughput.Max != 210 || a2.Throughput.SD != 10 || a2.P99US.Median != 11000 {
		t.Errorf("a step 2 over the repeats = %+v", a2)
	}
	c := run.Comparison
	if c == nil || c.Reference != "a" || c.Repeats != 3 || len(c.Variants) != 2 || c.Variants[1].Variant != "b" {
		t.Fatalf("comparison = %+v, want configurations a and b, means of 3 repeats", c)
	}
	b := c.Variants[1]
	if s := b.Steps[0]; s.ThroughputInSpread == nil || !*s.ThroughputInSpread || s.P99InSpread == nil || !*s.P99InSpread {
		t.Errorf("b step 1 = %+v, want throughput and p99 inside the spread", s)
	}
	if s := b.Steps[1]; s.ThroughputInSpread == nil || *s.ThroughputInSpread || *s.P99InSpread || *s.ThroughputRatio < 1.27 || *s.ThroughputRatio > 1.28 {
		t.Errorf("b step 2 = %+v, want 255/200 = 1.275× and both apart from the spread", s)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Runs[0].Repeats) != 4 {
		t.Errorf("JSON does not read back the repeats: %v", err)
	}
}
