package report

import "time"

// Schema and Version identify the JSON form of a Report. Version grows when a field
// changes meaning or goes away; new fields may appear within a version. REPORT.md
// documents every field.
const (
	Schema  = "cf-benchmark/report"
	Version = 1
)

// Report is what `cf benchmark-report` shows about one or more runs: the versioned
// JSON contract that the text and HTML forms render. Steps are numbered from 1
// everywhere in it; latencies are microseconds (*_us), CPU is in cores.
type Report struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	// Headline is the answer at a glance: one line per variant of every run in Runs.
	Headline []Headline `json:"headline"`
	// Runs are the runs asked for, in the order given.
	Runs []*Run `json:"runs"`
	// Baseline is the run the others are compared with (--baseline); nil without one.
	Baseline *Run `json:"baseline,omitempty"`
	// Changes compare each run's variants with the baseline's of the same name.
	Changes []Change `json:"changes,omitempty"`
	// Spread is the run-to-run spread of variants that appear in several runs of the
	// same spec name (repeats), baseline included.
	Spread []Spread `json:"spread,omitempty"`
	// Thresholds are the --fail-on thresholds as judged; empty without any.
	Thresholds []ThresholdResult `json:"thresholds,omitempty"`
}

// Headline is one variant's answer in one line: its capacity at the SLO (or, without
// an SLO, the most throughput a step sustained), against the reference variant and the
// baseline, its requests per core, its bottleneck and the findings that limit it.
type Headline struct {
	Run     string `json:"run"`
	Variant string `json:"variant"`
	// Measure is "capacity" (at the SLO: Capacity.Value) or "max_throughput" (no SLO:
	// the step with the most throughput).
	Measure string `json:"measure"`
	// Throughput is that figure in req/s; nil when no step has figures. Bound says
	// how to read it: "at_least" (the SLO was never crossed after Step), "below" (no
	// step met the SLO: step 1's throughput, which broke it), "" as it is.
	Throughput *float64 `json:"throughput,omitempty"`
	Bound      string   `json:"bound,omitempty"`
	// Step is the step the figure rests on; Basis "measured" (that step's own
	// figure), "interpolated" (Capacity.Crossing, above it) or "mean" (a run with
	// repeats: one line per configuration, the mean over its Repeats repeats, from the
	// Comparison; per core, bottleneck and findings are then left to the sections).
	Step    int    `json:"step,omitempty"`
	Basis   string `json:"basis,omitempty"`
	Repeats int    `json:"repeats,omitempty"`
	// Ratio is Throughput over the reference variant's (the run's first; nil for the
	// reference, for runs with repeats and where either figure is missing), from the
	// run's Comparison; BaselineRatio over the --baseline run's variant of the same
	// name, from the Changes.
	// RatioBound is the capacity ratio's VariantRatios.CapacityRatioBound.
	Reference     string   `json:"reference,omitempty"`
	Ratio         *float64 `json:"ratio,omitempty"`
	RatioBound    string   `json:"ratio_bound,omitempty"`
	BaselineRun   string   `json:"baseline_run,omitempty"`
	BaselineRatio *float64 `json:"baseline_ratio,omitempty"`
	// ThroughputPerCore is Step's requests per second per core the app used
	// (AppUsage.ThroughputPerCore); nil without its CPU.
	ThroughputPerCore *float64 `json:"throughput_per_core,omitempty"`
	// Bottleneck names where the limit is ("app CPU", a latency layer such as "pool
	// wait", or a place a finding names such as "the generators"); "" when it cannot
	// be judged. BottleneckEvidence says why, or why not.
	Bottleneck         string `json:"bottleneck,omitempty"`
	BottleneckEvidence string `json:"bottleneck_evidence,omitempty"`
	// LimitedBy are the checks that found something at the steps around the limit
	// (Step and the step that broke the SLO, or the step after the best), each once;
	// Findings holds, for each of them, its first finding there, as an index into the
	// run's Findings.
	LimitedBy []string `json:"limited_by,omitempty"`
	Findings  []int    `json:"findings,omitempty"`
	// Disturbed are the steps the figure rests on (Step, and the step that broke the
	// SLO) that were disturbed (Step.Disturbances); Text says by what.
	Disturbed []int `json:"disturbed_steps,omitempty"`
	// Text is the line as a person reads it.
	Text string `json:"text"`
}

