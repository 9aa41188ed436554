package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// The names of the checks a run performs on its own measurement, as in Finding.Check.
const (
	ColocationCheck     = "colocation"
	GeneratorCPUCheck   = "generator-cpu"
	FlatThroughputCheck = "flat-throughput"
)

// Finding is a check that tripped. Level is warn or fail, never off.
type Finding struct {
	Check   string
	Level   spec.CheckLevel
	Message string
}

// Thresholds of the checks.
const (
	// GeneratorEntitlementLimit is the mean share of its CPU entitlement from which a
	// generator counts as busy. Past its entitlement an instance is throttled whenever
	// the cell is contended, so at 0.8 a burst already waits for CPU and its latency is
	// the generator's, not the app's.
	GeneratorEntitlementLimit = 0.8
	// GeneratorCPULimit is the mean CPU, in cores, from which a generator counts as busy
	// when CC reports no entitlement. Close to a full core a single-core instance queues
	// its own sends.
	GeneratorCPULimit = 0.9
	// FlatGainBelow is the throughput gain over the previous step under which more load
	// counts as not served. Below 10 % the added load buys next to nothing; above, the
	// app still scales and another check (the plateau stop) decides.
	FlatGainBelow = 0.10
	// AppLowEntitlement and AppLowCPU are the app's mean CPU (share of the entitlement,
	// else cores) under which it counts as idle. Under half its CPU an app whose
	// throughput stopped growing is waiting on something else.
	AppLowEntitlement = 0.5
	AppLowCPU         = 0.5
)

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
	return &Finding{Check: ColocationCheck, Level: level, Message: b.String()}
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

// CheckGeneratorCPU reports a generator app busy enough to be the bottleneck itself: its
// mean CPU is at least GeneratorEntitlementLimit of its entitlement or, when CC reports
// no entitlement, at least GeneratorCPULimit of a core. gen covers the step
// (resultsdb.Store.StepMetrics); without usage (Polls 0) there is nothing to judge. The
// finding is a warning whatever level says: the samples are still true, only the limit
// found may be the generators'. Every level other than fail and warn is off.
func CheckGeneratorCPU(level spec.CheckLevel, gen resultsdb.AppMetrics) *Finding {
	level, ok := warnAtMost(level)
	if !ok || gen.Polls == 0 {
		return nil
	}
	var use string
	switch {
	case gen.MeanEntitlement != nil:
		e := *gen.MeanEntitlement
		if e < GeneratorEntitlementLimit {
			return nil
		}
		use = fmt.Sprintf("%.0f%% of its CPU entitlement (warns from %.0f%%)", 100*e, 100*GeneratorEntitlementLimit)
	case gen.MeanCPU >= GeneratorCPULimit:
		use = fmt.Sprintf("%.2f of a core, entitlement unknown (warns from %.2f)", gen.MeanCPU, GeneratorCPULimit)
	default:
		return nil
	}
	msg := fmt.Sprintf("generator %s (%s) used on average %s: the generators, not the app, may be the bottleneck."+
		" Try: more generator instances with fewer users each, or more memory for the generator app (CPU shares grow with memory).",
		gen.App, plural(gen.Instances, "instance"), use)
	return &Finding{Check: GeneratorCPUCheck, Level: level, Message: msg}
}

// CheckFlatThroughput reports a step that added load without adding throughput while the
// app had CPU to spare: the limit is outside the app. It trips when cur has more
// instances × users than prev, its throughput gained less than FlatGainBelow over prev's,
// and the app's mean CPU is under AppLowEntitlement of its entitlement (when known) or
// under AppLowCPU of a core. prev is the previous step of the same variant; the zero
// StepSummary (first step) never trips, and neither does an open-loop step (its users
// are 0: the offered rate is not in a StepSummary), nor an app without usage in the step
// (app.Polls 0). The finding is a warning whatever level says. Every level other than
// fail and warn is off.
func CheckFlatThroughput(level spec.CheckLevel, prev, cur resultsdb.StepSummary, app resultsdb.AppMetrics) *Finding {
	level, ok := warnAtMost(level)
	if !ok || app.Polls == 0 || prev.Throughput <= 0 {
		return nil
	}
	prevLoad, curLoad := prev.Instances*prev.Users, cur.Instances*cur.Users
	if prevLoad <= 0 || curLoad <= prevLoad {
		return nil
	}
	gain := (cur.Throughput - prev.Throughput) / prev.Throughput
	if gain >= FlatGainBelow {
		return nil
	}
	var use string
	switch {
	case app.MeanEntitlement != nil:
		e := *app.MeanEntitlement
		if e >= AppLowEntitlement {
			return nil
		}
		use = fmt.Sprintf("%.0f%% of its CPU entitlement (%.2f of a core)", 100*e, app.MeanCPU)
	case app.MeanCPU < AppLowCPU:
		use = fmt.Sprintf("%.2f of a core, entitlement unknown", app.MeanCPU)
	default:
		return nil
	}
	where := fmt.Sprintf("step %d", cur.Step)
	if cur.Variant != "" {
		where = "variant " + cur.Variant + " " + where
	}
	msg := fmt.Sprintf("%s: load grew from %d users (%d instances × %d) to %d (%d × %d) but throughput went from %.1f to %.1f req/s"+
		" (%+.1f%%, under %+.0f%%) while app %s used on average %s: the bottleneck is likely outside the app."+
		" Try: look at the router or proxy in front of it (gorouter time in router_requests), the database connection pool"+
		" (pool wait in app_timings), the network.",
		where, prevLoad, prev.Instances, prev.Users, curLoad, cur.Instances, cur.Users, prev.Throughput, cur.Throughput,
		100*gain, 100*FlatGainBelow, app.App, use)
	return &Finding{Check: FlatThroughputCheck, Level: level, Message: msg}
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// warnAtMost clamps a level for a check that may only warn; ok is false when it is off.
// Spec validation already refuses fail there; a hand-built spec may not have been validated.
func warnAtMost(level spec.CheckLevel) (spec.CheckLevel, bool) {
	switch level {
	case spec.CheckFail, spec.CheckWarn:
		return spec.CheckWarn, true
	}
	return "", false
}
