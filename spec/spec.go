// Package spec reads and validates benchmark specs (benchmark.yml, format version 1).
//
// Parsing is strict: unknown fields, wrong types, missing required fields and invalid
// values are all errors, and every problem in a file is reported at once as an Errors
// list, one "file:line:column: field.path: problem" line per problem. A Spec returned
// without error is complete: defaults are filled in and cross-field rules hold, so
// callers never re-check it.
package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Spec is one validated benchmark spec.
type Spec struct {
	// File is the name the spec was parsed under, usually its path.
	File        string
	Version     int
	Name        string
	Description string
	// Landscape is where apps and generators go on Cloud Foundry; nil when absent,
	// which is only allowed when no variant uses a manifest.
	Landscape *Landscape
	// ResultsDB is the results database service instance on CF; nil when absent.
	ResultsDB *ResultsDB
	Variants  []Variant
	// Repeat is how many times every variant runs, interleaved (Legs); 1 when the spec
	// does not say.
	Repeat   int
	Workload Workload
	Ramp     Ramp
	Checks   Checks
	// SLO is what the report judges capacity against; nil when the spec has none.
	SLO        *SLO
	Collectors Collectors
	Export     Export
	// Limits bound the plan of a run; a run over them is refused before anything is
	// pushed. Zero fields are unset.
	Limits Limits
	// Cleanup is what becomes of the apps the run pushed once it is over (CleanupStop
	// when the spec does not say).
	Cleanup Cleanup
	// pos is where each field is in the file, for Errorf; nil for a Spec built in code.
	pos map[string]position
}

// Cleanup says what a run does with the apps it pushed when it is over, whatever its
// outcome. The generators are scaled to 0 and the relay stopped in every case, and the
// tunnel app stays (status, export and collect-logs reach the results through it).
type Cleanup string

const (
	// CleanupKeep leaves the apps under test running.
	CleanupKeep Cleanup = "keep"
	// CleanupStop stops the apps under test (the default): they take no CPU from the
	// next run on their cell, and the next run of the spec starts them again.
	CleanupStop Cleanup = "stop"
	// CleanupDelete deletes the apps under test, the generator apps and the relay app.
	CleanupDelete Cleanup = "delete"
)

// Limits are what a spec's run may hold at most: Duration under load (variants ×
// levels × repeats × hold), and MemoryMB and Instances at its peak in both spaces together (the
// apps under test, the generators of the running variant, the tunnel app).
type Limits struct {
	Duration  time.Duration
	MemoryMB  int
	Instances int
}

// Landscape names the org, spaces and isolation segments a run uses.
type Landscape struct {
	Org        string
	Apps       SpaceRef
	Generators SpaceRef
	// CreateMissing allows the run to create and assign missing spaces and segments.
	CreateMissing bool
	// Services are service instances the apps' manifests bind (e.g. the app's own
	// database), created in the apps space when missing.
	Services []ServiceInstance
}

// ServiceInstance is a managed service instance created from the marketplace.
type ServiceInstance struct {
	Name, Offering, Plan string
}

// SpaceRef is a space and the isolation segment it should run on ("" for the default).
type SpaceRef struct {
	Space            string
	IsolationSegment string
}

// ResultsDB is the service instance that holds results on CF. When Offering is set
// (Plan is then set too) the instance is created if it does not exist.
type ResultsDB struct {
	ServiceInstance string
	Offering        string
	Plan            string
	// Relay says whether the generators reach the database through a relay app the
	// run pushes (cmd/cfbench: cfbench relay, docs/connection-budget.md) instead of a pool of
	// connections each: see UsesRelay.
	Relay Relay
}

// Relay is results_db.relay.
type Relay string

const (
	RelayAuto   Relay = "auto" // the default: a relay from RelayFrom generator instances at the ramp's peak
	RelayAlways Relay = "always"
	RelayNever  Relay = "never"
)

// RelayFrom is the ramp's peak from which relay auto pushes a relay. An instance with
// its own pool holds one or two connections and runs about 6 statements a second; 20
// of them take up to 40 of a plan's 100 connections (the study's), besides the apps'.
const RelayFrom = 20

// UsesRelay says whether the run's generators go through a relay: always, never, or
// (auto) when the ramp's peak has RelayFrom generator instances or more.
func (s *Spec) UsesRelay() bool {
	if s.ResultsDB == nil {
		return false
	}
	switch s.ResultsDB.Relay {
	case RelayAlways:
		return true
	case RelayNever:
		return false
	}
	return s.PeakGenerators() >= RelayFrom
}

