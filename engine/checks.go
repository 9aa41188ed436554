package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/loadgen"
	"github.com/cf-benchmark/cf-benchmark/report"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// The names of the checks a run performs on its own measurement, as in Finding.Check.
// docs/checks.md states each rule; the spec's checks section sets its thresholds.
const (
	ColocationCheck          = "colocation"
	GeneratorSaturationCheck = "generator-saturation"
	PlateauCheck             = "plateau"
	PoolExhaustionCheck      = "pool-exhaustion"
	ContentionCheck          = "contention"
	StallCheck               = "stall"
	CoverageCheck            = "coverage"
	LayerOrderCheck          = "layer-order"
)

// Finding is a check that tripped. Level is warn or fail, never off. Evidence holds the
// figures the rule judged, by name with their unit in it (send_lag_mean_ms), for reports.
type Finding struct {
	Check    string
	Level    spec.CheckLevel
	Message  string
	Evidence map[string]any
}

// CheckColocation reports every host that runs both an app instance and a generator
// instance, or nil when there is none or level is off. A generator on an app's cell takes
// CPU from the app, so the app's figures understate it. apps and generators are the
// RUNNING instances of the latest poll (resultsdb.Store.LatestHosts); an instance whose
// host CC did not report ("") is on no host. Every level other than fail and warn is off.
func CheckColocation(level spec.CheckLevel, apps, generators []resultsdb.InstanceHost) *Finding {
	if level != spec.CheckFail && level != spec.CheckWarn {
		return nil
	}
	onHost := func(ins []resultsdb.InstanceHost) map[string][]resultsdb.InstanceHost {
		m := map[string][]resultsdb.InstanceHost{}
		for _, in := range ins {
			if in.Host != "" {
				m[in.Host] = append(m[in.Host], in)
			}
		}
		return m
	}
	appsOn, gensOn := onHost(apps), onHost(generators)
	var shared []string
	for h := range appsOn {
		if len(gensOn[h]) > 0 {
			shared = append(shared, h)
		}
	}
	if len(shared) == 0 {
		return nil
	}
	slices.Sort(shared)
	var b strings.Builder
	if len(shared) == 1 {
		b.WriteString("generator and app instances share a host: ")
	} else {
		fmt.Fprintf(&b, "generator and app instances share %d hosts: ", len(shared))
	}
	for i, h := range shared {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s runs app %s and generator %s", h, instanceList(appsOn[h]), instanceList(gensOn[h]))
	}
	b.WriteString(". The generators take CPU from the app on the same cell, so the app measures slower than it is." +
		" Try: run the generators in another isolation segment (landscape.generators.isolation_segment).")
	return &Finding{Check: ColocationCheck, Level: level, Message: b.String(), Evidence: map[string]any{"hosts": shared}}
}