// Run is one run's part of the report.
type Run struct {
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	SpecFile string     `json:"spec_file"`
	Status   string     `json:"status"`
	Reason   string     `json:"reason,omitempty"`
	Started  time.Time  `json:"started_at"`
	Ended    *time.Time `json:"ended_at,omitempty"`
	// SLO is the spec's slo block the capacities are judged against; nil when none.
	SLO *SLO `json:"slo,omitempty"`
	// Notes say what the report could not show and why (no slo block, no router logs).
	Notes    []string   `json:"notes,omitempty"`
	Variants []*Variant `json:"variants"`
	// Findings are the run's checks that tripped (warn or fail), in the order recorded.
	Findings []Finding `json:"findings"`
	// Faults are the faults the spec injected (faults.go), FaultRule how their
	// recovery is judged; nil and "" for a run without.
	Faults    []Fault `json:"faults,omitempty"`
	FaultRule string  `json:"fault_rule,omitempty"`
	// Coverage is the router-log coverage per variant and step; nil when no router
	// logs were pulled for the run.
	Coverage []CoverageRow `json:"coverage,omitempty"`
	// RouterLogSource says where the router lines came from: "drain" (the run's own
	// syslog drain, every line as it happened), "elasticsearch:URL/INDEX" or
	// "file:PATH" (pulled after the run), space-separated when several; "" when none.
	RouterLogSource string `json:"router_log_source,omitempty"`
	// Flushes is the app-timing flush health per variant and step; nil when the run
	// flushed none.
	Flushes []FlushRow `json:"flushes,omitempty"`
	// Repeats are the spread of each configuration's figures over the run's repeats,
	// per step; nil for a run without repeat:.
	Repeats []RepeatSpread `json:"repeats,omitempty"`
	// Comparison sets the variants side by side (with repeats: the configurations,
	// each as the mean of its repeats); nil for a run of one variant.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// RepeatSpread is one step of one configuration over the repeats of a run that have
// requests in it.
type RepeatSpread struct {
	// Config is the configuration (the variant without its repeat's "#R").
	Config string `json:"config"`
	Step   int    `json:"step"`
	// Variants are the repeats the figures come from (fast#1, fast#2, ...).
	Variants   []string `json:"variants"`
	Throughput Stat     `json:"throughput"`
	P99US      Stat     `json:"p99_us"`
}

// Stat is one figure over repeats.
type Stat struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	// SD is the sample standard deviation (n − 1); 0 for one value.
	SD float64 `json:"sd"`
}

