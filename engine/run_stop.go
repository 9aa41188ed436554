package engine

import (
	"fmt"

	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// stopReason says why the ramp must end after step cur, or "" to go on. prev is the
// previous step of the same variant (nil for the first step). The app's CPU is its mean
// per instance in the step, where cur has it.
func stopReason(c spec.StopConditions, prev *resultsdb.StepSummary, cur resultsdb.StepSummary) string {
	var appCPU *float64
	if a, ok := cur.App(resultsdb.RoleApp); ok {
		appCPU = a.CPUMeanCores
	}
	switch {
	case c.P99Above > 0 && cur.Count > 0 && cur.P99 > c.P99Above:
		return fmt.Sprintf("p99 %sms over %sms", report.Millis(cur.P99), report.Millis(c.P99Above))
	case c.MeanAbove > 0 && cur.Count > 0 && cur.Mean > c.MeanAbove:
		return fmt.Sprintf("mean %sms over %sms", report.Millis(cur.Mean), report.Millis(c.MeanAbove))
	case c.AppCPUAbove > 0 && appCPU != nil && 100**appCPU > c.AppCPUAbove:
		return fmt.Sprintf("app CPU %.0f%% of a core over %g%%", 100**appCPU, c.AppCPUAbove)
	case c.ErrorRateAbove > 0 && cur.ErrorRate() > c.ErrorRateAbove:
		return fmt.Sprintf("error rate %.2f%% over %.2f%%", 100*cur.ErrorRate(), 100*c.ErrorRateAbove)
	case c.Plateau > 0 && prev != nil && prev.Throughput > 0:
		gain := (cur.Throughput - prev.Throughput) / prev.Throughput
		if gain < c.Plateau {
			return fmt.Sprintf("throughput plateau: %.1f req/s is %+.1f%% over the previous step, under %.1f%%",
				cur.Throughput, 100*gain, 100*c.Plateau)
		}
	}
	return ""
}