// Variant is one system under test. Exactly one of Manifest and URL is set.
type Variant struct {
	Name string
	// Manifest is the app manifest to push, resolved against the spec's directory.
	// Whether it exists is checked when the run starts, not here.
	Manifest string
	// App is the app's name inside the manifest, "" to take the manifest's only app.
	App string
	// URL is the absolute http(s) URL of an already running target; nothing is pushed.
	URL string
	// Env is set on the pushed app over the manifest's env; scalars keep their literal
	// text ("30", "true"). A matrix's env values are in it.
	Env map[string]string
	// Memory and Instances override the manifest's memory and instances of the app's
	// web process (a matrix sets them); "" and 0 keep the manifest's.
	Memory    string
	Instances int
	// Matrix is the matrix cell this variant is: one setting per dimension of the
	// listed variant's matrix, in the order written; nil for a variant without matrix.
	// A listed variant with a matrix becomes one Variant per combination of values,
	// named its name plus MatrixSuffix, pushing the manifest's app renamed likewise.
	Matrix []Setting
	// Field is the variant's place in the spec ("variants[1]"); the variants of one
	// matrix share it. Errorf(v.Field+".manifest", …) points at the variant's line.
	Field string
}

// Listed is the variant's name as the spec lists it: Name without the matrix suffix.
func (v *Variant) Listed() string { return strings.TrimSuffix(v.Name, v.MatrixSuffix()) }

// Model is how a generator paces its requests.
type Model string

// The workload models.
const (
	// ModelClosed runs Users concurrent users, each sending its next request when the
	// previous one is answered (plus ThinkTime).
	ModelClosed Model = "closed"
	// ModelOpen sends requests at a fixed Rate regardless of responses.
	ModelOpen Model = "open"
	// ModelCount lets Users users send RequestsPerInstance requests in total, then stop.
	ModelCount Model = "count"
)

// DefaultMaxInFlight is the open model's default bound on concurrent requests per
// generator instance.
const DefaultMaxInFlight = 1024

// maxInFlight caps max_in_flight: each request in flight may hold a connection.
const maxInFlight = 65536

// DefaultTick is the open model's default clock period, loadgen.DefaultTick. minTick
// and maxTick bound tick: below 100 µs the wake-ups alone (about 30 µs of CPU each on
// a small VM) would take a third of a core; above 10 ms the send lag the tick adds
// (half a tick on average) outgrows the latency of most apps, and a tick's burst at
// high rates (rate × tick requests at once) nears max_in_flight's default.
const (
	DefaultTick = 200 * time.Microsecond
	minTick     = 100 * time.Microsecond
	maxTick     = 10 * time.Millisecond
)

// RatePer says what an open model's Rate counts.
type RatePer string

// The rate_per values.
const (
	// RatePerInstance is a rate for every generator instance.
	RatePerInstance RatePer = "instance"
	// RatePerTotal is a rate split over the live generator instances.
	RatePerTotal RatePer = "total"
)

// Workload is what every generator instance sends.
type Workload struct {
	Model Model
	// Users is the number of users per generator instance (closed and count; 0 for open).
	Users     int
	ThinkTime time.Duration
	// Rate is requests per second (open only).
	Rate float64
	// RatePer is set for the open model only.
	RatePer RatePer
	// MaxInFlight bounds an instance's concurrent requests in the open model (default
	// DefaultMaxInFlight): due requests beyond it are sent late, and those still waiting
	// when a step ends are counted as missed. 0 for the other models.
	MaxInFlight int
	// Tick is the open model's clock period (default DefaultTick): slots closer than
	// it go out together on one wake-up of the generator, each request still timed
	// from its own slot, so that up to a tick of send lag is in its latency. 0 for the
	// other models.
	Tick time.Duration
	// RequestsPerInstance is set for the count model only.
	RequestsPerInstance int
	KeepAlive           bool
	Timeout             time.Duration
	// CorrelationHeader, when set, also carries the trace id of each request.
	CorrelationHeader string
	Requests          []Request
}

// Request is one entry of the request mix; it is picked with probability Weight/sum.
type Request struct {
	Name string
	// Method is one of the net/http Method constants GET HEAD POST PUT PATCH DELETE OPTIONS.
	Method string
	// Path starts with "/" and may carry a query.
	Path    string
	Weight  int
	Headers map[string]string
	Body    string
}