// SLO is the spec's slo block as the report applied it.
type SLO struct {
	// Latency is mean, p50, p90, p99 or p999; "" when no latency is bounded.
	Latency      string   `json:"latency,omitempty"`
	MaxLatencyUS int64    `json:"max_latency_us,omitempty"`
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`
	// MaxAppCPUCores bounds the app's mean CPU per instance, in cores.
	MaxAppCPUCores *float64 `json:"max_app_cpu_cores,omitempty"`
	// Text is the SLO in words, e.g. "mean ≤ 8 ms, errors ≤ 1%, app CPU ≤ 1 core".
	Text string `json:"text"`
}

// Variant is one system under test in one run.
type Variant struct {
	Name string `json:"name"`
	// Config and Repeat say which configuration this variant repeats and which repeat
	// it is (from 1); absent for a run without repeat:.
	Config string `json:"config,omitempty"`
	Repeat int    `json:"repeat,omitempty"`
	// App and GeneratorApp name the app under test and the generator app ("" when
	// the variant targets a URL).
	App          string `json:"app,omitempty"`
	GeneratorApp string `json:"generator_app,omitempty"`
	// LoadUnit says what Step.Load counts: "users" (closed loop: generator instances
	// seen × users each) or "req/s offered" (open loop).
	LoadUnit string `json:"load_unit"`
	// Capacity is the most throughput sustained within the SLO; nil without an SLO.
	Capacity *Capacity `json:"capacity,omitempty"`
	Steps    []*Step   `json:"steps"`
	// Utilisation is the app's CPU against what its instances could use, per app
	// instance count.
	Utilisation []Utilisation `json:"utilisation,omitempty"`
	// Memory is the app's memory over the run and the level it settles at; nil
	// without container metrics.
	Memory *Memory `json:"memory,omitempty"`
	// Series is per-interval throughput, p50 and p99 over the whole run.
	Series *Series `json:"series,omitempty"`
}

// Step is one load level of a variant, warm-up excluded; its figures come from the
// step_metrics and step_app_metrics rows the run stored.
type Step struct {
	// Step numbers the variant's load levels from 1.
	Step          int `json:"step"`
	Instances     int `json:"instances"`
	InstancesSeen int `json:"instances_seen"`
	Users         int `json:"users"`
	// Load is the level on the load axis, in the variant's LoadUnit.
	Load float64 `json:"load"`
	// OfferedRate is the open loop's offered requests per second; nil otherwise.
	OfferedRate *float64 `json:"offered_rate,omitempty"`
	Seconds     float64  `json:"seconds"`
	Count       int64    `json:"count"`
	// Throughput is achieved requests per second (Count / Seconds).
	Throughput float64 `json:"throughput"`
	Errors     int64   `json:"errors"`
	ErrorRate  float64 `json:"error_rate"`
	// ErrorsByClass counts errors per class (timeout, refused, http_503, ...).
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	Bytes         int64            `json:"bytes"`
	// BandwidthBytesPerSec is response body bytes per second.
	BandwidthBytesPerSec float64 `json:"bandwidth_bytes_per_sec"`
	// Latencies from the intended send time to the last byte. Percentiles are observed
	// values (the smallest latency with at least that share of requests at or below it).
	MeanUS float64 `json:"mean_us"`
	P50US  int64   `json:"p50_us"`
	P90US  int64   `json:"p90_us"`
	P99US  int64   `json:"p99_us"`
	P999US int64   `json:"p999_us"`
	MinUS  int64   `json:"min_us"`
	MaxUS  int64   `json:"max_us"`
	// Missed counts open-loop sends due but never sent; Omitted estimates closed-loop
	// requests not sent during stalls.
	Missed  int64 `json:"missed"`
	Omitted int64 `json:"omitted"`
	// SendLagMeanUS and SendLagP99US are the generators' own delay (start − intended).
	SendLagMeanUS float64 `json:"send_lag_mean_us"`
	SendLagP99US  int64   `json:"send_lag_p99_us"`
	StalledMS     int64   `json:"stalled_ms"`
	// Live marks a step still running in a live view (BuildLive): its client-side
	// figures so far, computed from its samples, and its App and Generator over its
	// window so far, computed from the container metrics stored so far (without the CPU
	// available, known when it ends); no stalls yet. A report never has one.
	Live bool `json:"live,omitempty"`
	// MeetsSLO is whether the step met the run's SLO; nil without an SLO.
	MeetsSLO *bool `json:"meets_slo,omitempty"`
	// SLOBreaches name what broke the SLO in this step, e.g. "mean 9.2 ms > 8 ms".
	SLOBreaches []string `json:"slo_breaches,omitempty"`
	// App and Generator are the CPU and memory of the app under test and of the
	// generators in the step; nil when not measured.
	App       *AppUsage `json:"app,omitempty"`
	Generator *AppUsage `json:"generator,omitempty"`
	// Decomposition splits the latency by layer; nil without router and app timings.
	Decomposition *Decomposition `json:"decomposition,omitempty"`
	// Disturbances are what happened to the system under test during the step besides
	// its load (see Disturbance); absent for an undisturbed step.
	Disturbances []Disturbance `json:"disturbances,omitempty"`
}

// Disturbance is something that happened during a step besides its load: an instance
// of the app under test or of the generators that crashed, was killed for memory,
// restarted or moved (the instance_* findings), or a fault the spec injected. The
// step's figures measure it as much as the load, so a capacity at the SLO that rests
// on a disturbed step says so (capacity.go), and the step's row is marked.
//
// Marks are set with Step.Disturb between reading the findings and judging the
// capacity (buildRun); markDisturbed sets those of the instance_* findings.
type Disturbance struct {
	// Cause is the finding's check (instance_crashed, instance_oom,
	// instance_restarted, instance_moved) or, for an injected fault, "fault:" and its
	// action ("fault:crash").
	Cause string `json:"cause"`
	// Text says what happened in a few words, to follow "during which":
	// "instance 0 of stub-fast crashed".
	Text string `json:"text"`
	// Finding is the index of the finding that says it in the run's Findings; nil
	// when none does.
	Finding *int `json:"finding,omitempty"`
}

// Disturb marks the step as disturbed by d; the same cause and text twice is one mark.
func (s *Step) Disturb(d Disturbance) {
	for _, o := range s.Disturbances {
		if o.Cause == d.Cause && o.Text == d.Text {
			return
		}
	}
	s.Disturbances = append(s.Disturbances, d)
}

// Disturbed says whether anything besides its load happened during the step.
func (s *Step) Disturbed() bool { return len(s.Disturbances) > 0 }

// AppUsage is one app's CPU and memory in a step.
type AppUsage struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"`
	// CPUSource is "counters" (exact, from cumulative CPU time), "stats" (sampled
	// rates) or "" (none); CPUPoints the readings it rests on.
	CPUSource string `json:"cpu_source"`
	CPUPoints int    `json:"cpu_points"`
	// CPUCovered is the share of the step's window the CPU readings span (0..1): a
	// figure resting on a small part of the step is less sure.
	CPUCovered    float64  `json:"cpu_covered"`
	CPUMeanCores  *float64 `json:"cpu_mean_cores,omitempty"`
	CPUMaxCores   *float64 `json:"cpu_max_cores,omitempty"`
	CPUTotalCores *float64 `json:"cpu_total_cores,omitempty"`
	// Cells is how many distinct cells (hosts) the instances ran on, nil when the
	// readings said no host; CPUAvailableCores the cores of those cells together, each
	// counted once, nil when unknown (Cloud Foundry does not say a cell's cores).
	Cells             *int     `json:"cells,omitempty"`
	CPUAvailableCores *float64 `json:"cpu_available_cores,omitempty"`
	MemMeanBytes      *float64 `json:"mem_mean_bytes,omitempty"`
	MemMaxBytes       *int64   `json:"mem_max_bytes,omitempty"`
	MemQuotaBytes     *int64   `json:"mem_quota_bytes,omitempty"`
	// ThroughputPerCore is the step's requests per second per core used by all
	// instances together (requests per CPU-second); ThroughputPerCPUPercent the same
	// per CPU% as cf app shows it (100,000 req/s at 250% → 400). Apps only.
	ThroughputPerCore       *float64 `json:"throughput_per_core,omitempty"`
	ThroughputPerCPUPercent *float64 `json:"throughput_per_cpu_percent,omitempty"`
	// Utilisation is CPUTotalCores / CPUAvailableCores; nil when the cores available
	// are unknown.
	Utilisation *float64 `json:"utilisation,omitempty"`
}

