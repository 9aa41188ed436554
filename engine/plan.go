package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Memory and instances of what Deploy pushes besides the apps under test (see Deploy
// and pushTunnel): a generator app per variant, scaled up for its ramp only, and the
// tunnel app, and the drain app when the router logs come from one (the relay's memory
// is relayMemoryMB).
const (
	generatorMemoryMB = 256
	tunnelMemoryMB    = 64
	drainMemoryMB     = 256
	// defaultMemoryMB is assumed for an app whose manifest leaves its memory to the
	// foundation (Cloud Foundry's usual default).
	defaultMemoryMB = 1024
)

// Plan is what a session of a spec will run and hold, known before anything is pushed.
type Plan struct {
	Variants, Levels int
	// Ramp says what the levels are ("rates 350, 700 req/s in all over 2 generator
	// instance(s)"); Offered is each level's offered rate in all (req/s) with its planned
	// generator instances, nil for a closed loop and for a ramp of rates (Ramp has them).
	Ramp    string
	Offered []float64
	// Repeats is how many times every variant runs (1 without repeat:).
	Repeats int
	// Duration is the time under load at least: variants × levels × repeats × hold.
	Duration time.Duration
	// Apps and Generators are the peaks in the two spaces; zero without a landscape.
	Apps, Generators SpacePeak
	// Pushes names the apps the run pushes (the apps under test, the generator apps, the
	// tunnel app): an app of the same name already in a space is replaced, not added.
	Pushes []string

	// spec is what the plan is of. manifests are the manifests its variants push, each
	// read once, here: the later phases (Preflight's checks, Deploy) read them from the
	// plan. None without a landscape, where nothing is pushed.
	spec      *spec.Spec
	manifests map[manifestKey]loadedManifest
}

// manifestKey is one app of one manifest file; the cells of a matrix share it.
type manifestKey struct{ file, app string }

// loadedManifest is a manifest as the plan read it, or why it could not.
type loadedManifest struct {
	m   *platform.Manifest
	err error
}

// Spec is the spec the plan is of.
func (p *Plan) Spec() *spec.Spec { return p.spec }

// readManifests reads each manifest sp's variants push, once.
func readManifests(sp *spec.Spec) map[manifestKey]loadedManifest {
	out := map[manifestKey]loadedManifest{}
	for _, v := range sp.Variants {
		k := manifestKey{v.Manifest, v.App}
		if _, ok := out[k]; ok || v.Manifest == "" {
			continue
		}
		m, err := platform.LoadManifest(v.Manifest, v.App)
		out[k] = loadedManifest{m, err}
	}
	return out
}

// manifest is v's manifest as the plan read it, or why it could not be read.
func (p *Plan) manifest(v spec.Variant) (*platform.Manifest, error) {
	l, ok := p.manifests[manifestKey{v.Manifest, v.App}]
	if !ok {
		return nil, fmt.Errorf("manifest %s: not read with the plan (a spec without a landscape pushes nothing)", v.Manifest)
	}
	return l.m, l.err
}

// resolve is v's app as it is pushed with env (see overrides).
func (p *Plan) resolve(v spec.Variant, env map[string]string) (*platform.ResolvedApp, error) {
	m, err := p.manifest(v)
	if err != nil {
		return nil, err
	}
	return m.Resolve(overrides(v, env))
}

// checkManifest is what pushing v's app would refuse in its manifest (platform's
// Manifest.Check), nil when the push can start.
func (p *Plan) checkManifest(v spec.Variant) error {
	m, err := p.manifest(v)
	if err != nil {
		return err
	}
	return m.Check(overrides(v, v.Env))
}

// SpacePeak is the most a run holds in one space at once.
type SpacePeak struct {
	Space     string
	MemoryMB  int
	Instances int
	// LargestMB is the largest memory of one process; Guessed says some app's memory
	// is the foundation's default, assumed defaultMemoryMB.
	LargestMB int
	Guessed   bool
}

// String is the plan in one line, as printed before a run.
func (p *Plan) String() string {
	s := fmt.Sprintf("plan: %d variant(s) × %d level(s)", p.Variants, p.Levels)
	if p.Repeats > 1 {
		s += fmt.Sprintf(" × %d repeats, interleaved", p.Repeats)
	}
	s += fmt.Sprintf(", at least %s under load; levels: %s", p.Duration, p.Ramp)
	if len(p.Offered) > 0 {
		parts := make([]string, len(p.Offered))
		for i, x := range p.Offered {
			parts[i] = strconv.FormatFloat(x, 'f', -1, 64)
		}
		s += ", offering " + strings.Join(parts, ", ") + " req/s in all"
	}
	for _, sp := range []SpacePeak{p.Apps, p.Generators} {
		if sp.Space == "" {
			continue
		}
		guess := ""
		if sp.Guessed {
			guess = fmt.Sprintf(", %d MB assumed where a manifest leaves memory to the foundation", defaultMemoryMB)
		}
		s += fmt.Sprintf("; space %s at its peak: %d MB in %d instance(s)%s", sp.Space, sp.MemoryMB, sp.Instances, guess)
	}
	return s
}

// PlanOf works out sp's plan, reading the manifests of its variants (with a landscape)
// once; it does not judge it (Preflight does). The apps under test are all pushed before the first
// ramp and run until the end; the generators of one variant at a time run, up to the
// ramp's peak, beside the tunnel app. A ramp of app instances pushes every app with
// the first level's instances and scales one variant's app at a time up to the last
// level's, and back after its ramp.
func PlanOf(sp *spec.Spec) *Plan {
	ls := sp.Levels()
	levels := len(ls)
	repeats := max(sp.Repeat, 1)
	p := &Plan{Variants: len(sp.Variants), Levels: levels, Repeats: repeats, Duration: time.Duration(len(sp.Variants)*levels*repeats) * sp.Ramp.Hold,
		Ramp: sp.Ramp.Describe(), spec: sp}
	for _, l := range ls {
		if x, open := sp.Offered(l); open && sp.Ramp.Kind() != spec.LevelRates { // a ramp of rates names them already
			p.Offered = append(p.Offered, x)
		}
	}
	if sp.Landscape == nil {
		return p
	}
	extra := 0 // app instances a ramp of app instances adds above the first level, one variant at a time
	for _, l := range ls {
		extra = max(extra, l.AppInstances-ls[0].AppInstances)
	}
	extraMB := 0
	p.Apps.Space, p.Generators.Space = sp.Landscape.Apps.Space, sp.Landscape.Generators.Space
	p.manifests = readManifests(sp)
	for _, v := range sp.Variants {
		if v.Manifest == "" {
			continue
		}
		r, err := p.resolve(v, v.Env)
		if err != nil {
			continue // Preflight reports it
		}
		p.Pushes = append(p.Pushes, r.Name)
		mb := r.MemoryMB
		if mb == 0 {
			mb, p.Apps.Guessed = defaultMemoryMB, true
		}
		p.Apps.MemoryMB += mb * r.Instances
		p.Apps.Instances += r.Instances
		p.Apps.LargestMB = max(p.Apps.LargestMB, mb)
		extraMB = max(extraMB, extra*mb)
	}
	if extraMB > 0 {
		p.Apps.MemoryMB += extraMB
		p.Apps.Instances += extra
	}
	for _, v := range sp.Variants {
		p.Pushes = append(p.Pushes, GeneratorApp(sp, v.Name))
	}
	p.Pushes = append(p.Pushes, TunnelApp(sp))
	peak := sp.PeakGenerators()
	p.Generators.MemoryMB = generatorMemoryMB*peak + tunnelMemoryMB
	p.Generators.Instances = peak + 1
	if usesDrain(sp) {
		p.Generators.MemoryMB += drainMemoryMB
		p.Generators.Instances++
	}
	if sp.UsesRelay() {
		p.Pushes = append(p.Pushes, RelayApp(sp))
		p.Generators.MemoryMB += relayMemoryMB
		p.Generators.Instances++
	}
	p.Generators.LargestMB = generatorMemoryMB
	return p
}

// QuotaReader reads the quotas a plan must fit in (*platform.CF does).
type QuotaReader interface {
	Quotas(ctx context.Context, org string, spaces ...string) ([]platform.Quota, error)
}

var _ QuotaReader = (*platform.CF)(nil)

// limitErrors says where p exceeds sp's limits, one problem each with what to change
// and by how much.
func limitErrors(sp *spec.Spec, p *Plan) spec.Errors {
	var errs spec.Errors
	l := sp.Limits
	if l.Duration > 0 && p.Duration > l.Duration {
		reps, what := "", "variants or levels"
		if p.Repeats > 1 {
			reps, what = fmt.Sprintf(" × %d repeats", p.Repeats), "variants, levels or repeats"
		}
		errs = append(errs, sp.Errorf("limits.duration", "the plan runs at least %s under load (%d variant(s) × %d level(s)%s × %s hold), %s over the limit %s: drop %s, or shorten ramp.hold",
			p.Duration, p.Variants, p.Levels, reps, sp.Ramp.Hold, p.Duration-l.Duration, l.Duration, what))
	}
	mem, insts := p.Apps.MemoryMB+p.Generators.MemoryMB, p.Apps.Instances+p.Generators.Instances
	if l.MemoryMB > 0 && mem > l.MemoryMB {
		errs = append(errs, sp.Errorf("limits.memory", "the plan holds %d MB at its peak (apps %d MB, generators and tunnel %d MB), %d MB over the limit %d MB: %s",
			mem, p.Apps.MemoryMB, p.Generators.MemoryMB, mem-l.MemoryMB, l.MemoryMB, lessMemory(p)))
	}
	if l.Instances > 0 && insts > l.Instances {
		errs = append(errs, sp.Errorf("limits.instances", "the plan runs %d instances at its peak (apps %d, generators and tunnel %d), %d over the limit %d: drop variants or lower their instances, or the ramp's peak",
			insts, p.Apps.Instances, p.Generators.Instances, insts-l.Instances, l.Instances))
	}
	return errs
}

// quotaErrors says where p exceeds the quotas of the org and its spaces, likewise.
func quotaErrors(sp *spec.Spec, p *Plan, quotas []platform.Quota) spec.Errors {
	var errs spec.Errors
	mem, insts := p.Apps.MemoryMB+p.Generators.MemoryMB, p.Apps.Instances+p.Generators.Instances
	for _, q := range quotas {
		use, field := SpacePeak{MemoryMB: mem, Instances: insts, LargestMB: max(p.Apps.LargestMB, p.Generators.LargestMB)}, "landscape.org"
		switch q.Of {
		case "space " + p.Apps.Space:
			use, field = p.Apps, "landscape.apps"
		case "space " + p.Generators.Space:
			use, field = p.Generators, "landscape.generators"
		case "org " + sp.Landscape.Org:
		default:
			continue
		}
		held := heldBy(q.Apps, p.Pushes)
		if n := q.TotalMemoryMB; n != nil && use.MemoryMB+held.MemoryMB > *n {
			errs = append(errs, sp.Errorf(field, "the plan holds %d MB in %s at its peak%s, %d MB over the quota %q of %s (%d MB): %s",
				use.MemoryMB, where(q, p), held.memory(), use.MemoryMB+held.MemoryMB-*n, q.Name, q.Of, *n, lessMemory(p)))
		}
		if n := q.TotalInstances; n != nil && use.Instances+held.Instances > *n {
			errs = append(errs, sp.Errorf(field, "the plan runs %d instances in %s at its peak%s, %d over the quota %q of %s (%d): drop variants or lower their instances, or the ramp's peak",
				use.Instances, where(q, p), held.instances(), use.Instances+held.Instances-*n, q.Name, q.Of, *n))
		}
		if n := q.PerProcessMemoryMB; n != nil && use.LargestMB > *n {
			errs = append(errs, sp.Errorf(field, "an instance of %d MB exceeds the quota %q of %s (%d MB per process) by %d MB: lower the memory of the variants above it",
				use.LargestMB, q.Name, q.Of, *n, use.LargestMB-*n))
		}
	}
	return errs
}

// held is what started apps the run does not push hold against a quota already.
type held struct {
	MemoryMB, Instances int
	Apps                []string // "name (space)", as many as fit a line
	More                int      // apps beyond those named
}

// heldBy sums what apps other than those the run pushes hold (a pushed app of the same
// name is replaced, so it counts in the plan only).
func heldBy(apps []platform.AppUsage, pushes []string) held {
	var h held
	for _, a := range apps {
		if slices.Contains(pushes, a.Name) || a.Instances == 0 {
			continue
		}
		h.MemoryMB += a.MemoryMB
		h.Instances += a.Instances
		if len(h.Apps) < 3 {
			h.Apps = append(h.Apps, fmt.Sprintf("%s in %s", a.Name, a.Space))
		} else {
			h.More++
		}
	}
	return h
}

func (h held) names() string {
	s := strings.Join(h.Apps, ", ")
	if h.More > 0 {
		s += fmt.Sprintf(" and %d more", h.More)
	}
	return s
}

// memory and instances say what the apps hold, for a problem line; "" when none.
func (h held) memory() string {
	if h.Instances == 0 {
		return ""
	}
	return fmt.Sprintf(" beside %d MB the apps already running hold (%s)", h.MemoryMB, h.names())
}

func (h held) instances() string {
	if h.Instances == 0 {
		return ""
	}
	return fmt.Sprintf(" beside %d instances of the apps already running (%s)", h.Instances, h.names())
}

func where(q platform.Quota, _ *Plan) string {
	if strings.HasPrefix(q.Of, "org ") {
		return "both spaces"
	}
	return q.Of
}

// lessMemory says what lowers the peak memory: the apps under test all run for the
// whole run, the generators of one variant at a time.
func lessMemory(p *Plan) string {
	return fmt.Sprintf("drop variants (the %d apps under test run for the whole run), lower their memory or instances, or the ramp's peak (%d MB per generator instance)",
		p.Apps.Instances, generatorMemoryMB)
}
