package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// NeighboursCheck is the check on apps beside the run's own that use CPU.
const NeighboursCheck = "neighbours"

// CheckNeighbours reports the apps among apps (those not of the run, with their CPU)
// that used at least c.CPUAbove cores each, but for those c.Except names, or nil when
// there is none or the check is off. Such an app, left running by an earlier run or
// another user, takes CPU from the app under test where they share a cell, and the app
// measures slower than it is. when says which moment the apps' CPU is of ("before the
// run", "in the step").
func CheckNeighbours(c spec.Neighbours, apps []platform.AppCPU, when string) *Finding {
	if !warns(c.Level) {
		return nil
	}
	var busy []platform.AppCPU
	total := 0.0
	for _, a := range apps {
		if a.Cores >= c.CPUAbove && !slices.Contains(c.Except, a.Name) {
			busy = append(busy, a)
			total += a.Cores
		}
	}
	if len(busy) == 0 {
		return nil
	}
	slices.SortFunc(busy, func(a, b platform.AppCPU) int {
		if a.Cores != b.Cores {
			if a.Cores > b.Cores {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	var b strings.Builder
	list := make([]map[string]any, len(busy))
	for i, a := range busy {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (space %s) %.2f cores on %d instance(s)", a.Name, a.Space, a.Cores, a.Instances)
		if len(a.Hosts) > 0 {
			fmt.Fprintf(&b, " on %s", strings.Join(a.Hosts, ", "))
		}
		list[i] = map[string]any{"app": a.Name, "space": a.Space, "cpu_cores": a.Cores, "instances": a.Instances, "hosts": a.Hosts}
	}
	what, it, them := "an app that is not part of the run used CPU", "it shares a cell with the app under test it takes", "it"
	if len(busy) > 1 {
		what = fmt.Sprintf("%d apps that are not part of the run used %.2f cores in all", len(busy), total)
		it, them = "they share a cell with the app under test they take", "them"
	}
	msg := fmt.Sprintf("%s %s: %s. Where %s its CPU, and the app measures slower than it is."+
		" Try: cf stop %s (an earlier run's apps: cleanup: stop in its spec), or name %s in checks.neighbours.except if part of the system under test.",
		what, when, b.String(), it, them, them)
	return &Finding{Check: NeighboursCheck, Level: spec.CheckWarn, Message: msg,
		Evidence: map[string]any{"apps": list, "cpu_cores": total, "cpu_above": c.CPUAbove}}
}

// neighbours reads the CPU of the started apps that are not the run's own: those of the
// run's org, or on the local foundation (which says how many cores its cells have)
// every app on its cells. One stats read per app.
func (d *Deployment) neighbours(ctx context.Context) ([]platform.AppCPU, error) {
	org := d.Landscape.OrgGUID
	if len(d.hostCores) > 0 {
		org = "" // the local foundation: all its apps share its cells
	}
	return d.cf.AppsCPU(ctx, org, d.ours)
}

// ours says whether the app name in the space is one the run pushed: an app under test
// (the apps space), a generator app, the tunnel, the relay or the drain (the generators
// space).
func (d *Deployment) ours(spaceGUID, name string) bool {
	if spaceGUID == d.Landscape.Apps.GUID && slices.Contains(d.appNames(), name) {
		return true
	}
	if spaceGUID != d.Landscape.Generators.GUID {
		return false
	}
	if slices.Contains(d.ownApps, name) {
		return true
	}
	for _, v := range d.order {
		if d.variants[v].fleet.app.Name == name {
			return true
		}
	}
	return false
}

// checkNeighbours judges the apps beside the run's (on Cloud Foundry only) and
// records a finding of variant's step idx (-1 and "": before the run).
func (r *runner) checkNeighbours(ctx context.Context, variant string, idx int) {
	dep := r.opts.Deployment
	c := r.sp.Checks.Neighbours
	if dep == nil || !warns(c.Level) {
		return
	}
	apps, err := dep.neighbours(ctx)
	if err != nil {
		r.opts.Logger.Warn("read the CPU of the apps beside the run's", "err", err)
		return
	}
	when := "before the run"
	if idx >= 0 {
		when = fmt.Sprintf("at the end of step %d", idx+1)
	}
	if f := CheckNeighbours(c, apps, when); f != nil {
		r.finding(variant, idx, *f)
	}
}