// Decomposition splits the mean client latency of a step's requests that have a
// router line and an app timing into layers; the layers add up to ClientMeanUS.
type Decomposition struct {
	// Requests counts the requests joined (client, router and app); Share is their
	// part of the step's requests.
	Requests int64   `json:"requests"`
	Share    float64 `json:"share"`
	// ClientMeanUS is the generators' mean latency over those requests.
	ClientMeanUS float64 `json:"client_mean_us"`
	// Layers, in request order: generator + network, router, router → app, app code,
	// pool wait, query.
	Layers []Layer `json:"layers"`
	// Dominant names the layer with the largest mean.
	Dominant string `json:"dominant"`
}

// Layer is one layer's mean time per request.
type Layer struct {
	// Name is one of "generator+network", "router", "router→app", "app code",
	// "pool wait", "query".
	Name   string  `json:"name"`
	MeanUS float64 `json:"mean_us"`
}

// Capacity is the most throughput a variant sustains within the SLO: never below the
// measured throughput of a step that met it.
type Capacity struct {
	// Status is "crossed" (a step failed the SLO after Step), "not_crossed" (no step
	// after Step failed it: the capacity is at least Step's), "below_first" (no step met
	// it) or "no_data".
	Status string `json:"status"`
	// Step is the step that met the SLO with the most throughput (0 when none): it
	// bounds the capacity from below. Load and Throughput are that step's, measured.
	Step       int     `json:"step,omitempty"`
	Load       float64 `json:"load,omitempty"`
	Throughput float64 `json:"throughput,omitempty"`
	// Value is the capacity in req/s: Throughput, or Crossing where that is higher;
	// Basis says which ("measured" or "interpolated"; "mean" for a configuration's mean
	// over its repeats). Absent when no step met the SLO.
	Value float64 `json:"capacity_throughput,omitempty"`
	Basis string  `json:"basis,omitempty"`
	// Crossing is the throughput where the first bound to break reached its limit,
	// linearly interpolated between CrossingFrom (the step before FailedStep, which met
	// the SLO) and FailedStep; nil unless that lies above Throughput (a step that gained
	// no throughput while it broke the SLO gives no crossing).
	Crossing     *float64 `json:"crossing_throughput,omitempty"`
	CrossingFrom int      `json:"crossing_from_step,omitempty"`
	// FailedStep is the first step after Step that failed the SLO (with below_first:
	// step 1); 0 when none.
	FailedStep int `json:"failed_step,omitempty"`
	// Text is the capacity as a person reads it, e.g. "≥ 1,234 req/s (step 4, measured, ...)".
	Text string `json:"text"`
	// LimitedBy says what ended it: the SLO bound crossed first, noisy steps, and, last,
	// the findings of Step and FailedStep (the limit may not be the app's), in words.
	LimitedBy []string `json:"limited_by,omitempty"`
	// Findings are those findings: indexes into the run's Findings.
	Findings []int `json:"findings,omitempty"`
	// Disturbed are the steps the capacity rests on (Step, FailedStep, CrossingFrom)
	// during which something besides the load happened (Step.Disturbances); Text says so.
	Disturbed []int `json:"disturbed_steps,omitempty"`
}

