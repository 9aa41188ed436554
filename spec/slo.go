package spec

import "time"

// LatencyStatistic names the latency figure of a step an SLO bounds.
type LatencyStatistic string

// The latency statistics an SLO may bound: the mean, or an observed percentile.
const (
	StatMean LatencyStatistic = "mean"
	StatP50  LatencyStatistic = "p50"
	StatP90  LatencyStatistic = "p90"
	StatP99  LatencyStatistic = "p99"
	StatP999 LatencyStatistic = "p999"
)

// SLO is the service level a report judges every load level against: the capacity of
// a variant is the highest load that meets all of its bounds. A step meets it when its
// latency statistic is at most MaxLatency and, where set, its error rate and the app's
// mean CPU per instance are at most MaxErrorRate and MaxAppCPUCores. At least one bound
// is set in a validated spec.
type SLO struct {
	// Latency is the statistic MaxLatency bounds; "" when MaxLatency is unset.
	Latency LatencyStatistic
	// MaxLatency is 0 when the SLO bounds no latency.
	MaxLatency time.Duration
	// MaxErrorRate is a fraction (0.01 = 1 %); nil when unbounded. 0 allows no error.
	MaxErrorRate *float64
	// MaxAppCPUCores is the app's mean CPU per instance in cores (1 = one full core,
	// 100 % as cf app shows it); nil when unbounded.
	MaxAppCPUCores *float64
}

func (d *decoder) slo(dst **SLO) func(value) {
	return func(v value) {
		s := &SLO{}
		*dst = s
		var rate, cpu float64
		got, ok := d.object(v,
			optional("latency", enum(d, &s.Latency, StatMean, StatP50, StatP90, StatP99, StatP999)),
			optional("max_latency", d.duration(&s.MaxLatency, positive)),
			optional("max_error_rate", d.number(&rate, func(x float64) bool { return x >= 0 && x <= 1 }, "a fraction from 0 to 1 (0.01 = 1%)")),
			optional("max_app_cpu_cores", d.number(&cpu, func(x float64) bool { return x > 0 }, "a number of cores greater than 0 (1 = one full core, 100% in cf app)")),
		)
		if !ok {
			return
		}
		if _, set := got["max_error_rate"]; set {
			s.MaxErrorRate = &rate
		}
		if _, set := got["max_app_cpu_cores"]; set && cpu > 0 {
			s.MaxAppCPUCores = &cpu
		}
		d.requiredWith(got, v.path, "latency", "max_latency", "latency")
		d.requiredWith(got, v.path, "max_latency", "latency", "max_latency (which statistic it bounds: mean, p50, p90, p99 or p999)")
		if len(got) == 0 {
			d.errorf(v, "needs at least one bound: latency with max_latency, max_error_rate or max_app_cpu_cores")
		}
	}
}
