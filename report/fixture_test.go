package report

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cf-benchmark/cf-benchmark/internal/sample"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// fixtureSpec is the spec text a fixture run is stored with: its slo block is what the
// capacities are judged against.
const fixtureSpec = `version: 1
name: java-vs-node-slo
variants:
  - {name: java, url: "http://127.0.0.1:18080"}
  - {name: node, url: "http://127.0.0.1:18081"}
workload:
  model: closed
  users: 2
  requests: [{name: list, path: /ads}]
ramp: {start: 2, step: 2, max: 8, hold: 10s, warmup: 2s}
slo:
  latency: mean
  max_latency: 8ms
  max_error_rate: 0.01
  max_app_cpu_cores: 1
`

// fixtureStep is one step's stored figures in a fixture run.
type fixtureStep struct {
	throughput, meanMS, appCPU float64
	errors                     int64
}

var fixtureSteps = map[string][]fixtureStep{
	// java crosses the mean bound at step 4; node never crosses the SLO.
	"java": {{400, 2.5, 0.45, 0}, {780, 2.9, 0.7, 2}, {1100, 6.5, 0.95, 3}, {1180, 10.4, 0.98, 40}},
	"node": {{300, 1.8, 0.35, 0}, {590, 2.0, 0.62, 0}, {870, 2.4, 0.9, 1}, {1140, 3.1, 0.99, 2}},
}

// fixture is a run as the engine leaves it: rows in every table the report reads.
type fixture struct {
	id      string
	epoch   time.Time
	tag     uint32
	speed   float64 // throughput factor against fixtureSteps (latency divides by it)
	perStep int     // samples per step and variant
	noSLO   bool
	// bare leaves out everything but steps, samples and step_metrics (and those of the
	// last step of node), as a run with no collectors that was cut short stores.
	bare bool
	// legacy stores no step_series and step_router_metrics, as a run recorded before
	// schema version 8 did: the report computes them from the samples.
	legacy bool
}

const stepSeconds = 10

