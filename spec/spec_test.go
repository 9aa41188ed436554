package spec

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/bad")

// minimal is the smallest valid spec; good cases append to it or replace parts.
const minimal = `version: 1
name: minimal
variants:
  - name: a
    url: http://127.0.0.1:18080
workload:
  model: closed
  requests:
    - name: r
      path: /
ramp:
  max: 2
  hold: 1s
`

// withWorkload returns minimal with its workload section replaced by w.
func withWorkload(w string) string {
	head, rest, _ := strings.Cut(minimal, "workload:\n")
	_, tail, _ := strings.Cut(rest, "ramp:\n")
	return head + w + "ramp:\n" + tail
}

func TestParseGood(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		yaml  string
		check func(t *testing.T, s *Spec)
	}{
		{"minimal gets every default", minimal, func(t *testing.T, s *Spec) {
			want := &Spec{
				File: "spec.yml", Version: 1, Name: "minimal",
				Variants: []Variant{{Name: "a", URL: "http://127.0.0.1:18080", Field: "variants[0]"}},
				Repeat:   1,
				Workload: Workload{Model: ModelClosed, Users: 1, KeepAlive: true, Timeout: 10 * time.Second,
					Requests: []Request{{Name: "r", Method: http.MethodGet, Path: "/", Weight: 1}}},
				Ramp:       Ramp{Start: 1, Step: 1, Max: 2, Hold: time.Second},
				Checks:     DefaultChecks(),
				Collectors: Collectors{ContainerMetrics: ContainerMetrics{Interval: 15 * time.Second}, AppTimings: AppTimings{Path: "/_cfbench/timings"}},
				Export:     Export{Dir: "results", Tables: AllTables},
				Cleanup:    CleanupStop,
			}
			s.pos = nil // where the fields are: TestErrorfPlacesAProblem…
			if !reflect.DeepEqual(s, want) {
				t.Errorf("got  %+v\nwant %+v", s, want)
			}
		}},
		{"open model with a bound on requests in flight", withWorkload(`workload:
  model: open
  rate: 100
  rate_per: total
  max_in_flight: 16
  requests:
    - name: r
      path: /
`), func(t *testing.T, s *Spec) {
			if w := s.Workload; w.MaxInFlight != 16 || w.RatePer != RatePerTotal {
				t.Errorf("got %+v", w)
			}
		}},
		{"open model", withWorkload(`workload:
  model: open
  rate: 12.5
  keep_alive: false
  timeout: 1m30s
  correlation_header: X-Correlation-Id
  requests:
    - name: r
      path: /x?y=1
      method: DELETE
      weight: 1000000
      headers: {Accept: "*/*"}
`), func(t *testing.T, s *Spec) {
			w := s.Workload
			want := Workload{Model: ModelOpen, Rate: 12.5, RatePer: RatePerInstance, MaxInFlight: DefaultMaxInFlight, Tick: DefaultTick, Timeout: 90 * time.Second,
				CorrelationHeader: "X-Correlation-Id",
				Requests:          []Request{{Name: "r", Method: http.MethodDelete, Path: "/x?y=1", Weight: 1000000, Headers: map[string]string{"Accept": "*/*"}}}}
			if !reflect.DeepEqual(w, want) {
				t.Errorf("got  %+v\nwant %+v", w, want)
			}
		}},
		{"open model on a coarse tick", withWorkload(`workload:
  model: open
  rate: 20000
  tick: 1ms
  requests: [{name: r, path: /}]
`), func(t *testing.T, s *Spec) {
			if s.Workload.Tick != time.Millisecond {
				t.Errorf("tick = %v, want 1ms", s.Workload.Tick)
			}
		}},
		{"open model on the finest tick", withWorkload(`workload:
  model: open
  rate: 100
  tick: 100us
  requests: [{name: r, path: /}]
`), func(t *testing.T, s *Spec) {
			if s.Workload.Tick != 100*time.Microsecond {
				t.Errorf("tick = %v, want 100µs", s.Workload.Tick)
			}
		}},
		{"open model rate per total", withWorkload(`workload:
  model: open
  rate: 100
  rate_per: total
  requests: [{name: r, path: /}]
`), func(t *testing.T, s *Spec) {
			if s.Workload.Rate != 100 || s.Workload.RatePer != RatePerTotal || s.Workload.Users != 0 {
				t.Errorf("workload = %+v", s.Workload)
			}
		}},
		{"count model", withWorkload(`workload:
  model: count
  requests_per_instance: 1000
  requests: [{name: r, path: /, method: POST, body: ""}]
`), func(t *testing.T, s *Spec) {
			if w := s.Workload; w.Users != 1 || w.RequestsPerInstance != 1000 || w.RatePer != "" || w.Tick != 0 || w.Requests[0].Method != "POST" {
				t.Errorf("workload = %+v", w)
			}
		}},
		{"closed model with think time", withWorkload(`workload:
  model: closed
  users: 10000
  think_time: 250ms
  requests: [{name: r, path: /}]
`), func(t *testing.T, s *Spec) {
			if w := s.Workload; w.Users != 10000 || w.ThinkTime != 250*time.Millisecond {
				t.Errorf("workload = %+v", w)
			}
		}},
		{"a matrix makes a variant per combination, first dimension slowest", `version: 1
name: cf
landscape: {org: o, apps: {space: s}, generators: {space: g}}
results_db: {service_instance: db}
variants:
  - name: plain
    manifest: app.yml
  - name: pool
    manifest: app.yml
    env: {LOG: quiet}
    matrix:
      env:
        DB_POOL_SIZE: [30, 60]
        JAVA_OPTS: {g1: "-XX:+UseG1GC", parallel: "-XX:+UseParallelGC"}
      memory: [1G]
      instances: [1, 3]
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 1, hold: 1s}
`, func(t *testing.T, s *Spec) {
			var names []string
			for _, v := range s.Variants {
				names = append(names, v.Name)
			}
			want := []string{"plain",
				"pool-30-g1-1g-i1", "pool-30-g1-1g-i3", "pool-30-parallel-1g-i1", "pool-30-parallel-1g-i3",
				"pool-60-g1-1g-i1", "pool-60-g1-1g-i3", "pool-60-parallel-1g-i1", "pool-60-parallel-1g-i3"}
			if !slices.Equal(names, want) {
				t.Fatalf("variants %q\nwant     %q", names, want)
			}
			v := s.Variants[7]
			wantV := Variant{Name: "pool-60-parallel-1g-i1", Manifest: "base/dir/app.yml", Field: "variants[1]",
				Env:    map[string]string{"LOG": "quiet", "DB_POOL_SIZE": "60", "JAVA_OPTS": "-XX:+UseParallelGC"},
				Memory: "1G", Instances: 1,
				Matrix: []Setting{{"env.DB_POOL_SIZE", "60", "60"}, {"env.JAVA_OPTS", "-XX:+UseParallelGC", "parallel"},
					{"memory", "1G", "1g"}, {"instances", "1", "i1"}}}
			if !reflect.DeepEqual(v, wantV) {
				t.Errorf("got  %+v\nwant %+v", v, wantV)
			}
			if v.Listed() != "pool" || s.Variants[0].Listed() != "plain" || s.Variants[0].MatrixSuffix() != "" {
				t.Errorf("Listed %q %q, suffix %q", v.Listed(), s.Variants[0].Listed(), s.Variants[0].MatrixSuffix())
			}
			// Each variant has its own env: changing one leaves the others.
			s.Variants[1].Env["LOG"] = "x"
			if s.Variants[2].Env["LOG"] != "quiet" {
				t.Error("matrix variants share their env map")
			}
			if e := s.Errorf(v.Field+".manifest", "x"); e.Line != 9 {
				t.Errorf("Errorf of a matrix variant's manifest at line %d, want 9", e.Line)
			}
		}},
		{"landscape, manifests resolved against the base dir", `version: 1
name: cf
landscape:
  org: o
  apps: {space: s}
  generators: {space: g, isolation_segment: seg}
  create_missing: true
results_db: {service_instance: db}
variants:
  - name: rel
    manifest: ../m/app.yml
    app: app
    env: {POOL_SIZE: 30, DEBUG: true, RATIO: 0.5, HEX: 0x10, NAME: x, EMPTY: ""}
  - name: abs
    manifest: /abs/app.yml
workload: {model: closed, requests: [{name: r, path: /}]}
ramp: {max: 2, hold: 1s}
`, func(t *testing.T, s *Spec) {
			wantL := &Landscape{Org: "o", Apps: SpaceRef{Space: "s"}, Generators: SpaceRef{Space: "g", IsolationSegment: "seg"}, CreateMissing: true}
			if !reflect.DeepEqual(s.Landscape, wantL) {
				t.Errorf("landscape = %+v", s.Landscape)
			}
			if *s.ResultsDB != (ResultsDB{ServiceInstance: "db", Relay: RelayAuto}) {
				t.Errorf("results_db = %+v", s.ResultsDB)
			}
			if got := s.Variant("rel").Manifest; got != filepath.Join("base", "dir", "..", "m", "app.yml") {
				t.Errorf("relative manifest = %q", got)
			}
			if got := s.Variant("abs").Manifest; got != "/abs/app.yml" {
				t.Errorf("absolute manifest = %q", got)
			}
			wantEnv := map[string]string{"POOL_SIZE": "30", "DEBUG": "true", "RATIO": "0.5", "HEX": "0x10", "NAME": "x", "EMPTY": ""}
			if !reflect.DeepEqual(s.Variant("rel").Env, wantEnv) {
				t.Errorf("env = %v", s.Variant("rel").Env)
			}
		}},
		{"aliases and merge keys", `version: 1
name: aliases
variants:
  - name: a
    url: http://127.0.0.1:18080
  - &b
    name: b
    url: http://127.0.0.1:18081
workload:
  model: closed
  requests:
    - &get {name: list, path: /ads, headers: &h {Accept: application/json}}
    - <<: *get
      name: one
      path: /ads/1
    - {name: post, method: POST, path: /ads, headers: *h, body: x}
ramp: {max: 2, hold: &d 2s, stop: {p99_above: *d}}
`, func(t *testing.T, s *Spec) {
			r := s.Workload.Requests
			if len(r) != 3 || r[1].Name != "one" || r[1].Path != "/ads/1" || r[1].Headers["Accept"] != "application/json" ||
				r[2].Headers["Accept"] != "application/json" || s.Ramp.Stop.P99Above != 2*time.Second {
				t.Errorf("requests = %+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("spec.yml", []byte(tc.yaml), filepath.Join("base", "dir"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkInvariants(t, s)
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// TestParseTick: the open loop's tick is a duration from 100µs to 10ms, and only an
// open loop has one (a closed loop has no schedule to tick on); a spec that gives it
// otherwise is refused, naming its line and field.
func TestParseTick(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ model, tick, want string }{
		{"open", "10ms", ""},
		{"open", "99us", "spec.yml:9:3: workload.tick: must be at least 100µs, got 99us"},
		{"open", "0s", "spec.yml:9:3: workload.tick: must be at least 100µs, got 0s"},
		{"open", "10.5ms", "spec.yml:9:3: workload.tick: must be at most 10ms, got 10.5ms"},
		{"open", "1", `spec.yml:9:3: workload.tick: must be a duration with a unit, like "30s", "1m30s" or "250ms"; got the bare number 1`},
		{"open", "fast", `spec.yml:9:3: workload.tick: must be a duration like "30s", "1m30s" or "250ms", got "fast"`},
		{"closed", "1ms", "spec.yml:9:3: workload.tick: only valid with model open"},
		{"count", "1ms", "spec.yml:9:3: workload.tick: only valid with model open"},
	} {
		t.Run(c.model+" "+c.tick, func(t *testing.T) {
			t.Parallel()
			second := map[string]string{"open": "rate: 100", "closed": "users: 2", "count": "requests_per_instance: 5"}[c.model]
			w := "workload:\n  model: " + c.model + "\n  " + second + "\n  tick: " + c.tick + "\n  requests: [{name: r, path: /}]\n"
			s, err := Parse("spec.yml", []byte(withWorkload(w)), "")
			if c.want == "" {
				if err != nil || s.Workload.Tick != 10*time.Millisecond {
					t.Fatalf("Parse: %v, %+v", err, s)
				}
				return
			}
			if err == nil || err.Error() != c.want {
				t.Fatalf("Parse: %v\nwant %s", err, c.want)
			}
		})
	}
}

func TestParseEveryOptionalSection(t *testing.T) {
	t.Parallel()
	s, err := Parse("spec.yml", []byte(strings.Replace(minimal, "  max: 2\n", "", 1)+`  start: 5
  step: 0
  max: 5
  warmup: 999ms
  stop: {p99_above: 500ms, error_rate_above: 1, plateau: 0.03}
checks: {colocation: off, generator_saturation: off, plateau: {level: warn, served_below: 0.5, app_cpu_below: 2}, stall: {longest: 250ms},
  contention: {wait_share: 0.6, waited_cores: 1.5, cpu_share: 0.7}, neighbours: {cpu_above: 0.25, except: [stub-fast, Upstream_1]}}
cleanup: delete
collectors:
  container_metrics: {interval: 1s}
  router_logs: {source: elasticsearch, url: "https://es:9200", max_documents: 50000, max_requests_per_second: 2.5,
    fields: {response_time_ms: latency_ms, response_time_sec: "-"}, raw: true, delay: 5s}
  app_timings: {enabled: true, path: /t}
export: {dir: out, tables: [steps, samples]}
`), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Ramp{Start: 5, Step: 0, Max: 5, Hold: time.Second, Warmup: 999 * time.Millisecond,
		Stop: StopConditions{P99Above: 500 * time.Millisecond, ErrorRateAbove: 1, Plateau: 0.03}}
	if !reflect.DeepEqual(s.Ramp, want) {
		t.Errorf("ramp = %+v, want %+v", s.Ramp, want)
	}
	wantChecks := DefaultChecks()
	wantChecks.Colocation, wantChecks.GeneratorSaturation.Level = CheckOff, CheckOff
	wantChecks.Plateau.ServedBelow, wantChecks.Plateau.AppCPUBelow = 0.5, 2
	wantChecks.Stall.Longest = 250 * time.Millisecond
	wantChecks.Contention.WaitShare, wantChecks.Contention.WaitedCores, wantChecks.Contention.CPUShare = 0.6, 1.5, 0.7
	wantChecks.Neighbours.CPUAbove, wantChecks.Neighbours.Except = 0.25, []string{"stub-fast", "Upstream_1"}
	if !reflect.DeepEqual(s.Checks, wantChecks) {
		t.Errorf("checks = %+v, want %+v", s.Checks, wantChecks)
	}
	wantC := Collectors{
		ContainerMetrics: ContainerMetrics{Interval: time.Second},
		RouterLogs: &RouterLogs{Source: SourceElasticsearch, URL: "https://es:9200", Index: "logs-app-*", MaxDocuments: 50000, MaxRequestsPerSecond: 2.5,
			Fields: map[string]string{"response_time_ms": "latency_ms", "response_time_sec": "-"}, Raw: true, Delay: 5 * time.Second},
		AppTimings: AppTimings{Enabled: true, Path: "/t"},
	}
	if !reflect.DeepEqual(s.Collectors, wantC) {
		t.Errorf("collectors = %+v %+v", s.Collectors, s.Collectors.RouterLogs)
	}
	if s.Cleanup != CleanupDelete {
		t.Errorf("cleanup = %q, want delete", s.Cleanup)
	}
	if !reflect.DeepEqual(s.Export, Export{Dir: "out", Tables: []string{TableSteps, TableSamples}}) {
		t.Errorf("export = %+v", s.Export)
	}
}

func TestParseRouterLogsFile(t *testing.T) {
	t.Parallel()
	s, err := Parse("spec.yml", []byte(minimal+"collectors:\n  router_logs: {source: file, path: logs/router.log}\n"), "base")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &RouterLogs{Source: SourceFile, Path: filepath.Join("base", "logs", "router.log"), Delay: 30 * time.Second}
	if !reflect.DeepEqual(s.Collectors.RouterLogs, want) {
		t.Errorf("router_logs = %+v, want %+v", s.Collectors.RouterLogs, want)
	}
}

// TestEveryPathIsRelativeToTheSpec: a manifest, the router-log file and export.dir
// written relative are taken from the spec file's directory, not the working
// directory; absolute ones stay; without export.dir the export goes to
// DefaultExportDir in the working directory.
func TestEveryPathIsRelativeToTheSpec(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "specs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	landscape := "landscape: {org: o, apps: {space: a}, generators: {space: g}}\nresults_db: {service_instance: r}\n"
	text := strings.Replace(minimal, "    url: http://127.0.0.1:18080\n", "    manifest: ../manifests/app.yml\n", 1) + landscape +
		"collectors:\n  router_logs: {source: file, path: logs/access.log}\n"
	for _, tc := range []struct{ name, export, wantDir string }{
		{"relative", "export: {dir: ../results}\n", filepath.Join(dir, "..", "results")},
		{"absolute", "export: {dir: /srv/results}\n", "/srv/results"},
		{"absent", "", DefaultExportDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".yml")
			if err := os.WriteFile(file, []byte(text+tc.export), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Load(file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if s.Export.Dir != tc.wantDir {
				t.Errorf("export.dir = %q, want %q", s.Export.Dir, tc.wantDir)
			}
			if want := filepath.Join(dir, "..", "manifests", "app.yml"); s.Variants[0].Manifest != want {
				t.Errorf("manifest = %q, want %q", s.Variants[0].Manifest, want)
			}
			if want := filepath.Join(dir, "logs", "access.log"); s.Collectors.RouterLogs.Path != want {
				t.Errorf("router_logs.path = %q, want %q", s.Collectors.RouterLogs.Path, want)
			}
		})
	}
}

func TestParseRouterLogsDrain(t *testing.T) {
	t.Parallel()
	text := strings.Replace(minimal, "    url: http://127.0.0.1:18080\n", "    manifest: app.yml\n", 1) +
		"landscape: {org: o, apps: {space: a}, generators: {space: g}}\nresults_db: {service_instance: r}\n" +
		"collectors:\n  router_logs: {source: drain, delay: 10s}\n"
	s, err := Parse("spec.yml", []byte(text), "base")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &RouterLogs{Source: SourceDrain, Delay: 10 * time.Second}
	if !reflect.DeepEqual(s.Collectors.RouterLogs, want) {
		t.Errorf("router_logs = %+v, want %+v", s.Collectors.RouterLogs, want)
	}
}

func TestRampSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ramp Ramp
		want []int
	}{
		{Ramp{Start: 1, Step: 4, Max: 13}, []int{1, 5, 9, 13}},
		{Ramp{Start: 1, Step: 4, Max: 10}, []int{1, 5, 9}},
		{Ramp{Start: 4, Step: 4, Max: 40}, []int{4, 8, 12, 16, 20, 24, 28, 32, 36, 40}},
		{Ramp{Start: 3, Step: 1, Max: 3}, []int{3}},
		{Ramp{Start: 3, Step: 0, Max: 3}, []int{3}},
		{Ramp{Start: 3, Step: 1, Max: 2}, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%+v", tc.ramp), func(t *testing.T) {
			if got := tc.ramp.Steps(); !slices.Equal(got, tc.want) {
				t.Errorf("Steps() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLegsInterleaveRepeats(t *testing.T) {
	t.Parallel()
	s := &Spec{Repeat: 3, Variants: []Variant{{Name: "java"}, {Name: "node"}}}
	var got []string
	for _, l := range s.Legs() {
		if want := fmt.Sprintf("%s#%d", l.Variant.Name, l.Repeat); l.Name != want {
			t.Errorf("leg %+v is named %q, want %q", l, l.Name, want)
		}
		got = append(got, l.Name)
	}
	if want := []string{"java#1", "node#1", "java#2", "node#2", "java#3", "node#3"}; !slices.Equal(got, want) {
		t.Errorf("Legs() = %v, want %v (A B A B: a drift hits every variant alike)", got, want)
	}
	once := &Spec{Repeat: 1, Variants: []Variant{{Name: "java"}}}
	if l := once.Legs(); len(l) != 1 || l[0].Name != "java" || l[0].Repeat != 1 {
		t.Errorf("Legs() without repeats = %+v, want java once, named as listed", l)
	}
}

func TestSpecVariant(t *testing.T) {
	t.Parallel()
	s := &Spec{Variants: []Variant{{Name: "java"}, {Name: "node"}}}
	if v := s.Variant("node"); v != &s.Variants[1] {
		t.Errorf("Variant(node) = %p, want %p", v, &s.Variants[1])
	}
	if v := s.Variant("go"); v != nil {
		t.Errorf("Variant(go) = %+v, want nil", v)
	}
}

func TestErrorsAs(t *testing.T) {
	t.Parallel()
	_, err := Parse("x.yml", []byte("version: 1\nname: X\n"), "")
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("errors.As(%T) failed", err)
	}
	if len(errs) != 4 || strings.Count(err.Error(), "\n") != len(errs)-1 {
		t.Errorf("got %d errors:\n%v", len(errs), err)
	}
	if e := errs[0]; e.File != "x.yml" || e.Line != 1 || e.Column != 1 || e.Path != "variants" || e.Msg != "is required" {
		t.Errorf("first error = %+v", e)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yml"))
	var errs Errors
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &errs) {
		t.Errorf("Load(missing) = %v, want a wrapped fs.ErrNotExist", err)
	}
}

// TestAliasBomb checks that nested aliases and merge keys cannot make a small file
// expensive.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"merged mappings": "  - &a0 {name: a, url: \"http://x\"}\n" +
			"  - &a%[1]d {<<: [*a%[2]d, *a%[2]d, *a%[2]d]}\n",
		"merged empty mappings": "  - &a0 {}\n" +
			"  - &a%[1]d {<<: [*a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d]}\n",
		"lists in merges": "  - {<<: &a0 [1]}\n" +
			"  - {<<: &a%[1]d [*a%[2]d, *a%[2]d, *a%[2]d, *a%[2]d]}\n",
	}
	for name, tmpl := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first, rest, _ := strings.Cut(tmpl, "\n")
			var b strings.Builder
			b.WriteString("version: 1\nname: bomb\nvariants:\n" + first + "\n")
			for i := 1; i < 40; i++ {
				fmt.Fprintf(&b, rest, i, i-1)
			}
			start := time.Now()
			_, err := Parse("bomb.yml", []byte(b.String()), "")
			if err == nil || len(err.Error()) > 1<<20 {
				t.Errorf("Parse(bomb) = %.200v, want a short error", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Parse(bomb) took %s", d)
			}
		})
	}
}

func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/*.yml")
	nested, err2 := filepath.Glob("../examples/*/*.yml")
	files = append(files, nested...)
	if err != nil || err2 != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v %v", files, err, err2)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			checkInvariants(t, s)
		})
	}
}