// Utilisation is the app's CPU use against what is available, for one app instance
// count (the study's table: 1/2/3 instances, 400/800/1200% available, 57/45/35% used).
type Utilisation struct {
	AppInstances int `json:"app_instances"`
	// Cells is how many cells the instances shared, and CoresAvailable the cores of
	// those cells together (each cell once), in the step that used the most CPU; nil
	// when unknown.
	Cells          *int     `json:"cells,omitempty"`
	CoresAvailable *float64 `json:"cores_available,omitempty"`
	// CPUMaxTotalCores is the most CPU all instances used together in any step with
	// this instance count.
	CPUMaxTotalCores float64  `json:"cpu_max_total_cores"`
	Utilisation      *float64 `json:"utilisation,omitempty"`
	// Steps are the steps with this instance count.
	Steps []int `json:"steps"`
}

// Memory is the app's memory per instance over time and the level it settles at.
type Memory struct {
	// T is seconds since the run's epoch; MeanBytes the mean over instances.
	T          []float64 `json:"t"`
	MeanBytes  []float64 `json:"mean_bytes"`
	QuotaBytes *int64    `json:"quota_bytes,omitempty"`
	// SettledBytes is the median of the last quarter of the readings; Settled says
	// whether that quarter stayed within 10% of it (else the app was still growing
	// or shrinking when the run ended).
	SettledBytes float64 `json:"settled_bytes"`
	Settled      bool    `json:"settled"`
}