// Ramp is the run's load levels, one step each (Spec.Levels): generator instances from
// Start to Max by Step, or one of the lists Rates, Users and AppInstances (Kind).
type Ramp struct {
	// Start, Step and Max are the generator instances of a ramp of generators; 0
	// otherwise.
	Start int
	Step  int
	Max   int
	// Rates, Users and AppInstances list the levels of a ramp of another kind: the open
	// loop's rate in all (req/s), the closed loop's users in all, or the app's instances.
	// At most one is set.
	Rates        []float64
	Users        []int
	AppInstances []int
	// Generators is the generator instances of every step of a rates or users ramp, and
	// per app instance of an app_instances ramp (default 1); 0 for a ramp of generators.
	Generators int
	// Hold is how long each step runs.
	Hold time.Duration
	// Warmup is the beginning of each step whose samples are tagged warm-up; < Hold.
	Warmup time.Duration
	Stop   StopConditions
	// Faults are the faults scheduled in the steps (spec/faults.go); nil for none.
	Faults []Fault
}

// Steps returns the number of generator instances in each step of a ramp of
// generators: Start, Start+Step, … up to Max; nil for other ramps (see Spec.Levels).
func (r *Ramp) Steps() []int {
	if r.Kind() != LevelGenerators || r.Max < r.Start || r.Max == 0 {
		return nil
	}
	if r.Step <= 0 {
		return []int{r.Start}
	}
	steps := make([]int, 0, 1+(r.Max-r.Start)/r.Step)
	for n := r.Start; n <= r.Max; n += r.Step {
		steps = append(steps, n)
	}
	return steps
}

// StopConditions end a variant's ramp early. A zero field is unset.
type StopConditions struct {
	// P99Above stops when a step's p99 latency exceeds it.
	P99Above time.Duration
	// MeanAbove stops when a step's mean latency exceeds it (an SLO on the mean).
	MeanAbove time.Duration
	// AppCPUAbove stops when the app's mean CPU per instance in a step exceeds it, in
	// percent of one core as cf app shows it (100 = one core). Needs container metrics,
	// so it applies on Cloud Foundry only.
	AppCPUAbove float64
	// ErrorRateAbove stops when a step's error rate (0..1) exceeds it.
	ErrorRateAbove float64
	// Plateau stops when a step's throughput gain over the previous step is below
	// this fraction.
	Plateau float64
}

// Collectors configures what is recorded besides the generators' samples.
type Collectors struct {
	ContainerMetrics ContainerMetrics
	// RouterLogs is nil when router logs are not collected.
	RouterLogs *RouterLogs
	AppTimings AppTimings
}

// ContainerMetrics polls app and generator container metrics.
type ContainerMetrics struct {
	Interval time.Duration
}

// LogSource is where router access logs come from.
type LogSource string

// The router log sources.
const (
	SourceElasticsearch LogSource = "elasticsearch"
	SourceFile          LogSource = "file"
	// SourceDrain is a syslog drain the run owns (package drain): on Cloud Foundry it
	// pushes the drain app, binds it to the variants' apps as a user-provided
	// service's syslog drain, and stores every router line as it arrives. No pull.
	SourceDrain LogSource = "drain"
)

// RouterLogs configures reading gorouter access logs. URL and Index are set for
// elasticsearch only, Path for file only; a drain has only Delay.
type RouterLogs struct {
	Source LogSource
	// URL is the Elasticsearch or OpenSearch base URL; credentials come from the
	// environment, never from the spec.
	URL string
	// Index is one or more index patterns, comma-separated (default logs-app-*).
	Index string
	// Fields renames document fields (RouterLogFields names to dotted paths; "-" for a
	// field the documents lack), for pipelines that differ from CF's Logstash one.
	Fields map[string]string
	// Raw parses the raw access-log line (the message field) instead of the pipeline's
	// parsed router fields.
	Raw bool
	// Path is resolved against the spec's directory.
	Path string
	// MaxDocuments caps the documents read per run; 0 for no cap.
	MaxDocuments int
	// MaxRequestsPerSecond caps the query rate; 0 for no cap.
	MaxRequestsPerSecond float64
	// Delay is how long after a run to wait for its last lines to reach the source
	// before the automatic pull (log delivery lag; default 30 s). For a drain it is
	// the longest wait for the last lines to arrive, which ends as soon as every
	// request's line is in or none has come for a while.
	Delay time.Duration
}