// instanceList writes instances as app/index, sorted.
func instanceList(ins []resultsdb.InstanceHost) string {
	ins = slices.Clone(ins)
	slices.SortFunc(ins, func(a, b resultsdb.InstanceHost) int {
		if c := strings.Compare(a.App, b.App); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = fmt.Sprintf("%s/%d", in.App, in.Index)
	}
	return strings.Join(names, ", ")
}

// CheckGeneratorSaturation reports generators that are the bottleneck themselves, judged
// by their own signal: requests went out late against when they were due (closed loop:
// after the user was ready; open loop: after its slot) by at least c.SendLagShare of the
// mean latency and at least c.SendLagMin on average, or the generator instances used
// together at least c.CPUShare of the CPU available to them (the cores of the cells
// they ran on, each cell once; where known): instances that share a cell share its
// cores. Entitlement alone is no evidence: on Diego an instance runs far above it
// whenever its cell has spare CPU. An open loop's lag is judged beyond what its tick
// (workload.tick) adds by design, loadgen.TickLag at each instance's rate: a clean run
// on a coarse tick is no saturation.
func CheckGeneratorSaturation(c spec.GeneratorSaturation, m resultsdb.StepSummary, tick time.Duration) *Finding {
	if !warns(c.Level) || m.Count == 0 {
		return nil
	}
	if tick <= 0 {
		tick = loadgen.DefaultTick
	}
	var byTick time.Duration
	if m.Open && m.OfferedRate != nil {
		n := m.InstancesSeen // OfferedRate is theirs in all
		if n < 1 {
			n = max(m.Instances, 1)
		}
		byTick = loadgen.TickLag(*m.OfferedRate/float64(n), tick)
	}
	lag := max(m.SendLagMean-byTick, 0)
	lagShare := 0.0
	if m.Mean > 0 {
		lagShare = float64(lag) / float64(m.Mean)
	}
	lagged := lag >= c.SendLagMin && lagShare >= c.SendLagShare
	ev := map[string]any{"send_lag_mean_ms": ms(m.SendLagMean), "send_lag_p99_ms": ms(m.SendLagP99), "latency_mean_ms": ms(m.Mean),
		"send_lag_share": lagShare}
	if m.Open {
		ev["send_lag_tick_ms"] = ms(byTick)
	}
	var cpu string
	busy := false
	if g, ok := m.App(resultsdb.RoleGenerator); ok && g.CPUMaxCores != nil {
		ev["generator_cpu_max_cores"] = *g.CPUMaxCores
		cpu = fmt.Sprintf("; its busiest instance used %.2f cores", *g.CPUMaxCores)
		if share := g.Utilisation(); share != nil {
			ev["generator_cpu_total_cores"], ev["generator_cpu_available_cores"], ev["generator_cells"] = *g.CPUTotalCores, *g.CPUAvailableCores, *g.Cells
			ev["generator_cpu_share"] = *share
			cpu += fmt.Sprintf(", its %d instance(s) %s", g.Instances, usedOf(g))
			busy = *share >= c.CPUShare
		}
	}
	if !lagged && !busy {
		return nil
	}
	beyond := ""
	if byTick > 0 {
		beyond = fmt.Sprintf(", %sms beyond the %sms expected from the tick (workload.tick %s)", report.Millis(lag), report.Millis(byTick), tick)
	}
	why := fmt.Sprintf("requests went out %sms late on average (p99 %sms) against when they were due%s, %.0f%% of the mean latency (%sms)%s",
		report.Millis(m.SendLagMean), report.Millis(m.SendLagP99), beyond, 100*lagShare, report.Millis(m.Mean), cpu)
	try := "more generator instances (ramp.step and ramp.max, or ramp.generators)"
	if m.Users > 1 {
		try += " with fewer users each"
	}
	if m.Open && m.Missed > 0 {
		// Sends were still waiting for a free slot when the step ended: the in-flight
		// cap, not only CPU, held them back.
		ev["missed"] = m.Missed
		why += fmt.Sprintf("; %d due sends never went out", m.Missed)
		try += ", more requests in flight each (workload.max_in_flight)"
	}
	try += ", or a generator cell with more CPU"
	msg := fmt.Sprintf("the generators could not keep up: %s. Latencies include their own delay and the load offered is less than planned. Try: %s.", why, try)
	return &Finding{Check: GeneratorSaturationCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// CheckPlateau reports a step that added load without adding throughput while the app
// had CPU to spare: the limit is outside the app. It trips when the offered load grew by
// at least c.LoadGrowthMin over prev (the previous step of the same variant), the
// throughput grew by less than c.ServedBelow of the load's growth, and the app's mean CPU
// per instance stayed under c.AppCPUBelow cores, or, where its instances had less than a
// core each (several sharing a cell), its instances together used less than
// c.AppCPUBelow of the CPU available to them: two instances using 0.45 cores each of the
// one core they share left it no CPU to spare. Without the app's CPU (a url: variant)
// there is no evidence the app idled, so it does not trip.
func CheckPlateau(c spec.Plateau, prev, cur resultsdb.StepSummary) *Finding {
	if !warns(c.Level) || prev.Throughput <= 0 || prev.OfferedLoad() <= 0 {
		return nil
	}
	app, ok := cur.App(resultsdb.RoleApp)
	if !ok || app.CPUMeanCores == nil {
		return nil
	}
	loadGain := cur.OfferedLoad()/prev.OfferedLoad() - 1
	if loadGain < c.LoadGrowthMin {
		return nil
	}
	gain := (cur.Throughput - prev.Throughput) / prev.Throughput
	served := gain / loadGain
	idle := fmt.Sprintf("used %.2f cores per instance (under %.2g)", *app.CPUMeanCores, c.AppCPUBelow)
	spare := *app.CPUMeanCores < c.AppCPUBelow
	per, u := app.CoresPerInstance(), app.Utilisation()
	if u == nil && app.Instances > 1 {
		// Instances sharing a cell of unknown cores may have had less than a core each.
		idle += fmt.Sprintf(" (the cores of the cells its %d instances ran on are unknown: judged as if each had a core)", app.Instances)
	}
	if per != nil && *per < 1 && u != nil {
		idle = fmt.Sprintf("used %.2f cores per instance, its %d instances %s (under %.0f%%)", *app.CPUMeanCores, app.Instances, usedOf(app), 100*c.AppCPUBelow)
		spare = *u < c.AppCPUBelow
	}
	if served >= c.ServedBelow || !spare {
		return nil
	}
	unit := "users"
	if cur.Open {
		unit = "req/s offered"
	}
	msg := fmt.Sprintf("load grew %+.0f%% (%.4g to %.4g %s) but throughput only %+.1f%% (%.1f to %.1f req/s) while app %s %s: the bottleneck is outside the app."+
		" Try: look at what is in front of it or behind it: a proxy or the router (gorouter time in router_requests), the database pool (pool wait in app_timings), the network.",
		100*loadGain, prev.OfferedLoad(), cur.OfferedLoad(), unit, 100*gain, prev.Throughput, cur.Throughput, app.App, idle)
	ev := map[string]any{"load_growth": loadGain, "throughput_growth": gain, "served": served,
		"throughput_before": prev.Throughput, "throughput": cur.Throughput, "app_cpu_mean_cores": *app.CPUMeanCores}
	if u != nil {
		ev["app_cpu_total_cores"], ev["app_cpu_available_cores"], ev["app_cells"], ev["app_cpu_share"] = *app.CPUTotalCores, *app.CPUAvailableCores, *app.Cells, *u
	}
	return &Finding{Check: PlateauCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// usedOf says what share of the CPU available to an app's instances they used, e.g.
// "used 0.90 of the 1.00 cores of the 1 cell they shared (90%)"; a.Utilisation must
// be known.
func usedOf(a resultsdb.AppStepMetrics) string {
	cells := fmt.Sprintf("the %d cells they ran on", *a.Cells)
	if *a.Cells == 1 {
		cells = "the 1 cell they shared"
		if a.Instances == 1 {
			cells = "its cell"
		}
	}
	return fmt.Sprintf("used %.2f of the %.2f cores of %s (%.0f%%)", *a.CPUTotalCores, *a.CPUAvailableCores, cells, 100**a.Utilisation())
}

// plateauExplainers are the checks whose finding on a step explains flat throughput
// from inside the app's own cell or process, so that plateau, which would blame
// something outside the app, defers to them (deferPlateau): CPU taken by the cell's
// neighbours, or requests queueing for the app's own connection pool (more users, the
// same throughput, an idle app is what a capped pool looks like too).
var plateauExplainers = []string{ContentionCheck, PoolExhaustionCheck}

// deferPlateau drops a plateau finding among a step's findings when another finding
// of the step explains it (plateauExplainers), and says so in that finding.
func deferPlateau(found []*Finding) []*Finding {
	i := slices.IndexFunc(found, func(f *Finding) bool { return f != nil && f.Check == PlateauCheck })
	if i < 0 {
		return found
	}
	for _, f := range found {
		if f != nil && slices.Contains(plateauExplainers, f.Check) {
			f.Evidence["explains_plateau"] = true
			for k, v := range found[i].Evidence {
				if _, ok := f.Evidence[k]; !ok {
					f.Evidence["plateau_"+k] = v
				}
			}
			f.Message += fmt.Sprintf(" It also explains why this step's throughput grew only %+.1f%% for %+.0f%% more load (no plateau finding: the limit is not outside the app).",
				100*found[i].Evidence["throughput_growth"].(float64), 100*found[i].Evidence["load_growth"].(float64))
			return slices.Delete(slices.Clone(found), i, i+1)
		}
	}
	return found
}

// CheckContention reports a step in which the app waited for a CPU that others took:
// its threads were ready to run but waited on a run queue for at least c.WaitShare of
// that time and at least c.WaitedCores cores' worth per instance, while its instances
// together used less than c.CPUShare of the CPU available to them (the cores of the
// cells they ran on, each cell once). A scheduler idles no CPU a ready thread may use,
// so the rest of those cells went to their neighbours or the host, not to the app's
// own instances. notJudged says why the step could not be judged (no
// run-queue wait counter: Cloud Foundry's cells send none; the cell's cores unknown),
// "" when it was or the check is off.
func CheckContention(c spec.Contention, m resultsdb.StepSummary) (f *Finding, notJudged string) {
	if !warns(c.Level) {
		return nil, ""
	}
	app, ok := m.App(resultsdb.RoleApp)
	if !ok {
		return nil, "" // a url: variant: no app of ours to look into
	}
	switch {
	case app.CPUWaitCores == nil || app.CPUWaitShare == nil || app.CPUTotalCores == nil:
		return nil, fmt.Sprintf("contention not judged for app %s: the platform counts no run-queue wait for its containers"+
			" (Cloud Foundry's cells send none; the local foundation's cells do where the kernel keeps schedstat)", app.App)
	case app.Utilisation() == nil:
		return nil, fmt.Sprintf("contention not judged for app %s: the cores of the cells it ran on are unknown, so its wait cannot be told from its own saturation", app.App)
	}
	waited, share, used, avail := *app.CPUWaitCores, *app.CPUWaitShare, *app.CPUTotalCores, *app.CPUAvailableCores
	ev := map[string]any{"cpu_wait_share": share, "cpu_wait_cores": waited, "app_cpu_total_cores": used, "cpu_available_cores": avail,
		"app_cells": *app.Cells, "app_cpu_share_of_cells": used / avail, "latency_mean_ms": ms(m.Mean), "throughput": m.Throughput}
	if share < c.WaitShare || waited < c.WaitedCores || used/avail >= c.CPUShare {
		return nil, ""
	}
	msg := fmt.Sprintf("app %s waited for a CPU: its threads spent %.2f cores' worth of time per instance ready to run but waiting (%.0f%% of their ready time),"+
		" while its instances %s: neighbours on the cell, or the host, took the rest."+
		" The step's latency (mean %sms) and throughput (%.1f req/s) measure the contention, not the app."+
		" Try: run the app alone on its cell (an isolation segment of its own), or stop what else runs there and on the host.",
		app.App, waited, 100*share, usedOf(app), report.Millis(m.Mean), m.Throughput)
	return &Finding{Check: ContentionCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}, ""
}

// CheckPoolExhaustion reports a step whose requests spent at least c.WaitShare of their
// app time, and at least c.MinWait on average, waiting for a database connection (app
// timings) while its pools could have been full, or in which the apps' database server
// had at least c.ConnectionsShare of its max_connections in use (where the run watched
// it). Without either there is nothing to judge. poolSize is the app's connection pool
// per instance where its environment says (PoolSizeEnv), else 0: with the server's
// connections it tells a pool that never filled (fewer connections on the whole server
// than the app's pools hold), whose waits are not exhaustion.
func CheckPoolExhaustion(c spec.PoolExhaustion, m resultsdb.StepSummary, poolSize int) *Finding {
	if !warns(c.Level) {
		return nil
	}
	ev := map[string]any{}
	var why []string
	instances := 1
	if app, ok := m.App(resultsdb.RoleApp); ok && app.Instances > 0 {
		instances = app.Instances
		ev["app_instances"] = app.Instances
	}
	// The server's most connections in the step bound the app's own from above: under
	// its pools' capacity, no pool was ever full, and the wait was for connections being
	// opened, not a queue (a busy host makes that slow: 3.4 ms of a clean run's 5.9 ms).
	neverFull := poolSize > 0 && m.DBConnections != nil && *m.DBConnections < poolSize*instances
	if m.AppTimed > 0 && m.AppTotal != nil && m.AppPoolWait != nil && *m.AppTotal > 0 {
		share := float64(*m.AppPoolWait) / float64(*m.AppTotal)
		ev["pool_wait_mean_ms"], ev["app_mean_ms"], ev["pool_wait_share"], ev["requests"] = ms(*m.AppPoolWait), ms(*m.AppTotal), share, m.AppTimed
		if share >= c.WaitShare && *m.AppPoolWait >= c.MinWait && !neverFull {
			pool := "a database connection"
			if poolSize > 0 {
				pool = fmt.Sprintf("one of the %d pooled connections per instance", poolSize)
			}
			why = append(why, fmt.Sprintf("requests waited %sms on average for %s, %.0f%% of their %sms in the app (%d requests timed)",
				report.Millis(*m.AppPoolWait), pool, 100*share, report.Millis(*m.AppTotal), m.AppTimed))
		}
	}
	if poolSize > 0 {
		ev["pool_size"] = poolSize
	}
	if m.DBConnections != nil && m.DBMaxConnections != nil && *m.DBMaxConnections > 0 {
		share := float64(*m.DBConnections) / float64(*m.DBMaxConnections)
		ev["db_connections"], ev["db_max_connections"] = *m.DBConnections, *m.DBMaxConnections
		if share >= c.ConnectionsShare {
			why = append(why, fmt.Sprintf("the database server had %d of its %d connections in use", *m.DBConnections, *m.DBMaxConnections))
		} else if len(why) > 0 {
			why = append(why, fmt.Sprintf("the database server had only %d of its %d connections in use", *m.DBConnections, *m.DBMaxConnections))
		}
	}
	if len(why) == 0 {
		return nil
	}
	msg := strings.Join(why, "; ") + ": the connection pool, or the database's connection limit, caps throughput." +
		" Try: a bigger pool (e.g. DB_POOL_SIZE) within the database's max_connections, fewer app instances per database, or a database plan with more connections."
	return &Finding{Check: PoolExhaustionCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// PoolSizeEnv is the app environment variable that sizes its database connection pool
// per instance, as the sample apps read it (apps/README.md); the pool-exhaustion finding
// quotes it where the pushed app has it.
const PoolSizeEnv = "DB_POOL_SIZE"

// CheckStall reports a step in which the target completed (almost) nothing for at least
// c.Longest, or, in a closed loop, whose stalls kept its users from sending at least
// c.OmittedShare of its requests (coordinated omission). Single slow responses among
// busy users (jitter) are no stall: see resultsdb.FindStalls.
func CheckStall(c spec.Stall, m resultsdb.StepSummary) *Finding {
	if !warns(c.Level) || m.Stalled <= 0 {
		return nil
	}
	share := m.OmissionShare()
	if m.Stalled < c.Longest && (m.Open || share < c.OmittedShare) {
		return nil
	}
	msg := fmt.Sprintf("the target completed (almost) no request for %s", m.Stalled)
	if m.Open {
		msg += "; the open loop kept sending, so the step's latencies include the stall."
	} else {
		msg += fmt.Sprintf(": its users waited instead of sending about %d requests (%.1f%% of the step), so the step's percentiles understate"+
			" the latency an independent arrival would see. Try: model: open, at a rate near this step's throughput.", m.Omitted, 100*share)
	}
	ev := map[string]any{"longest_stall_ms": m.Stalled.Milliseconds(), "omitted": m.Omitted, "omitted_share": share}
	return &Finding{Check: StallCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// CheckCoverage reports a step whose router logs hold less than c.Below of its requests,
// saying whether the gaps look like a log quota or lost requests.
func CheckCoverage(c spec.Coverage, cov resultsdb.Coverage, budgetSpent bool) *Finding {
	if !warns(c.Level) || cov.Sent == 0 || cov.Share() >= c.Below {
		return nil
	}
	msg := fmt.Sprintf("the router logs hold %d of %d requests (%.1f%%): %s. Router-side figures of this step rest on the requests found.",
		cov.Found, cov.Sent, 100*cov.Share(), report.CoverageVerdict(cov, budgetSpent))
	ev := map[string]any{"sent": cov.Sent, "found": cov.Found, "coverage": cov.Share(), "empty_seconds": cov.EmptySeconds,
		"seconds": cov.Seconds, "missing_in_empty_seconds": cov.MissingInEmpty}
	return &Finding{Check: CoverageCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// CheckLayerOrder reports a step where more than c.Above of the requests seen by two
// layers have an inner layer taking longer than the outer one (app time over router
// time, router time over client time): one side's clock starts late or stops early, and
// a latency decomposition of the step would go negative.
func CheckLayerOrder(c spec.LayerOrder, o resultsdb.LayerOrder) *Finding {
	if !warns(c.Level) {
		return nil
	}
	appShare, routerShare := o.AppOverRouterShare(), o.RouterOverClientShare()
	if appShare <= c.Above && routerShare <= c.Above {
		return nil
	}
	msg := fmt.Sprintf("layers out of order: app time exceeds router time in %d of %d requests (%.2f%%, worst by %sms), router time exceeds client time in %d of %d (%.2f%%, worst by %sms):"+
		" a latency decomposition of this step is unreliable.",
		o.AppOverRouter, o.AppAndRouter, 100*appShare, report.Millis(o.AppOverRouterMax),
		o.RouterOverClient, o.RouterAndClient, 100*routerShare, report.Millis(o.RouterOverClientMax))
	ev := map[string]any{"app_over_router_share": appShare, "router_over_client_share": routerShare,
		"app_over_router_max_ms": ms(o.AppOverRouterMax), "router_over_client_max_ms": ms(o.RouterOverClientMax)}
	return &Finding{Check: LayerOrderCheck, Level: spec.CheckWarn, Message: msg, Evidence: ev}
}

// warns tells whether a warn-only check is on. Spec validation refuses fail there; a
// hand-built spec may not have been validated, and fail counts as warn.
func warns(level spec.CheckLevel) bool { return level == spec.CheckWarn || level == spec.CheckFail }

// ms is a duration in milliseconds, for evidence.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
