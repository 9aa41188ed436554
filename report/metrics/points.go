package metrics

import (
	"strconv"
	"time"

	"github.com/cf-benchmark/cf-benchmark/report"
)

// Kind is how a metric is published.
type Kind int

const (
	// Counter only grows: a step's requests so far.
	Counter Kind = iota
	// Gauge is a level: instances, CPU, memory.
	Gauge
	// Summary is a count, a sum and quantiles: the report's own percentiles.
	Summary
)

// Metric is one of the figures published, named once for each ecosystem: Prometheus
// (Name, base units, _total on counters) and OpenTelemetry (OTelName, Unit in UCUM).
type Metric struct {
	Name     string
	OTelName string
	Unit     string
	Help     string
	Kind     Kind
}

// The metrics published, each with the labels run, variant, step (from 1) and app: the
// app under test, or for the generator's figures the generator app ("" when the variant
// targets a URL). A step's request figures grow while it runs, and so do its CPU and
// memory: the report's, over its window so far (report.BuildLive), final once it ended.
var (
	Requests = &Metric{"cfbench_requests_total", "cfbench.requests", "{request}",
		"Requests the step measured so far (warm-up excluded), as the report counts them.", Counter}
	Errors = &Metric{"cfbench_request_errors_total", "cfbench.request.errors", "{request}",
		"Requests of the step that failed (a transport error or an HTTP status >= 400).", Counter}
	Duration = &Metric{"cfbench_request_duration_seconds", "cfbench.request.duration", "s",
		"Latency from the intended send time to the last byte; quantiles are the report's observed percentiles over every request.", Summary}
	SendLag = &Metric{"cfbench_send_lag_seconds", "cfbench.request.send_lag", "s",
		"The generators' own delay (start - intended send time); the quantile is the report's p99.", Summary}
	StepTime = &Metric{"cfbench_step_seconds_total", "cfbench.step.time", "s",
		"Seconds of the step measured so far: requests_total over it is the report's throughput.", Counter}
	Instances = &Metric{"cfbench_generator_instances", "cfbench.generator.instances", "{instance}",
		"Generator instances that joined the step.", Gauge}
	AppCPU = &Metric{"cfbench_app_cpu_cores", "cfbench.app.cpu.usage", "{cpu}",
		"CPU all instances of the app under test used together, mean over the step, in cores.", Gauge}
	AppMemory = &Metric{"cfbench_app_memory_bytes", "cfbench.app.memory.usage", "By",
		"Memory of an instance of the app under test, mean over the step.", Gauge}
	GeneratorCPU = &Metric{"cfbench_generator_cpu_cores", "cfbench.generator.cpu.usage", "{cpu}",
		"CPU all generator instances used together, mean over the step, in cores.", Gauge}
	GeneratorMemory = &Metric{"cfbench_generator_memory_bytes", "cfbench.generator.memory.usage", "By",
		"Memory of a generator instance, mean over the step.", Gauge}
)

// All are the metrics published, in the order of a Points slice.
var All = []*Metric{Requests, Errors, Duration, SendLag, StepTime, Instances, AppCPU, AppMemory, GeneratorCPU, GeneratorMemory}

// LabelNames are the labels of every metric, in the order of Labels.Values.
var LabelNames = []string{"run", "variant", "step", "app"}

// Labels say where a point belongs.
type Labels struct{ Run, Variant, Step, App string }

// Values are the label values in LabelNames' order.
func (l Labels) Values() []string { return []string{l.Run, l.Variant, l.Step, l.App} }

// Point is one figure of a report at one place.
type Point struct {
	Metric *Metric
	Labels Labels
	// Start is when the run started: counters and summaries count from there.
	Start time.Time
	// Value is a counter's or a gauge's.
	Value float64
	// Count, Sum and Quantiles are a summary's; Quantiles are empty without requests.
	Count     uint64
	Sum       float64
	Quantiles []Quantile
}

// Quantile is one of a summary's quantiles: Q in 0..1, V in the metric's unit.
type Quantile struct{ Q, V float64 }

// Points are the figures of rep, every run, variant and step of it: the report's
// numbers, converted to base units, nothing computed anew. Steps without requests yet
// (warm-up) have their counters at 0 and summaries without quantiles.
func Points(rep *report.Report) []Point {
	var out []Point
	for _, run := range rep.Runs {
		for _, v := range run.Variants {
			for _, st := range v.Steps {
				l := Labels{Run: run.ID, Variant: v.Name, Step: strconv.Itoa(st.Step)}
				from := len(out)
				out = append(out, stepPoints(Labels{Run: l.Run, Variant: l.Variant, Step: l.Step, App: v.App}, st)...)
				out = append(out, usagePoints(l, st.App, AppCPU, AppMemory)...)
				out = append(out, usagePoints(l, st.Generator, GeneratorCPU, GeneratorMemory)...)
				for i := from; i < len(out); i++ {
					out[i].Start = run.Started
				}
			}
		}
	}
	return out
}

const usPerSecond = 1e6

func stepPoints(l Labels, st *report.Step) []Point {
	n := uint64(max(st.Count, 0))
	latency := Point{Metric: Duration, Labels: l, Count: n, Sum: st.MeanUS * float64(st.Count) / usPerSecond}
	lag := Point{Metric: SendLag, Labels: l, Count: n, Sum: st.SendLagMeanUS * float64(st.Count) / usPerSecond}
	if n > 0 {
		latency.Quantiles = []Quantile{{0.5, sec(st.P50US)}, {0.9, sec(st.P90US)}, {0.99, sec(st.P99US)}, {0.999, sec(st.P999US)}}
		lag.Quantiles = []Quantile{{0.99, sec(st.SendLagP99US)}}
	}
	return []Point{
		{Metric: Requests, Labels: l, Value: float64(st.Count)},
		{Metric: Errors, Labels: l, Value: float64(st.Errors)},
		latency,
		lag,
		{Metric: StepTime, Labels: l, Value: st.Seconds},
		{Metric: Instances, Labels: l, Value: float64(st.InstancesSeen)},
	}
}

// usagePoints are an app's CPU and memory in a step, those it has.
func usagePoints(l Labels, u *report.AppUsage, cpu, mem *Metric) []Point {
	if u == nil {
		return nil
	}
	l.App = u.Name
	var out []Point
	if u.CPUTotalCores != nil {
		out = append(out, Point{Metric: cpu, Labels: l, Value: *u.CPUTotalCores})
	}
	if u.MemMeanBytes != nil {
		out = append(out, Point{Metric: mem, Labels: l, Value: *u.MemMeanBytes})
	}
	return out
}

func sec(us int64) float64 { return float64(us) / usPerSecond }