// TestParseBad compares the errors for each testdata/bad/*.yml with its .golden file;
// go test -run TestParseBad -update rewrites them.
func TestParseBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yml"), func(t *testing.T) {
			s, err := Load(f)
			var errs Errors
			if !errors.As(err, &errs) || s != nil {
				t.Fatalf("Load = %v, %v; want nil and Errors", s, err)
			}
			checkErrors(t, f, errs)
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"../examples/*.yml", "testdata/bad/*.yml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(minimal))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yml", data, "base")
		if err == nil {
			checkInvariants(t, s)
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 || s != nil {
			t.Fatalf("Parse = %v, %v; want nil and a non-empty Errors", s, err)
		}
		checkErrors(t, "fuzz.yml", errs)
	})
}

// checkErrors asserts what every error list promises: positions, messages, one line
// each, sorted by position.
func checkErrors(t *testing.T, file string, errs Errors) {
	t.Helper()
	for i, e := range errs {
		if e.File != file || e.Line < 1 || e.Column < 0 || e.Msg == "" || strings.ContainsAny(e.Error(), "\r\n") {
			t.Errorf("bad error %+v", e)
		}
		if i > 0 && (e.Line < errs[i-1].Line || e.Line == errs[i-1].Line && e.Column < errs[i-1].Column) {
			t.Errorf("errors not sorted: %q before %q", errs[i-1], e)
		}
	}
}