// Series is a variant's throughput, p50 and p99 over time, per interval of IntervalS
// seconds by intended send time and per step (an interval that a step boundary cuts
// gives a point for each side), warm-up included, with the step boundaries.
type Series struct {
	IntervalS float64 `json:"interval_s"`
	// T is the mean intended send time of the point's requests, in seconds since the
	// run's epoch; Throughput is its requests per second over the part of the interval
	// its step covers.
	T          []float64 `json:"t"`
	Throughput []float64 `json:"throughput"`
	// P50US is absent where the run's stored series has no p50 and no samples are at
	// hand to compute it (an export directory of schema v15 or older without
	// samples.csv); P99US is always there.
	P50US  []int64 `json:"p50_us,omitempty"`
	P99US  []int64 `json:"p99_us"`
	Errors []int64 `json:"errors"`
	// Steps are the step windows in seconds since the run's epoch.
	Steps []StepWindow `json:"steps"`
}

// StepWindow is when a step ran, in seconds since the run's epoch.
type StepWindow struct {
	Step       int      `json:"step"`
	StartS     float64  `json:"start_s"`
	WarmupEndS float64  `json:"warmup_end_s"`
	EndS       *float64 `json:"end_s,omitempty"`
}

// Finding is a check that tripped during the run, with the figures of its step.
type Finding struct {
	Variant string `json:"variant,omitempty"`
	// Step is from 1; 0 when the finding concerns no step.
	Step  int    `json:"step,omitempty"`
	Level string `json:"level"`
	// Check is the check's name (colocation, generator-cpu, flat-throughput, ...).
	Check   string    `json:"check"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	// Figures are what the check's rule judged, as the run recorded them (names with
	// their unit, e.g. send_lag_p99_ms); absent for runs that recorded none.
	Figures map[string]any `json:"figures,omitempty"`
	// Evidence are the step's figures, in words, from the step's stored metrics.
	Evidence []string `json:"evidence,omitempty"`
}

// CoverageRow is how many of a step's requests the router logs account for.
type CoverageRow struct {
	Variant string  `json:"variant"`
	Step    int     `json:"step"`
	Sent    int64   `json:"sent"`
	Found   int64   `json:"found"`
	Missing int64   `json:"missing"`
	Share   float64 `json:"share"`
	Verdict string  `json:"verdict"`
}

// FlushRow is how the app-timing flushes of one variant and step went.
type FlushRow struct {
	Variant      string `json:"variant"`
	Step         int    `json:"step"`
	Instances    int    `json:"instances"`
	Failed       int    `json:"failed"`
	RowsReceived int64  `json:"rows_received"`
	Stored       int64  `json:"stored"`
	Foreign      int64  `json:"foreign"`
	Dropped      int64  `json:"dropped"`
	// Verdict is "healthy", or what went wrong in words.
	Verdict string `json:"verdict"`
}

// Comparison sets a run's variants side by side against the first (Reference). In a
// run with repeats it sets the configurations side by side instead, each figure the
// mean over the configuration's repeats (Repeats of them).
type Comparison struct {
	Reference string          `json:"reference"`
	Repeats   int             `json:"repeats,omitempty"`
	Variants  []VariantRatios `json:"variants"`
}

// VariantRatios is one variant against the reference: ratios are this variant's
// figure over the reference's (2 = twice as much); nil when either is missing or 0.
type VariantRatios struct {
	Variant  string   `json:"variant"`
	Capacity *float64 `json:"capacity,omitempty"`
	// CapacityBasis says how Capacity was found: "step 2, measured", "interpolated
	// between steps 3 and 4", or with repeats "mean of the repeats".
	CapacityBasis string `json:"capacity_basis,omitempty"`
	// CapacityBound is "at_least" when Capacity is a lower bound (no step broke the SLO
	// after it).
	CapacityBound string `json:"capacity_bound,omitempty"`
	// CapacityRatio is Capacity over the reference's; CapacityRatioBound says how sure
	// it is when either is a lower bound: "at_least" (this variant's is, the
	// reference's is not), "at_most" (the reference's is, this one's is not). When both
	// are lower bounds the ratio is not known and CapacityRatio is nil.
	CapacityRatio      *float64 `json:"capacity_ratio,omitempty"`
	CapacityRatioBound string   `json:"capacity_ratio_bound,omitempty"`
	MaxThroughput      float64  `json:"max_throughput"`
	ThroughputRatio    *float64 `json:"max_throughput_ratio,omitempty"`
	// Repeats is how many repeats the figures are the means of; absent without.
	Repeats int `json:"repeats,omitempty"`
	// Steps compare step by step, matched by step number.
	Steps []StepRatios `json:"steps"`
}

// StepRatios compares one step of a variant with the same step of the reference.
type StepRatios struct {
	Step            int      `json:"step"`
	ThroughputRatio *float64 `json:"throughput_ratio,omitempty"`
	MeanRatio       *float64 `json:"mean_ratio,omitempty"`
	P99Ratio        *float64 `json:"p99_ratio,omitempty"`
	// CPUPerRequestRatio compares app CPU per request.
	CPUPerRequestRatio *float64 `json:"cpu_per_request_ratio,omitempty"`
	// ThroughputInSpread and P99InSpread, with repeats, say whether the ranges (min to
	// max) of the figure over the two configurations' repeats overlap: true means the
	// difference is inside the run-to-run spread, not to be read as one; absent when
	// either has fewer than two repeats with the step.
	ThroughputInSpread *bool `json:"throughput_in_spread,omitempty"`
	P99InSpread        *bool `json:"p99_in_spread,omitempty"`
}

// Change is one figure of a run's variant against the baseline run's.
type Change struct {
	Run     string `json:"run"`
	Variant string `json:"variant"`
	// Metric is capacity, throughput (the highest step's), mean, p50, p90, p99 or p999
	// (the worst change over the steps both runs have).
	Metric string `json:"metric"`
	// Step is the step the figure is from; 0 for capacity and throughput.
	Step     int     `json:"step,omitempty"`
	Baseline float64 `json:"baseline"`
	Value    float64 `json:"value"`
	// Change is (Value − Baseline) / Baseline; nil when Baseline is 0.
	Change *float64 `json:"change,omitempty"`
	// Unit is "req/s" or "us".
	Unit string `json:"unit"`
	// Bound is true when either figure is a lower bound (capacity not crossed).
	Bound bool `json:"lower_bound,omitempty"`
	// BaselineBasis and Basis say, for a capacity, how each figure was found: "step 2,
	// measured" or "interpolated between steps 3 and 4".
	BaselineBasis string `json:"baseline_basis,omitempty"`
	Basis         string `json:"basis,omitempty"`
}

// Spread is a figure of one variant across repeated runs of one spec.
type Spread struct {
	Name    string    `json:"name"`
	Variant string    `json:"variant"`
	Metric  string    `json:"metric"`
	Runs    []string  `json:"runs"`
	Values  []float64 `json:"values"`
	Mean    float64   `json:"mean"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	// CV is the coefficient of variation (sample standard deviation / mean).
	CV float64 `json:"cv"`
}

// ThresholdResult is one --fail-on threshold as judged on the Changes.
type ThresholdResult struct {
	Spec   string `json:"spec"`
	Failed bool   `json:"failed"`
	// Detail names the worst change found, or why nothing could be judged.
	Detail string `json:"detail"`
}