// RouterLogFields are the field names collectors.router_logs.fields may rename; they
// are the Elasticsearch source's (package routerlogs/elastic, which a test keeps in
// step).
var RouterLogFields = []string{"app", "app_id", "app_index", "backend_addr", "bytes_received", "bytes_sent", "extra",
	"gorouter_time_ms", "gorouter_time_sec", "host", "message", "method", "path", "proto", "referer", "remote_addr",
	"request_time", "response_time_ms", "response_time_sec", "router_app_id", "status", "timestamp", "user_agent",
	"vcap_request_id", "x_forwarded_for", "x_forwarded_proto"}

// AppTimings configures fetching in-app timings from each app instance.
type AppTimings struct {
	Enabled bool
	// Path is the app's timings endpoint, starting with "/".
	Path string
}

// The exportable tables.
const (
	TableSamples          = "samples"
	TableSteps            = "steps"
	TableWorkers          = "workers"
	TableWorkerSteps      = "worker_steps"
	TableContainerMetrics = "container_metrics"
	TableRouterRequests   = "router_requests"
	TableAppTimings       = "app_timings"
	TableAppTimingFlushes = "app_timing_flushes"
	TableRequestTimes     = "request_times"
	TableRunEvents        = "run_events"
	TableVariants         = "variants"
	TableRequests         = "requests"
	TableStepMetrics      = "step_metrics"
	TableStepAppMetrics   = "step_app_metrics"
	TableDBConnections    = "db_connections"
	// What a report reads besides the tables above (an export directory is a complete
	// input for cf-benchmark report).
	TableStepSeries        = "step_series"
	TableStepRouterMetrics = "step_router_metrics"
	TableRouterLogPulls    = "router_log_pulls"
)

// AllTables is the default of Export.Tables; callers must not modify it.
var AllTables = []string{TableSamples, TableSteps, TableWorkers, TableWorkerSteps, TableContainerMetrics, TableRouterRequests,
	TableAppTimings, TableAppTimingFlushes, TableRequestTimes, TableRunEvents, TableVariants, TableRequests, TableStepMetrics,
	TableStepAppMetrics, TableDBConnections, TableStepSeries, TableStepRouterMetrics, TableRouterLogPulls}

// Export says where and what to export after a run.
type Export struct {
	// Dir is where a run's export directory (Dir/RUN_ID) goes: export.dir resolved
	// against the spec's directory, as every path in a spec is; DefaultExportDir in the
	// working directory when the spec has none.
	Dir string
	// Tables are plain strings because the export package takes them as such.
	Tables []string
}

// DefaultExportDir is Export.Dir of a spec without export.dir: results/ in the
// working directory, where cf-benchmark report and status look for results/RUN_ID.
const DefaultExportDir = "results"

// Variant returns the variant called name, or nil.
func (s *Spec) Variant(name string) *Variant {
	for i := range s.Variants {
		if s.Variants[i].Name == name {
			return &s.Variants[i]
		}
	}
	return nil
}

// Load reads and validates the spec at path. Every relative path inside it (a variant's
// manifest, collectors.router_logs.path, export.dir) is resolved against the spec
// file's directory. A spec that does not validate gives an Errors.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, data, filepath.Dir(path))
}

// Parse validates data; name is used in error messages and kept as Spec.File, baseDir
// resolves relative paths. On failure the error is an Errors sorted by position.
func Parse(name string, data []byte, baseDir string) (*Spec, error) {
	return parse(&decoder{file: name}, data, baseDir)
}

func parse(d *decoder, data []byte, baseDir string) (*Spec, error) {
	name := d.file
	var s *Spec
	if root := d.document(data); root != nil {
		s = d.spec(value{node: root, pos: root})
	}
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	s.File, s.pos = name, d.pos
	for i := range s.Variants {
		if m := s.Variants[i].Manifest; m != "" {
			s.Variants[i].Manifest = resolvePath(baseDir, m)
		}
	}
	if rl := s.Collectors.RouterLogs; rl != nil && rl.Path != "" {
		rl.Path = resolvePath(baseDir, rl.Path)
	}
	if _, given := s.pos["export.dir"]; given {
		s.Export.Dir = resolvePath(baseDir, s.Export.Dir)
	}
	return s, nil
}

func resolvePath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}
