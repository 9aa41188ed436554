package report

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestCapacityEdges(t *testing.T) {
	cpu := 1.0
	slo := &spec.SLO{Latency: spec.StatP99, MaxLatency: 10 * time.Millisecond, MaxAppCPUCores: &cpu}
	cores := func(x float64) *AppUsage { return &AppUsage{CPUMeanCores: &x, CPUPoints: 3} }
	step := func(n int, thr float64, p99 int64, app *AppUsage) *Step {
		return &Step{Step: n, Load: float64(2 * n), Count: 100, Throughput: thr, P99US: p99, App: app}
	}
	tests := []struct {
		name      string
		steps     []*Step
		status    string
		text      string
		limitedBy string
		// value is the capacity; crossingAt the interpolated crossing (0: none).
		value, crossingAt float64
		step, failed      int
		basis             string
	}{
		{"no step meets it", []*Step{step(1, 100, 12000, cores(0.5)), step(2, 150, 15000, cores(0.6))},
			"below_first", "< 100 req/s (no step met the SLO; step 1 broke it", "p99 12.0 ms > 10.0 ms", 0, 0, 0, 1, ""},
		{"every step meets it", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 6000, cores(0.6))},
			"not_crossed", "≥ 200 req/s (step 2, measured", "", 200, 0, 2, 0, "measured"},
		{"met, then failed with more throughput: interpolated", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 6000, cores(1.5))},
			"crossed", "about 150 req/s (the SLO crossed between step 1 and step 2, interpolated); step 1 measured 100 req/s", "app CPU 1.50 > 1 cores", 150, 150, 1, 2, "interpolated"},
		{"the earlier of two crossings counts", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 15000, cores(1.25))},
			"crossed", "about 150 req/s", "p99 15.0 ms > 10.0 ms, app CPU 1.25 > 1 cores", 150, 150, 1, 2, "interpolated"},
		// The Java study: 1,451 req/s within the SLO at step 2, 1,325 at step 3, which
		// broke it. Interpolating between them ran downhill to below what step 2 sustained.
		{"throughput fell at the failing step", []*Step{step(1, 800, 4000, cores(0.5)), step(2, 1451, 8000, cores(0.8)), step(3, 1325, 14000, cores(0.9))},
			"crossed", "1,451 req/s at 4 users (step 2, measured); step 3 broke the SLO at 1,325 req/s, no more throughput", "step 3: p99 14.0 ms", 1451, 0, 2, 3, "measured"},
		{"the best step is not the last that met it", []*Step{step(1, 1000, 4000, cores(0.5)), step(2, 900, 4000, cores(0.6)), step(3, 1100, 12000, cores(0.7))},
			"crossed", "about 1,050 req/s (the SLO crossed between step 2 and step 3, interpolated); step 1 measured 1,000 req/s", "step 3: p99 12.0 ms", 1050, 1050, 1, 3, "interpolated"},
		{"an interpolation below the best step counts for nothing", []*Step{step(1, 1000, 4000, cores(0.5)), step(2, 800, 9000, cores(0.6)), step(3, 1100, 14000, cores(0.7))},
			"crossed", "1,000 req/s at 2 users (step 1, measured)", "step 3: p99 14.0 ms", 1000, 0, 1, 3, "measured"},
		{"CPU unknown is said", []*Step{step(1, 100, 5000, nil), step(2, 200, 6000, nil)},
			"not_crossed", "≥ 200 req/s", "app CPU unknown in step(s) 1, 2", 200, 0, 2, 0, "measured"},
		{"met again after crossing, with more throughput", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 15000, cores(0.5)), step(3, 210, 9000, cores(0.5))},
			"not_crossed", "≥ 210 req/s (step 3, measured", "step 2 broke the SLO before step 3 met it", 210, 0, 3, 0, "measured"},
		// A step where no request completed is not judged (it used to meet the SLO, and
		// a variant that completed nothing read "≥ 0.00 req/s at the SLO").
		{"a step without requests is not judged", []*Step{step(1, 100, 5000, cores(0.5)), {Step: 2, Load: 4}, step(3, 300, 15000, cores(0.5))},
			"crossed", "about 200 req/s (the SLO crossed between step 1 and step 3, interpolated)", "no request completed in step(s) 2: not judged", 200, 200, 1, 3, "interpolated"},
		{"no request in the first step", []*Step{{Step: 1, Load: 2}, step(2, 150, 15000, cores(0.6))},
			"below_first", "< 150 req/s (no step met the SLO; step 2 broke it at 4 users)", "no request completed in step(s) 1", 0, 0, 0, 2, ""},
		{"no request in any step", []*Step{{Step: 1, Load: 2}, {Step: 2, Load: 4}},
			"no_data", "no request completed in any step", "", 0, 0, 0, 0, ""},
		{"met again after crossing, with less", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 15000, cores(0.5)), step(3, 90, 9000, cores(0.5))},
			"crossed", "about 150 req/s", "step 3 met the SLO again after it was crossed", 150, 150, 1, 2, "interpolated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := capacity(slo, &Variant{Name: "v", LoadUnit: "users", Steps: tt.steps}, nil)
			if c.Status != tt.status || !strings.Contains(c.Text, tt.text) || !strings.Contains(strings.Join(c.LimitedBy, "\n"), tt.limitedBy) {
				t.Errorf("capacity = %+v\nwant status %s, text with %q, limited by %q", c, tt.status, tt.text, tt.limitedBy)
			}
			if math.Abs(c.Value-tt.value) > 1e-9 || c.Step != tt.step || c.FailedStep != tt.failed || c.Basis != tt.basis {
				t.Errorf("capacity %v (%s) bounded by step %d, failed step %d; want %v (%s), %d, %d", c.Value, c.Basis, c.Step, c.FailedStep, tt.value, tt.basis, tt.step, tt.failed)
			}
			if (c.Crossing == nil) != (tt.crossingAt == 0) || c.Crossing != nil && math.Abs(*c.Crossing-tt.crossingAt) > 1e-9 {
				t.Errorf("crossing = %v, want %v", c.Crossing, tt.crossingAt)
			}
		})
	}
}

