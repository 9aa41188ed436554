package report

import (
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
		name       string
		steps      []*Step
		status     string
		text       string
		limitedBy  string
		crossingAt float64
	}{
		{"the first step already fails", []*Step{step(1, 100, 12000, cores(0.5)), step(2, 150, 15000, cores(0.6))},
			"below_first", "< 100 req/s (step 1 already broke the SLO", "p99 12.0 ms > 10.0 ms", 0},
		{"CPU crosses first", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 6000, cores(1.5))},
			"crossed", "100 req/s at 2 users (step 1, measured); the SLO is crossed at about 150 req/s", "app CPU 1.50 > 1 cores", 150},
		{"the earlier of two crossings counts", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 15000, cores(1.25))},
			"crossed", "crossed at about 150 req/s", "p99 15.0 ms > 10.0 ms, app CPU 1.25 > 1 cores", 150},
		{"CPU unknown is said", []*Step{step(1, 100, 5000, nil), step(2, 200, 6000, nil)},
			"not_crossed", "≥ 200 req/s", "app CPU unknown in step(s) 1, 2", 0},
		{"met again after crossing", []*Step{step(1, 100, 5000, cores(0.5)), step(2, 200, 15000, cores(0.5)), step(3, 210, 9000, cores(0.5))},
			"crossed", "crossed at about 150 req/s", "step 3 met the SLO again", 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := capacity(slo, &Variant{Name: "v", LoadUnit: "users", Steps: tt.steps}, nil)
			if c.Status != tt.status || !strings.Contains(c.Text, tt.text) || !strings.Contains(strings.Join(c.LimitedBy, "\n"), tt.limitedBy) {
				t.Errorf("capacity = %+v\nwant status %s, text with %q, limited by %q", c, tt.status, tt.text, tt.limitedBy)
			}
			if tt.crossingAt > 0 && (c.Crossing == nil || *c.Crossing != tt.crossingAt) {
				t.Errorf("crossing = %v, want %v", c.Crossing, tt.crossingAt)
			}
		})
	}
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