// checkInvariants asserts what a successfully parsed spec promises its callers.
func checkInvariants(t *testing.T, s *Spec) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("invariant broken: "+format+"\nspec: %+v", append(args, s)...)
	}
	if s.Version != 1 || !namePattern.MatchString(s.Name) {
		fail("version %d, name %q", s.Version, s.Name)
	}
	if n := len(s.Variants); n < 1 || n > maxVariants {
		fail("%d variants", n)
	}
	if s.Cleanup != CleanupKeep && s.Cleanup != CleanupStop && s.Cleanup != CleanupDelete {
		fail("cleanup %q", s.Cleanup)
	}
	names := map[string]bool{}
	for _, v := range s.Variants {
		if names[v.Name] || !namePattern.MatchString(v.Name) || (v.Manifest == "") == (v.URL == "") {
			fail("variant %+v", v)
		}
		names[v.Name] = true
		if v.Manifest != "" && s.Landscape == nil {
			fail("manifest without landscape")
		}
	}
	w := s.Workload
	switch {
	case w.Model == ModelClosed || w.Model == ModelCount:
		if w.Users < 1 || w.Users > maxUsers || w.Rate != 0 || w.Tick != 0 || (w.Model == ModelCount) != (w.RequestsPerInstance > 0) {
			fail("workload %+v", w)
		}
	case w.Model == ModelOpen:
		if w.Users != 0 || !(w.Rate > 0) && s.Ramp.Kind() != LevelRates || w.RatePer == "" || w.ThinkTime != 0 || w.Tick < minTick || w.Tick > maxTick {
			fail("workload %+v", w)
		}
	default:
		fail("model %q", w.Model)
	}
	if w.Timeout <= 0 || w.ThinkTime < 0 || len(w.Requests) == 0 {
		fail("workload %+v", w)
	}
	for _, r := range w.Requests {
		if !slices.Contains(methods, r.Method) || !strings.HasPrefix(r.Path, "/") || r.Weight < 1 || r.Weight > maxWeight ||
			(r.Body != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			fail("request %+v", r)
		}
		for k, v := range r.Headers {
			if checkHeader(k, v) != "" {
				fail("header %q", k)
			}
		}
	}
	r := s.Ramp
	if steps := r.Steps(); r.Kind() == LevelGenerators &&
		(len(steps) < 1 || len(steps) > maxSteps || steps[0] != r.Start || steps[len(steps)-1] > r.Max || r.Max > maxInstances) {
		fail("ramp %+v gives steps %v", r, steps)
	}
	levels := s.Levels()
	if len(levels) < 1 || len(levels) > maxSteps {
		fail("ramp %+v gives %d levels", r, len(levels))
	}
	for _, l := range levels {
		if l.Generators < 1 || l.Generators > maxInstances || (w.Model == ModelOpen) != (l.Users == 0) || l.Users > maxUsers ||
			(l.Rate > 0) != (r.Kind() == LevelRates) || (l.AppInstances > 0) != (r.Kind() == LevelAppInstances) {
			fail("ramp %+v gives level %+v", r, l)
		}
	}
	if r.Hold < time.Second || r.Warmup < 0 || r.Warmup >= r.Hold {
		fail("ramp %+v", r)
	}
	if s.Checks.Colocation == "" || s.Checks.GeneratorSaturation.Level == "" || s.Checks.Plateau.Level == "" ||
		s.Collectors.ContainerMetrics.Interval < time.Second || !strings.HasPrefix(s.Collectors.AppTimings.Path, "/") {
		fail("checks %+v, collectors %+v", s.Checks, s.Collectors)
	}
	if rl := s.Collectors.RouterLogs; rl != nil && (rl.Source == SourceElasticsearch) == (rl.URL == "" || rl.Index == "") {
		fail("router_logs %+v", rl)
	}
	if s.Export.Dir == "" || len(s.Export.Tables) == 0 {
		fail("export %+v", s.Export)
	}
	for i, tb := range s.Export.Tables {
		if !slices.Contains(AllTables, tb) || slices.Contains(s.Export.Tables[:i], tb) {
			fail("tables %v", s.Export.Tables)
		}
	}
}

// TestUsesRelay: always and never say so; auto pushes a relay from spec.RelayFrom
// generator instances at the ramp's peak; no results_db, no relay.
func TestUsesRelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		relay Relay
		peak  int
		want  bool
	}{
		{RelayAuto, RelayFrom - 1, false}, {RelayAuto, RelayFrom, true},
		{RelayAlways, 1, true}, {RelayNever, 1000, false},
	} {
		s := &Spec{ResultsDB: &ResultsDB{ServiceInstance: "db", Relay: tc.relay}, Ramp: Ramp{Start: 1, Step: 1, Max: tc.peak, Hold: time.Second}}
		if got := s.UsesRelay(); got != tc.want || s.PeakGenerators() != tc.peak {
			t.Errorf("relay %s, peak %d (%d): uses a relay %v, want %v", tc.relay, tc.peak, s.PeakGenerators(), got, tc.want)
		}
	}
	if (&Spec{}).UsesRelay() {
		t.Error("a spec without results_db uses a relay")
	}
}