// TestCapacityNeverBelowAStepThatMetTheSLO judges random ramps (a fixed seed): the
// capacity is at least the throughput of every step that met the SLO, and a step that
// met it names the step it rests on.
func TestCapacityNeverBelowAStepThatMetTheSLO(t *testing.T) {
	slo := &spec.SLO{Latency: spec.StatMean, MaxLatency: 10 * time.Millisecond}
	rnd := rand.New(rand.NewPCG(27, 1))
	shapes := map[string]int{}
	for n := range 500 {
		var steps []*Step
		for i := range 1 + rnd.IntN(6) {
			steps = append(steps, &Step{Step: i + 1, Load: float64(i + 1), Count: 100, Throughput: float64(100 + rnd.IntN(1000)), MeanUS: float64(2000 + rnd.IntN(16000))})
		}
		c := capacity(slo, &Variant{Name: "v", LoadUnit: "users", Steps: steps}, nil)
		shapes[c.Status+"/"+c.Basis]++
		x, _, ok := capacityValue(c)
		for _, s := range steps {
			if *s.MeetsSLO && (!ok || x < s.Throughput) {
				t.Fatalf("ramp %d: step %d met the SLO at %v req/s, capacity %v (%+v)", n, s.Step, s.Throughput, x, c)
			}
		}
		if ok && (c.Step == 0 || c.Value != max(c.Throughput, ptrOr(c.Crossing))) {
			t.Fatalf("ramp %d: capacity %+v does not rest on its step", n, c)
		}
	}
	for _, s := range []string{"below_first/", "not_crossed/measured", "crossed/measured", "crossed/interpolated"} {
		if shapes[s] == 0 {
			t.Errorf("no random ramp gave %s: %v", s, shapes)
		}
	}
}

func ptrOr(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func TestParseThresholds(t *testing.T) {
	ts, err := ParseThresholds(" capacity=-10% , p99=+20.5%")
	if err != nil || len(ts) != 2 || ts[0].Metric != "capacity" || ts[0].Sign != -1 || ts[0].Limit != 0.1 ||
		ts[1].Metric != "p99" || ts[1].Sign != 1 || ts[1].Limit != 0.205 {
		t.Fatalf("got %+v, %v", ts, err)
	}
	for _, bad := range []string{"p99", "p99=20%", "p99=+20", "p95=+20%", "p99=+x%", "p99=-NaN%"} {
		if _, err := ParseThresholds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
