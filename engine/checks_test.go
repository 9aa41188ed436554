package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

func checkF64(v float64) *float64 { return &v }

// wantFinding fails unless f matches: nil when check is "", else that check at level
// with every part in its message.
func wantFinding(t *testing.T, f *Finding, check string, level spec.CheckLevel, parts ...string) {
	t.Helper()
	if check == "" {
		if f != nil {
			t.Fatalf("unexpected finding %+v", *f)
		}
		return
	}
	if f == nil {
		t.Fatalf("no finding, want %s at %s", check, level)
	}
	if f.Check != check || f.Level != level {
		t.Fatalf("finding %s at %s, want %s at %s", f.Check, f.Level, check, level)
	}
	for _, p := range parts {
		if !strings.Contains(f.Message, p) {
			t.Errorf("message %q lacks %q", f.Message, p)
		}
	}
}

func TestCheckColocation(t *testing.T) {
	t.Parallel()
	ih := func(app string, idx int, host string) resultsdb.InstanceHost {
		return resultsdb.InstanceHost{App: app, Index: idx, Host: host}
	}
	apps := []resultsdb.InstanceHost{ih("api", 0, "10.0.0.1"), ih("api", 1, "10.0.0.2"), ih("api", 2, "10.0.0.1"), ih("worker", 0, "10.0.0.5")}
	cases := []struct {
		name  string
		level spec.CheckLevel
		apps  []resultsdb.InstanceHost
		gens  []resultsdb.InstanceHost
		want  spec.CheckLevel // "" for no finding
		parts []string
	}{
		{"hosts apart", spec.CheckFail, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.3"), ih("gen", 1, "10.0.0.4")}, "", nil},
		{"one shared host at fail", spec.CheckFail, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.3"), ih("gen", 1, "10.0.0.1")},
			spec.CheckFail, []string{"share a host: 10.0.0.1 runs app api/0, api/2 and generator gen/1.", "Try: "}},
		{"every shared host is listed, sorted, at warn", spec.CheckWarn, apps,
			[]resultsdb.InstanceHost{ih("gen", 3, "10.0.0.5"), ih("gen", 1, "10.0.0.1"), ih("gen", 0, "10.0.0.1"), ih("gen", 2, "10.0.0.9")},
			spec.CheckWarn, []string{"share 2 hosts: 10.0.0.1 runs app api/0, api/2 and generator gen/0, gen/1; 10.0.0.5 runs app worker/0 and generator gen/3."}},
		{"off", spec.CheckOff, apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
		{"unset level is off", "", apps, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
		{"unknown hosts are no host", spec.CheckFail, []resultsdb.InstanceHost{ih("api", 0, "")}, []resultsdb.InstanceHost{ih("gen", 0, "")}, "", nil},
		{"no generators", spec.CheckFail, apps, nil, "", nil},
		{"no app instances", spec.CheckFail, nil, []resultsdb.InstanceHost{ih("gen", 0, "10.0.0.1")}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := CheckColocation(c.level, c.apps, c.gens)
			if c.want == "" {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, ColocationCheck, c.want, c.parts...)
		})
	}
}

// step is a closed-loop step with the figures the checks judge.
func step(users, instances int, rps float64, mean, lag time.Duration, apps ...resultsdb.AppStepMetrics) resultsdb.StepSummary {
	return resultsdb.StepSummary{Variant: "v", Step: 1, Instances: instances, InstancesSeen: instances, Users: users, Count: 1000,
		Throughput: rps, Mean: mean, P99: 3 * mean, SendLagMean: lag, SendLagP99: 3 * lag, Apps: apps}
}

// appCPU is one instance of an app using cores, on a cell of available cores (nil:
// unknown).
func appCPU(role string, cores float64, available *float64) resultsdb.AppStepMetrics {
	return onCells(role, 1, cores, 1, available)
}

// onCells is n instances of an app using cores each, on cells cells of available cores
// in all (nil: unknown).
func onCells(role string, n int, cores float64, cells int, available *float64) resultsdb.AppStepMetrics {
	a := resultsdb.AppStepMetrics{App: role + "-app", Role: role, Instances: n, CPUSource: resultsdb.CPUFromCounters, CPUPoints: 2 * n,
		CPUMeanCores: checkF64(cores), CPUMaxCores: checkF64(cores), CPUTotalCores: checkF64(cores * float64(n)), CPUAvailableCores: available}
	if available != nil {
		a.Cells = &cells
	}
	return a
}

func TestCheckGeneratorSaturation(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().GeneratorSaturation
	ms, us := time.Millisecond, time.Microsecond
	cases := []struct {
		name  string
		c     spec.GeneratorSaturation
		m     resultsdb.StepSummary
		want  bool
		parts []string
	}{
		// The java-vs-node demo: generators at a few % of a core, lag in microseconds.
		{"a clean closed loop", c, step(1, 4, 3000, ms, 20*us, appCPU(resultsdb.RoleGenerator, 0.08, checkF64(1))), false, nil},
		{"high CPU share of an unknown cell is no evidence", c, step(1, 4, 3000, ms, 20*us, appCPU(resultsdb.RoleGenerator, 3, nil)), false, nil},
		{"lag long but a small share of a slow target's latency", c, step(4, 1, 10, 100*ms, 2*ms), false, nil},
		{"lag a large share but too short to matter", c, step(4, 1, 10000, 200*us, 100*us), false, nil},
		{"lag long and a large share", c, step(4, 2, 3000, 2*ms, ms), true,
			[]string{"1.000ms late on average (p99 3.000ms)", "50% of the mean latency (2.000ms)", "with fewer users each"}},
		{"one user each: no advice to use fewer", c, step(1, 2, 3000, 2*ms, ms), true, []string{"or a generator cell with more CPU"}},
		{"busy on a known cell", c, step(1, 4, 3000, ms, 20*us, appCPU(resultsdb.RoleGenerator, 0.95, checkF64(1))), true,
			[]string{"busiest instance used 0.95 cores, its 1 instance(s) used 0.95 of the 1.00 cores of its cell (95%)"}},
		// Instances sharing a cell share its cores: four at 0.48 cores each fill a 2-core
		// cell, though each used only a quarter of it.
		{"four instances fill the cell they share", c, step(1, 4, 3000, ms, 20*us, onCells(resultsdb.RoleGenerator, 4, 0.48, 1, checkF64(2))), true,
			[]string{"its 4 instance(s) used 1.92 of the 2.00 cores of the 1 cell they shared (96%)"}},
		{"four instances on four cells", c, step(1, 4, 3000, ms, 20*us, onCells(resultsdb.RoleGenerator, 4, 0.48, 4, checkF64(4))), false, nil},
		// examples/confounders/saturation.yml: 2 in flight cannot carry the rate.
		{"an open loop short of requests in flight", c, func() resultsdb.StepSummary {
			s := step(0, 1, 45, 1890*ms, 1866*ms, appCPU(resultsdb.RoleGenerator, 0.01, nil))
			s.Open, s.Missed = true, 466
			return s
		}(), true, []string{"466 due sends never went out", "more requests in flight each (workload.max_in_flight)"}},
		{"off", spec.GeneratorSaturation{Level: spec.CheckOff}, step(4, 2, 3000, 2*ms, ms), false, nil},
		{"nothing sent", c, resultsdb.StepSummary{SendLagMean: time.Second}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := CheckGeneratorSaturation(tc.c, tc.m, spec.DefaultTick)
			if !tc.want {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, GeneratorSaturationCheck, spec.CheckWarn, tc.parts...)
			if f.Evidence["send_lag_mean_ms"] == nil {
				t.Errorf("evidence %v lacks the send lag", f.Evidence)
			}
		})
	}
}

// TestCheckGeneratorSaturationBeyondTheTick: on a 1 ms tick, 20,000 req/s per instance
// go out on ticks 1 ms apart, 0.475 ms after their slot on average by design; a step
// whose mean send lag that explains is clean, one lagging well beyond it is not, and the
// finding says what the tick accounts for.
func TestCheckGeneratorSaturationBeyondTheTick(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().GeneratorSaturation
	us := time.Microsecond
	open := func(instances int, lag time.Duration) resultsdb.StepSummary {
		rate := 20000 * float64(instances)
		s := step(0, instances, rate, 1500*us, lag)
		s.Open, s.OfferedRate = true, &rate
		return s
	}
	cases := []struct {
		name  string
		m     resultsdb.StepSummary
		tick  time.Duration
		want  bool
		parts []string
	}{
		// 0.6 ms is 40% of the 1.5 ms latency and over the 0.5 ms floor: saturation on
		// the default tick, the tick's own 0.475 ms plus noise on a 1 ms one.
		{"the grid's lag on a 1 ms tick", open(1, 600*us), time.Millisecond, false, nil},
		{"the same on two instances", open(2, 600*us), time.Millisecond, false, nil},
		{"the same lag on the default tick", open(1, 600*us), spec.DefaultTick, true, []string{"0.600ms late on average",
			"0.525ms beyond the 0.075ms expected from the tick (workload.tick 200µs), 35% of the mean latency (1.500ms)"}},
		{"lag well beyond a 1 ms tick", open(1, 1200*us), time.Millisecond, true, []string{"1.200ms late on average",
			"0.725ms beyond the 0.475ms expected from the tick (workload.tick 1ms), 48% of the mean latency (1.500ms)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := CheckGeneratorSaturation(c, tc.m, tc.tick)
			if !tc.want {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, GeneratorSaturationCheck, spec.CheckWarn, tc.parts...)
			if got, want := f.Evidence["send_lag_tick_ms"], ms(loadgen.TickLag(20000, tc.tick)); got != want {
				t.Errorf("evidence send_lag_tick_ms %v, want %v", got, want)
			}
		})
	}
}

func TestCheckPlateau(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().Plateau
	ms := time.Millisecond
	app := func(cores float64) resultsdb.AppStepMetrics { return appCPU(resultsdb.RoleApp, cores, nil) }
	prev := step(1, 4, 1000, ms, 0, app(0.3))
	cases := []struct {
		name  string
		prev  resultsdb.StepSummary
		cur   resultsdb.StepSummary
		want  bool
		parts []string
	}{
		// The case: one more generator, throughput -3.8 %, app at 32 % of a core.
		{"flat with an idle app", prev, step(1, 5, 962, ms, 0, app(0.32)), true,
			[]string{"load grew +25% (4 to 5 users)", "throughput only -3.8% (1000.0 to 962.0 req/s)", "used 0.32 cores per instance"}},
		// The study's proxy plateau: ~400 req/s, app under 20 % of a core.
		{"a proxy plateau", step(1, 8, 400, 20*ms, 0, app(0.18)), step(1, 12, 405, 30*ms, 0, app(0.19)), true, []string{"+50%"}},
		{"scaling", prev, step(1, 5, 1240, ms, 0, app(0.4)), false, nil},
		{"flat with a busy app is the app's own limit", prev, step(1, 5, 1000, ms, 0, app(0.98)), false, nil},
		{"app CPU unknown", prev, step(1, 5, 900, ms, 0), false, nil},
		{"load did not grow", prev, step(1, 4, 500, ms, 0, app(0.1)), false, nil},
		// The study's Java step: 2 instances at 0.45 cores each on the one core they
		// share have none to spare; on a core each they would.
		{"two instances fill the one core they share", prev, step(1, 5, 962, ms, 0, onCells(resultsdb.RoleApp, 2, 0.45, 1, checkF64(1))), false, nil},
		{"two instances on two cells", prev, step(1, 5, 962, ms, 0, onCells(resultsdb.RoleApp, 2, 0.45, 2, checkF64(2))), true,
			[]string{"used 0.45 cores per instance (under 0.5)"}},
		{"two instances on cells of unknown cores", prev, step(1, 5, 962, ms, 0, onCells(resultsdb.RoleApp, 2, 0.45, 1, nil)), true,
			[]string{"used 0.45 cores per instance (under 0.5) (the cores of the cells its 2 instances ran on are unknown: judged as if each had a core)"}},
		{"three instances idle on the core they share", prev, step(1, 5, 962, ms, 0, onCells(resultsdb.RoleApp, 3, 0.1, 1, checkF64(1))), true,
			[]string{"used 0.10 cores per instance, its 3 instances used 0.30 of the 1.00 cores of the 1 cell they shared (30%) (under 50%)"}},
		{"a manual scale counts in the load", prev, func() resultsdb.StepSummary {
			s := step(1, 4, 1001, ms, 0, app(0.2))
			s.InstancesSeen = 8
			return s
		}(), true, []string{"(4 to 8 users)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := CheckPlateau(c, tc.prev, tc.cur)
			if !tc.want {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, PlateauCheck, spec.CheckWarn, tc.parts...)
		})
	}
	t.Run("open loop compares offered rates", func(t *testing.T) {
		r1, r2 := 350.0, 700.0
		a, b := step(0, 1, 350, ms, 0, app(0.1)), step(0, 1, 360, ms, 0, app(0.1))
		a.Open, a.OfferedRate, b.Open, b.OfferedRate = true, &r1, true, &r2
		wantFinding(t, CheckPlateau(c, a, b), PlateauCheck, spec.CheckWarn, "(350 to 700 req/s offered)")
	})
}

func TestCheckPoolExhaustion(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().PoolExhaustion
	d := func(v time.Duration) *time.Duration { return &v }
	n := func(v int) *int { return &v }
	m := func(total, wait time.Duration) resultsdb.StepSummary {
		return resultsdb.StepSummary{AppTimed: 5000, AppTotal: d(total), AppPoolWait: d(wait), AppQuery: d(total / 2)}
	}
	wantFinding(t, CheckPoolExhaustion(c, m(10*time.Millisecond, 6*time.Millisecond), 0), PoolExhaustionCheck, spec.CheckWarn,
		"waited 6.000ms on average for a database connection, 60% of their 10.0ms")
	wantFinding(t, CheckPoolExhaustion(c, m(10*time.Millisecond, time.Millisecond), 2), "", "")
	wantFinding(t, CheckPoolExhaustion(c, resultsdb.StepSummary{}, 2), "", "")
	// A clean java-vs-node run on a busy host: node waited 0.404 ms of 1.895 ms (21%) with
	// 18 of 200 server connections in use, its pool of 30 far from full.
	clean := m(1895*time.Microsecond, 404*time.Microsecond)
	clean.DBConnections, clean.DBMaxConnections = n(18), n(200)
	wantFinding(t, CheckPoolExhaustion(c, clean, 30), "", "")
	// Another, on a host at load 3-4: node waited 3.362 ms of 5.860 ms (57%, over 1 ms)
	// with 22 of 200 server connections in use: fewer than its one pool of 30 holds, so
	// the pool never filled and the waits were connections being opened.
	slowOpen := m(5860*time.Microsecond, 3362*time.Microsecond)
	slowOpen.DBConnections, slowOpen.DBMaxConnections = n(22), n(200)
	slowOpen.Apps = []resultsdb.AppStepMetrics{appCPU(resultsdb.RoleApp, 0.2, nil)}
	wantFinding(t, CheckPoolExhaustion(c, slowOpen, 30), "", "")
	// The same waits with the server at 30 connections: the pool may have been full.
	slowOpen.DBConnections = n(30)
	wantFinding(t, CheckPoolExhaustion(c, slowOpen, 30), PoolExhaustionCheck, spec.CheckWarn, "for one of the 30 pooled connections per instance")
	// Two instances hold up to 60: 30 on the server is under that.
	slowOpen.Apps[0].Instances = 2
	wantFinding(t, CheckPoolExhaustion(c, slowOpen, 30), "", "")

	// examples/confounders/pool.yml: 2 connections, 4 users, 20 ms of pg_sleep each.
	pool := m(40*time.Millisecond, 20*time.Millisecond)
	pool.DBConnections, pool.DBMaxConnections = n(4), n(100)
	pool.Apps = []resultsdb.AppStepMetrics{appCPU(resultsdb.RoleApp, 0.05, nil)}
	f := CheckPoolExhaustion(c, pool, 2)
	wantFinding(t, f, PoolExhaustionCheck, spec.CheckWarn, "for one of the 2 pooled connections per instance, 50% of their 40.0ms",
		"the database server had only 4 of its 100 connections in use")
	for k, want := range map[string]any{"pool_wait_share": 0.5, "pool_size": 2, "app_instances": 1, "db_connections": 4, "db_max_connections": 100} {
		if f.Evidence[k] != want {
			t.Errorf("evidence %s = %v, want %v (all: %v)", k, f.Evidence[k], want, f.Evidence)
		}
	}

	capped := resultsdb.StepSummary{DBConnections: n(97), DBMaxConnections: n(100)}
	wantFinding(t, CheckPoolExhaustion(c, capped, 0), PoolExhaustionCheck, spec.CheckWarn, "had 97 of its 100 connections in use")
	capped.DBConnections = n(40)
	wantFinding(t, CheckPoolExhaustion(c, capped, 0), "", "")
}

// TestPlateauDefersToThePool: a plateau on a step whose pool is exhausted is the pool's
// doing (examples/confounders/pool.yml, step 2); it is reported once, by the more
// specific finding, which carries its figures.
func TestPlateauDefersToThePool(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	app := func(cores float64) resultsdb.AppStepMetrics { return appCPU(resultsdb.RoleApp, cores, nil) }
	prev, cur := step(4, 1, 100, 40*ms, 0, app(0.05)), step(4, 2, 101, 80*ms, 0, app(0.05))
	d := func(v time.Duration) *time.Duration { return &v }
	cur.AppTimed, cur.AppTotal, cur.AppPoolWait = 800, d(80*ms), d(60*ms)
	checks := spec.DefaultChecks()
	plateau := CheckPlateau(checks.Plateau, prev, cur)
	wantFinding(t, plateau, PlateauCheck, spec.CheckWarn, "load grew +100%")
	pool := CheckPoolExhaustion(checks.PoolExhaustion, cur, 2)
	stall := &Finding{Check: StallCheck, Evidence: map[string]any{}}
	found := deferPlateau([]*Finding{nil, pool, stall, plateau})
	if len(found) != 3 || found[1] != pool || found[2] != stall {
		t.Fatalf("findings after deferring: %v, want the pool's and the stall's", found)
	}
	wantFinding(t, pool, PoolExhaustionCheck, spec.CheckWarn, "75% of their 80.0ms",
		"also explains why this step's throughput grew only +1.0% for +100% more load")
	if pool.Evidence["explains_plateau"] != true || pool.Evidence["plateau_load_growth"] != 1.0 || pool.Evidence["pool_size"] != 2 {
		t.Errorf("the pool's evidence lacks the plateau's figures or its own: %v", pool.Evidence)
	}
	if len(stall.Evidence) != 0 || stall.Message != "" {
		t.Errorf("a finding that does not explain a plateau took it in: %+v", *stall)
	}
	// A plateau beside findings that do not explain it stands.
	gen := &Finding{Check: GeneratorSaturationCheck, Evidence: map[string]any{}}
	if found := deferPlateau([]*Finding{gen, CheckPlateau(checks.Plateau, prev, cur)}); len(found) != 2 || found[1].Check != PlateauCheck {
		t.Errorf("plateau beside generator saturation: %v", found)
	}
}

func TestCheckStall(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().Stall
	closed := resultsdb.StepSummary{Count: 40000, Stalled: 2 * time.Second, Omitted: 6000}
	wantFinding(t, CheckStall(c, closed), StallCheck, spec.CheckWarn, "for 2s", "about 6000 requests (15.0% of the step)", "model: open")
	gc := resultsdb.StepSummary{Count: 40000, Stalled: 300 * time.Millisecond, Omitted: 90}
	wantFinding(t, CheckStall(c, gc), "", "") // a short pause costing 0.2 %: below both thresholds
	open := resultsdb.StepSummary{Count: 40000, Open: true, Stalled: 2 * time.Second}
	wantFinding(t, CheckStall(c, open), StallCheck, spec.CheckWarn, "the open loop kept sending")
	wantFinding(t, CheckStall(c, resultsdb.StepSummary{Count: 1}), "", "")
}

func TestCheckCoverage(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().Coverage
	quota := resultsdb.Coverage{Sent: 10000, Found: 1000, Seconds: 10, EmptySeconds: 9, MissingInEmpty: 9000}
	wantFinding(t, CheckCoverage(c, quota, false), CoverageCheck, spec.CheckWarn, "1000 of 10000 requests (10.0%)", "quota-like")
	wantFinding(t, CheckCoverage(c, resultsdb.Coverage{Sent: 10000, Found: 9950}, false), "", "")
	wantFinding(t, CheckCoverage(c, resultsdb.Coverage{}, false), "", "")
}

func TestCheckLayerOrder(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().LayerOrder
	bad := resultsdb.LayerOrder{AppAndRouter: 10000, AppOverRouter: 800, AppOverRouterMax: 28 * time.Millisecond, RouterAndClient: 10000, RouterOverClient: 5}
	wantFinding(t, CheckLayerOrder(c, bad), LayerOrderCheck, spec.CheckWarn, "800 of 10000 requests (8.00%, worst by 28.0ms)")
	good := resultsdb.LayerOrder{AppAndRouter: 10000, AppOverRouter: 10, RouterAndClient: 10000, RouterOverClient: 5}
	wantFinding(t, CheckLayerOrder(c, good), "", "")
}

// appWait is the app under test with its run-queue wait and the cores of its cell.
func appWait(used, waited, share float64, available *float64) resultsdb.AppStepMetrics {
	a := appCPU(resultsdb.RoleApp, used, available)
	a.CPUWaitCores, a.CPUWaitShare = checkF64(waited), checkF64(share)
	return a
}

func TestCheckContention(t *testing.T) {
	t.Parallel()
	c := spec.DefaultChecks().Contention
	ms := time.Millisecond
	one := checkF64(1)
	cases := []struct {
		name      string
		cur       resultsdb.StepSummary
		want      bool
		notJudged string
		parts     []string
	}{
		// A neighbour burns the cell: the app ran 0.4 of its one core and waited 1.2
		// cores' worth (three quarters of its ready time).
		{"a noisy neighbour", step(2, 2, 40, 50*ms, 0, appWait(0.4, 1.2, 0.75, one)), true, "",
			[]string{"app app-app waited for a CPU", "1.20 cores' worth", "75% of their ready time", "while its instances used 0.40 of the 1.00 cores of its cell (40%)"}},
		// A light app on a busy host: almost all of its little ready time was waiting,
		// but a quarter of a core's worth is no material loss (measured: 0.22-0.34 at
		// a load average of 36 on 2 cores).
		{"a light app on a busy host", step(2, 2, 180, 22*ms, 0, appWait(0.02, 0.3, 0.94, one)), false, "", nil},
		// An app that uses its whole cell waits for its own threads: its own limit,
		// not a neighbour's.
		{"the app saturates its own cell", step(4, 2, 100, 40*ms, 0, appWait(0.95, 3, 0.76, one)), false, "", nil},
		{"little wait", step(2, 2, 100, 10*ms, 0, appWait(0.5, 0.6, 0.3, one)), false, "", nil},
		{"no wait counter (Cloud Foundry)", step(2, 2, 100, 10*ms, 0, appCPU(resultsdb.RoleApp, 0.3, one)), false,
			"contention not judged for app app-app: the platform counts no run-queue wait", nil},
		{"cell cores unknown", step(2, 2, 100, 10*ms, 0, appWait(0.3, 2, 0.9, nil)), false,
			"contention not judged for app app-app: the cores of the cells it ran on are unknown", nil},
		{"a url: variant has no app", step(2, 2, 100, 10*ms, 0), false, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, nj := CheckContention(c, tc.cur)
			if !strings.HasPrefix(nj, tc.notJudged) || (tc.notJudged == "") != (nj == "") {
				t.Errorf("not judged %q, want %q", nj, tc.notJudged)
			}
			if !tc.want {
				wantFinding(t, f, "", "")
				return
			}
			wantFinding(t, f, ContentionCheck, spec.CheckWarn, tc.parts...)
			if f.Evidence["cpu_wait_share"] != 0.75 || f.Evidence["cpu_wait_cores"] != 1.2 || f.Evidence["cpu_available_cores"] != 1.0 || f.Evidence["app_cells"] != 1 {
				t.Errorf("evidence %v", f.Evidence)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		off := c
		off.Level = spec.CheckOff
		if f, nj := CheckContention(off, cases[0].cur); f != nil || nj != "" {
			t.Errorf("off: %v, %q", f, nj)
		}
	})
	t.Run("thresholds from the spec", func(t *testing.T) {
		strict := c
		strict.WaitedCores = 1.5
		if f, _ := CheckContention(strict, cases[0].cur); f != nil {
			t.Errorf("1.2 cores waited tripped a threshold of 1.5: %v", f.Message)
		}
	})
}

// Plateau defers to a finding that explains flat throughput from inside the app's cell:
// the CI case of a closed-loop step that did not scale on a contended host, where
// plateau would blame something outside the app.
func TestPlateauDefersToContention(t *testing.T) {
	t.Parallel()
	checks := spec.DefaultChecks()
	ms := time.Millisecond
	one := checkF64(1)
	prev := step(1, 1, 100, 10*ms, 0, appWait(0.4, 0.1, 0.2, one))
	cur := step(1, 2, 96, 20*ms, 0, appWait(0.23, 0.9, 0.8, one)) // -4 % for twice the users, app at 0.23 cores
	plateau := CheckPlateau(checks.Plateau, prev, cur)
	wantFinding(t, plateau, PlateauCheck, spec.CheckWarn)
	contention, _ := CheckContention(checks.Contention, cur)
	wantFinding(t, contention, ContentionCheck, spec.CheckWarn)
	found := deferPlateau([]*Finding{nil, contention, plateau})
	if len(found) != 2 || found[1].Check != ContentionCheck {
		t.Fatalf("findings after deferring: %v, want contention only", found)
	}
	wantFinding(t, found[1], ContentionCheck, spec.CheckWarn, "also explains why this step's throughput grew only -4.0% for +100% more load")
	if found[1].Evidence["explains_plateau"] != true || found[1].Evidence["plateau_served"] == nil {
		t.Errorf("evidence %v lacks the deferred plateau's", found[1].Evidence)
	}
	// Without an explaining finding the plateau stands.
	if found := deferPlateau([]*Finding{nil, plateau}); len(found) != 2 || found[1] != plateau {
		t.Errorf("plateau alone: %v", found)
	}
}
