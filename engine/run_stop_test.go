package engine

import (
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func TestStopReason(t *testing.T) {
	step := func(count, errors int64, rps float64, p99 time.Duration) resultsdb.StepSummary {
		return resultsdb.StepSummary{Count: count, Errors: errors, Throughput: rps, P99: p99}
	}
	base := step(1000, 0, 100, 10*time.Millisecond)
	cases := []struct {
		name string
		cond spec.StopConditions
		prev *resultsdb.StepSummary
		cur  resultsdb.StepSummary
		cpu  *float64
		want string
	}{
		{"no conditions", spec.StopConditions{}, &base, step(1000, 900, 1, time.Hour), nil, ""},
		{"p99 under", spec.StopConditions{P99Above: 50 * time.Millisecond}, nil, step(10, 0, 1, 50*time.Millisecond), nil, ""},
		{"p99 over", spec.StopConditions{P99Above: 50 * time.Millisecond}, nil, step(10, 0, 1, 51*time.Millisecond), nil, "p99 51.0ms over 50.0ms"},
		{"p99 of an empty step does not count", spec.StopConditions{P99Above: time.Millisecond}, nil, step(0, 0, 0, time.Second), nil, ""},
		{"error rate at the limit", spec.StopConditions{ErrorRateAbove: 0.01}, nil, step(1000, 10, 1, 0), nil, ""},
		{"error rate over", spec.StopConditions{ErrorRateAbove: 0.01}, nil, step(1000, 11, 1, 0), nil, "error rate 1.10% over 1.00%"},
		{"plateau needs a previous step", spec.StopConditions{Plateau: 0.05}, nil, step(1000, 0, 100, 0), nil, ""},
		{"growth above plateau", spec.StopConditions{Plateau: 0.05}, &base, step(1000, 0, 106, 0), nil, ""},
		{"growth below plateau", spec.StopConditions{Plateau: 0.05}, &base, step(1000, 0, 104, 0), nil, "throughput plateau: 104.0 req/s is +4.0% over the previous step, under 5.0%"},
		{"throughput falls", spec.StopConditions{Plateau: 0.05}, &base, step(1000, 0, 80, 0), nil, "throughput plateau: 80.0 req/s is -20.0% over the previous step, under 5.0%"},
		{"mean at the SLO", spec.StopConditions{MeanAbove: 8 * time.Millisecond}, nil, resultsdb.StepSummary{Count: 10, Mean: 8 * time.Millisecond}, nil, ""},
		{"mean over the SLO", spec.StopConditions{MeanAbove: 8 * time.Millisecond}, nil, resultsdb.StepSummary{Count: 10, Mean: 8100 * time.Microsecond}, nil, "mean 8.100ms over 8.000ms"},
		{"app CPU unknown", spec.StopConditions{AppCPUAbove: 100}, nil, base, nil, ""},
		{"app CPU at the limit", spec.StopConditions{AppCPUAbove: 100}, nil, base, ptr(1.0), ""},
		{"app CPU over", spec.StopConditions{AppCPUAbove: 100}, nil, base, ptr(1.26), "app CPU 126% of a core over 100%"},
		{"p99 wins over plateau", spec.StopConditions{P99Above: time.Millisecond, Plateau: 0.05}, &base, step(1000, 0, 80, 2*time.Millisecond), nil, "p99 2.000ms over 1.000ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := c.cur
			if c.cpu != nil {
				cur.Apps = []resultsdb.AppStepMetrics{{Role: resultsdb.RoleGenerator, CPUMeanCores: ptr(9.0)}, {Role: resultsdb.RoleApp, CPUMeanCores: c.cpu}}
			}
			if got := stopReason(c.cond, c.prev, cur); got != c.want {
				t.Fatalf("stopReason = %q, want %q", got, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