// seed stores the fixture run with the resultsdb API where it has one, and INSERTs for
// the rest (fixed ids, times and values, so golden files are stable).
func (f fixture) seed(t testing.TB, store *resultsdb.Store) {
	t.Helper()
	ctx := context.Background()
	db := store.Pool()
	specText := fixtureSpec
	if f.noSLO || f.bare {
		specText = specText[:len(specText)-len("slo:\n  latency: mean\n  max_latency: 8ms\n  max_error_rate: 0.01\n  max_app_cpu_cores: 1\n")]
	}
	end := f.epoch.Add(8*stepSeconds*time.Second + 5*time.Second)
	execSQL(t, db, `INSERT INTO runs (id, name, spec_file, spec, trace_tag, status, epoch, started_at, ended_at)
		VALUES ($1, 'java-vs-node-slo', 'examples/java-vs-node-slo.yml', $2, $3, 'completed', $4, $4, $5)`,
		f.id, specText, int64(f.tag), f.epoch, end)
	for vi, variant := range []string{"java", "node"} {
		app, gen := "bulletin-"+variant, "java-vs-node-slo-gen-"+variant
		workload, _ := json.Marshal(map[string]any{"model": "closed", "users": 2})
		if err := store.AddRunVariant(ctx, resultsdb.RunVariant{RunID: f.id, Variant: variant, GeneratorApp: gen, AppName: app,
			AppGUID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", vi), TargetURL: "http://127.0.0.1:18080", Workload: workload}); err != nil {
			t.Fatal(err)
		}
		worker, err := store.RegisterWorker(ctx, resultsdb.Worker{RunID: f.id, Variant: variant, AppName: gen, InstanceIndex: 0, Host: "10.0.1.1"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := store.NewSampleWriter(worker, resultsdb.WriterOptions{BatchSize: 1 << 16, MaxBuffered: 8*f.perStep + 1})
		if err != nil {
			t.Fatal(err)
		}
		base := time.Duration(vi*4*stepSeconds) * time.Second
		var router [][]any
		var timings [][]any
		seq := uint32(0)
		for si, fs := range fixtureSteps[variant] {
			start := f.epoch.Add(base + time.Duration(si*stepSeconds)*time.Second)
			st := resultsdb.Step{RunID: f.id, Variant: variant, Index: si, Instances: 2 * (si + 1), Users: 2, Started: start,
				WarmupUntil: start.Add(2 * time.Second), Ends: start.Add(stepSeconds * time.Second)}
			if err := store.StartStep(ctx, st); err != nil {
				t.Fatal(err)
			}
			stop := ""
			if variant == "java" && si == 3 {
				stop = "mean 10.4ms over 8.000ms"
			}
			if err := store.EndStep(ctx, f.id, variant, si, st.Ends, stop); err != nil {
				t.Fatal(err)
			}
			meanUS := fs.meanMS * 1000 / f.speed
			thr := fs.throughput * f.speed
			// Samples spread evenly over the step, latencies around the step's mean.
			for j := range f.perStep {
				seq++
				off := float64(j) / float64(f.perStep) * stepSeconds
				lat := int32(meanUS*0.5 + float64((j*7919)%1000)/1000*meanUS)
				s := sample.Sample{Seq: seq, IntendedUS: int64((base.Seconds()+float64(si*stepSeconds)+off)*1e6) + 1,
					LatencyUS: lat, StartDelayUS: int32(20 + j%30), Bytes: 2048, Status: 200, Step: uint8(si)}
				if off < 2 {
					s.Flags = sample.FlagWarmup
				}
				if fs.errors > 0 && j%100 == 0 {
					s.Status = 503
				}
				w.Add(s)
				if variant == "java" && j%10 == 0 && !f.bare {
					tid := sample.NewTraceID(f.tag, uint32(worker), uint64(seq))
					resp := int64(lat) - 300
					router = append(router, []any{f.id, [16]byte(tid), f.epoch.Add(time.Duration(s.IntendedUS) * time.Microsecond), app,
						0, int16(200), resp, int64(120), int32(worker), int64(seq)})
					pool := int64(lat) / 10 * int64(si)
					timings = append(timings, []any{f.id, [16]byte(tid), app, 0, f.epoch.Add(time.Duration(s.IntendedUS) * time.Microsecond),
						pool, int64(900), resp - 120 - 200, int32(worker), int64(seq)})
				}
			}
			byClass := map[string]int64{}
			if fs.errors > 0 {
				byClass["http_503"] = fs.errors - fs.errors/3
				byClass["timeout"] = fs.errors / 3
			}
			classes, _ := json.Marshal(byClass)
			if f.bare && variant == "node" && si == 3 {
				continue
			}
			count := int64(thr * 8)
			execSQL(t, db, `INSERT INTO step_metrics (run_id, variant, step, seconds, count, errors, errors_by_class, bytes, throughput,
				mean_us, p50_us, p90_us, p99_us, p999_us, min_us, max_us, instances, instances_seen, users, offered_rate, missed,
				send_lag_mean_us, send_lag_p99_us, stalled_ms, omitted, app_timed, computed_at)
				VALUES ($1,$2,$3, 8, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, 2, NULL, 0, 35, 48, 0, 0, 0, $17)`,
				f.id, variant, si, count, fs.errors, classes, count*2048, thr, meanUS,
				int64(meanUS*0.95), int64(meanUS*1.4), int64(meanUS*2.2), int64(meanUS*3.1), int64(meanUS*0.5), int64(meanUS*4.5),
				2*(si+1), st.Ends)
			if f.bare {
				continue
			}
			execSQL(t, db, `INSERT INTO step_app_metrics (run_id, variant, step, app_name, role, instances, cpu_source, cpu_points, cpu_covered,
				cpu_mean_cores, cpu_max_cores, cpu_total_cores, mem_mean_bytes, mem_max_bytes, mem_quota_bytes, cells, cpu_available_cores)
				VALUES ($1,$2,$3,$4,'app', 1, 'counters', 2, 1, $5, $6, $5, $7, $8, $9, 1, 2),
				       ($1,$2,$3,$10,'generator', $11, 'stats', 8, 0.75, $12, $13, $14, 25e6, 26000000, 268435456, NULL, NULL)`,
				f.id, variant, si, app, fs.appCPU, fs.appCPU*1.1, float64(300+40*si)*1e6, int64(310+40*si)*1e6, int64(1024)<<20,
				gen, 2*(si+1), 0.2+0.05*float64(si), 0.3+0.05*float64(si), (0.2+0.05*float64(si))*float64(2*(si+1)))
			execSQL(t, db, `INSERT INTO app_timing_flushes (run_id, variant, step, app_name, instance_index, at, rows_received, stored, foreign_rows, dropped)
				VALUES ($1,$2,$3,$4,0,$5,$6,$6,0,$7)`, f.id, variant, si, app, st.Ends, f.perStep/10, map[bool]int{true: 50}[si == 3 && variant == "java"])
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// The series of each step whose metrics are stored, as ComputeStepMetrics does.
		for si := range fixtureSteps[variant] {
			if !f.legacy && !(f.bare && variant == "node" && si == 3) {
				if err := store.ComputeStepSeries(ctx, f.id, variant, si); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := db.CopyFrom(ctx, pgx.Identifier{"router_requests"}, []string{"run_id", "trace_id", "at", "app_name", "app_index", "status",
			"response_time_us", "gorouter_time_us", "worker_id", "seq"}, pgx.CopyFromRows(router)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CopyFrom(ctx, pgx.Identifier{"app_timings"}, []string{"run_id", "trace_id", "app_name", "instance_index", "at",
			"pool_wait_us", "query_us", "total_us", "worker_id", "seq"}, pgx.CopyFromRows(timings)); err != nil {
			t.Fatal(err)
		}
		if f.bare {
			continue
		}
		// Memory grows, then levels off; polled every 2 s over the whole run.
		var cms []resultsdb.ContainerMetric
		for k := range 43 {
			mem := int64(300e6+float64(vi)*-200e6) + int64(min(k, 20))*10e6
			cpu := 0.5
			quota := int64(1024) << 20
			cms = append(cms, resultsdb.ContainerMetric{RunID: f.id, At: f.epoch.Add(time.Duration(2*k) * time.Second), AppName: app,
				AppGUID: "guid-" + variant, ProcessType: "web", State: "RUNNING", CPU: &cpu, MemBytes: &mem, MemQuotaBytes: &quota, Host: "10.0.0.1"})
		}
		if err := store.InsertContainerMetrics(ctx, cms); err != nil {
			t.Fatal(err)
		}
	}
	if f.bare {
		return
	}
	execSQL(t, db, `INSERT INTO router_log_pulls (run_id, source, cursor, retrieved, stored) VALUES ($1, 'file:/tmp/access.log', '{}', 100, 100)`, f.id)
	if !f.legacy { // as engine.PullRouterLogs does after a pull
		if _, err := store.ComputeRouterMetrics(ctx, f.id); err != nil {
			t.Fatal(err)
		}
	}
	// Findings as the engine records them: check name and the figures its rule judged.
	for _, e := range []struct {
		at                            time.Duration
		variant                       string
		step                          int
		kind, level, check, msg, evid string
	}{
		{20 * time.Second, "node", 1, "check", "warn", "generator-cpu",
			"generator-cpu: generators at 85% of their CPU entitlement: the generator, not the app, may be the bottleneck",
			`{"generator_entitlement_share": 0.85, "send_lag_p99_ms": 0.048}`},
		{40 * time.Second, "java", 3, "check", "warn", "flat-throughput",
			"flat-throughput: throughput +7.3% on more load while the app's CPU is under 50% of its entitlement: the bottleneck is outside the app",
			`{"throughput_gain": 0.073, "app_entitlement_share": 0.45}`},
		{40 * time.Second, "java", 3, "stop", "info", "", "mean 10.4ms over 8.000ms", ""},
	} {
		var check, evid *string
		if e.check != "" {
			check, evid = &e.check, &e.evid
		}
		execSQL(t, db, `INSERT INTO run_events (run_id, at, variant, step, kind, level, message, check_name, evidence)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)`, f.id, f.epoch.Add(e.at), e.variant, e.step, e.kind, e.level, e.msg, check, evid)
	}
}

func execSQL(t testing.TB, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
}
