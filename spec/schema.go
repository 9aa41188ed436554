package spec

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

const (
	maxVariants  = 16
	maxUsers     = 10_000
	maxWeight    = 1_000_000
	maxInstances = 1000
	// maxSteps keeps a step index in the uint8 that samples carry.
	maxSteps = 255
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

func checkName(s string) string {
	if namePattern.MatchString(s) {
		return ""
	}
	return fmt.Sprintf("must be lowercase letters, digits and dashes, starting with a letter or digit, at most 63 characters; got %s", quote(s))
}

// spec decodes the root mapping. Defaults are set before decoding, so a field that is
// absent keeps them; those that depend on another field are set after.
func (d *decoder) spec(v value) *Spec {
	s := &Spec{
		Checks:     DefaultChecks(),
		Collectors: Collectors{ContainerMetrics: ContainerMetrics{Interval: 15 * time.Second}, AppTimings: AppTimings{Path: "/_cfbench/timings"}},
		Export:     Export{Dir: DefaultExportDir, Tables: slices.Clone(AllTables)},
		Repeat:     1,
		Cleanup:    CleanupStop,
	}
	var manifests []value
	got, ok := d.object(v,
		required("version", d.version(&s.Version)),
		required("name", d.str(&s.Name, checkName)),
		optional("description", d.text(&s.Description)),
		optional("landscape", d.landscape(&s.Landscape)),
		optional("results_db", d.resultsDB(&s.ResultsDB)),
		required("variants", d.variants(&s.Variants, &manifests)),
		optional("repeat", d.integer(&s.Repeat, 1, maxRepeats)),
		required("workload", d.workload(&s.Workload)),
		required("ramp", d.ramp(&s.Ramp)),
		optional("checks", d.checks(&s.Checks)),
		optional("slo", d.slo(&s.SLO)),
		optional("collectors", d.collectors(&s.Collectors)),
		optional("export", d.export(&s.Export)),
		optional("cleanup", enum(d, &s.Cleanup, CleanupKeep, CleanupStop, CleanupDelete)),
		optional("limits", func(v value) {
			d.object(v,
				optional("duration", d.duration(&s.Limits.Duration, positive)),
				optional("memory", d.size(&s.Limits.MemoryMB)),
				optional("instances", d.integer(&s.Limits.Instances, 1, math.MaxInt32)),
			)
		}),
	)
	d.drainVariants(s)
	if _, has := got["landscape"]; ok && !has && !d.landscapeGiven && len(manifests) > 0 {
		d.errorf(manifests[0], "needs a landscape section (the org and spaces to push to); add one, or give the variant a url of a running target instead")
	}
	if ok {
		s.File, s.pos = d.file, d.pos
		d.errs = append(d.errs, levelRules(s, func(path string) bool { _, ok := d.pos[path]; return ok })...)
		d.errs = append(d.errs, faultRules(s)...)
	}
	return s
}

func (d *decoder) version(dst *int) func(value) {
	return func(v value) {
		var n int
		switch {
		case !scalar(v, "!!int") || v.node.Decode(&n) != nil:
			d.errorf(v, "must be the integer 1, got %s", describe(v.node))
		case n != 1:
			d.errorf(v, "unsupported version %d; this tool reads version 1", n)
		default:
			*dst = n
		}
	}
}

func (d *decoder) landscape(dst **Landscape) func(value) {
	return func(v value) {
		l := &Landscape{}
		*dst = l
		d.object(v,
			required("org", d.str(&l.Org)),
			required("apps", d.spaceRef(&l.Apps)),
			required("generators", d.spaceRef(&l.Generators)),
			optional("create_missing", d.boolean(&l.CreateMissing)),
			optional("services", d.services(&l.Services)),
		)
	}
}

func (d *decoder) services(dst *[]ServiceInstance) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		if !ok {
			return
		}
		names := map[string]value{}
		for _, it := range items {
			var si ServiceInstance
			got, ok := d.object(it,
				required("name", d.str(&si.Name)),
				required("offering", d.str(&si.Offering)),
				required("plan", d.str(&si.Plan)),
			)
			if ok {
				d.unique(names, got["name"], si.Name, "service instance")
				*dst = append(*dst, si)
			}
		}
	}
}

func (d *decoder) spaceRef(dst *SpaceRef) func(value) {
	return func(v value) {
		d.object(v,
			required("space", d.str(&dst.Space)),
			optional("isolation_segment", d.str(&dst.IsolationSegment)),
		)
	}
}

func (d *decoder) resultsDB(dst **ResultsDB) func(value) {
	return func(v value) {
		r := &ResultsDB{Relay: RelayAuto}
		*dst = r
		got, ok := d.object(v,
			required("service_instance", d.str(&r.ServiceInstance)),
			optional("offering", d.str(&r.Offering)),
			optional("plan", d.str(&r.Plan)),
			optional("relay", enum(d, &r.Relay, RelayAuto, RelayAlways, RelayNever)),
		)
		if !ok {
			return
		}
		d.requiredWith(got, v.path, "offering", "plan", "an offering")
		if p, ok := got["plan"]; ok && got["offering"].node == nil {
			d.errorf(p, "only valid with offering (the plan is for creating the instance)")
		}
	}
}

// requiredWith reports name as missing from got when the field cause is present; the
// error points at cause, the reason name is needed.
func (d *decoder) requiredWith(got fieldSet, path, cause, name, what string) {
	c, hasCause := got[cause]
	if _, has := got[name]; hasCause && !has {
		d.errorf(value{pos: c.pos, path: join(path, name)}, "is required with %s", what)
	}
}

// onlyWith reports each of names present in got as not allowed unless allowed.
func (d *decoder) onlyWith(got fieldSet, allowed bool, what string, names ...string) {
	for _, n := range names {
		if f, ok := got[n]; ok && !allowed {
			d.errorf(f, "only valid with %s", what)
		}
	}
}

func (d *decoder) variants(dst *[]Variant, manifests *[]value) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		switch {
		case !ok:
			return
		case len(items) == 0:
			d.errorf(v, "at least one variant is required")
		case len(items) > maxVariants:
			d.errorf(v, "at most %d variants are allowed, got %d", maxVariants, len(items))
		}
		names := map[string]value{}
		total, overCap := 0, false
		for _, it := range items {
			vr := Variant{Field: it.path}
			var axes []axis
			got, ok := d.object(it,
				required("name", d.str(&vr.Name, checkName)),
				optional("manifest", d.str(&vr.Manifest)),
				optional("app", d.str(&vr.App)),
				optional("url", d.str(&vr.URL, checkAbsURL)),
				optional("env", d.stringMap(&vr.Env, checkEnv)),
				optional("matrix", func(v value) { d.matrix(&axes, vr.Env)(v) }),
			)
			if !ok {
				continue
			}
			m, hasManifest := got["manifest"]
			u, hasURL := got["url"]
			switch {
			case hasManifest && hasURL:
				d.errorf(u, "give either manifest or url, not both")
			case !hasManifest && !hasURL:
				d.errorf(it, "needs either manifest (an app to push) or url (a running target)")
			}
			d.onlyWith(got, !hasURL, "manifest: a url target is not pushed", "app", "env", "matrix")
			if hasManifest {
				*manifests = append(*manifests, m)
			}
			expanded := []Variant{vr}
			if mx, has := got["matrix"]; has && len(axes) > 0 && !hasURL {
				if n := combinations(axes); total+n > maxMatrixVariants {
					if !overCap {
						d.errorf(mx, "makes %d variants (%s), %d in all with the variants before it; at most %d are allowed: drop values or split the spec",
							n, axisSizes(axes), total+n, maxMatrixVariants)
					}
					overCap = true
					total += n
					continue
				}
				expanded = expand(vr, axes)
				longest := slices.MaxFunc(expanded, func(a, b Variant) int { return len(a.Name) - len(b.Name) })
				if checkName(longest.Name) != "" {
					d.errorf(mx, "makes variant names longer than 63 characters (%s); shorten the variant's name to at most %d characters, or label the values ({label: value, ...})",
						longest.Name, 63-len(longest.MatrixSuffix()))
					expanded = nil
				}
			}
			total += len(expanded)
			for _, e := range expanded {
				d.unique(names, got["name"], e.Name, "variant name")
				*dst = append(*dst, e)
			}
		}
	}
}

// axisSizes is "3 × 2" for axes of 3 and 2 values.
func axisSizes(axes []axis) string {
	parts := make([]string, len(axes))
	for i, a := range axes {
		parts[i] = fmt.Sprintf("%d %s", len(a.values), a.key)
	}
	return strings.Join(parts, " × ")
}

// unique reports name if seen already has it; "" (invalid or missing) is skipped.
func (d *decoder) unique(seen map[string]value, v value, name, what string) {
	if name == "" {
		return
	}
	if first, dup := seen[name]; dup {
		d.errorf(v, "duplicate %s %q (first at line %d)", what, name, first.pos.Line)
		return
	}
	seen[name] = v
}

// names decodes a list of app names: non-empty strings, each once.
func (d *decoder) names(dst *[]string) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		if !ok {
			return
		}
		seen := map[string]value{}
		var out []string
		for _, it := range items {
			var name string
			d.str(&name)(it)
			d.unique(seen, it, name, "app")
			if name != "" {
				out = append(out, name)
			}
		}
		*dst = out
	}
}

func checkAbsURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf(`must be an absolute http or https URL like "http://127.0.0.1:8080", got %s`, quote(s))
	}
	return ""
}

func checkEnv(s, _ string) string {
	if s == "" || strings.ContainsAny(s, "=\x00") {
		return `environment variable names must be non-empty and contain no "="`
	}
	return ""
}

// workload decodes the workload; the rules between it and the ramp's kind of level are
// levelRules'.
func (d *decoder) workload(w *Workload) func(value) {
	return func(v value) {
		w.KeepAlive, w.Timeout = true, 10*time.Second
		got, ok := d.object(v,
			required("model", enum(d, &w.Model, ModelClosed, ModelOpen, ModelCount)),
			optional("users", d.integer(&w.Users, 1, maxUsers)),
			optional("think_time", d.duration(&w.ThinkTime, 0)),
			optional("rate", d.number(&w.Rate, func(x float64) bool { return x > 0 }, "a number greater than 0")),
			optional("rate_per", enum(d, &w.RatePer, RatePerInstance, RatePerTotal)),
			optional("max_in_flight", d.integer(&w.MaxInFlight, 1, maxInFlight)),
			optional("tick", d.durationAtMost(&w.Tick, minTick, maxTick)),
			optional("requests_per_instance", d.integer(&w.RequestsPerInstance, 1, math.MaxInt)),
			optional("keep_alive", d.boolean(&w.KeepAlive)),
			optional("timeout", d.duration(&w.Timeout, positive)),
			optional("correlation_header", d.str(&w.CorrelationHeader, checkHeaderName)),
			required("requests", d.requests(&w.Requests)),
		)
		if !ok || w.Model == "" {
			return
		}
		m := w.Model
		d.onlyWith(got, m == ModelClosed || m == ModelCount, "model closed or count", "users")
		d.onlyWith(got, m == ModelClosed, "model closed", "think_time")
		d.onlyWith(got, m == ModelOpen, "model open", "rate", "rate_per", "max_in_flight", "tick")
		d.onlyWith(got, m == ModelCount, "model count", "requests_per_instance")
		switch m {
		case ModelOpen:
			w.Users = 0 // rate is required unless the ramp lists rates: levelRules
			if w.RatePer == "" {
				w.RatePer = RatePerInstance
			}
			if w.MaxInFlight == 0 {
				w.MaxInFlight = DefaultMaxInFlight
			}
			if w.Tick == 0 {
				w.Tick = DefaultTick
			}
		case ModelCount:
			d.requiredWith(got, v.path, "model", "requests_per_instance", "model count")
		}
		if m != ModelOpen && w.Users == 0 {
			w.Users = 1
		}
	}
}

// methods are the request methods a workload may use.
var methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

func (d *decoder) requests(dst *[]Request) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		if ok && len(items) == 0 {
			d.errorf(v, "at least one request is required")
		}
		names := map[string]value{}
		for _, it := range items {
			r := Request{Method: http.MethodGet, Weight: 1}
			got, ok := d.object(it,
				required("name", d.str(&r.Name, checkName)),
				optional("method", enum(d, &r.Method, methods...)),
				required("path", d.str(&r.Path, checkPath)),
				optional("weight", d.integer(&r.Weight, 1, maxWeight)),
				optional("headers", d.stringMap(&r.Headers, checkHeader)),
				optional("body", d.text(&r.Body)),
			)
			if !ok {
				continue
			}
			d.unique(names, got["name"], r.Name, "request name")
			if b, ok := got["body"]; ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				d.errorf(b, "not allowed with method %s; use POST, PUT or PATCH to send a body", r.Method)
			}
			*dst = append(*dst, r)
		}
	}
}

func checkPath(s string) string {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Sprintf(`must start with "/", got %s`, quote(s))
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("must not contain spaces or control characters (percent-encode them), got %s", quote(s))
	}
	if _, err := url.ParseRequestURI(s); err != nil {
		return fmt.Sprintf("is not a valid request path: %s", quote(s))
	}
	return ""
}

func checkHeader(name, val string) string {
	if msg := checkHeaderName(name); msg != "" {
		return msg
	}
	if strings.ContainsFunc(val, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return "header values must not contain control characters such as line breaks"
	}
	return checkHeaderVars(val)
}

// checkHeaderName accepts an RFC 9110 token other than Host.
func checkHeaderName(s string) string {
	if strings.EqualFold(s, "Host") {
		return "Host is not allowed: the router routes requests by it, so it must stay the target's own"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return fmt.Sprintf("%s is not a valid header name", quote(s))
		}
	}
	if s == "" {
		return "header names must not be empty"
	}
	return ""
}

func (d *decoder) ramp(r *Ramp) func(value) {
	return func(v value) {
		r.Start, r.Step = 1, 1
		got, ok := d.object(v,
			optional("start", d.integer(&r.Start, 1, maxInstances)),
			optional("step", d.integer(&r.Step, 0, maxInstances)),
			optional("max", d.integer(&r.Max, 1, maxInstances)),
			optional("rates", d.rates(&r.Rates)),
			optional("users", d.ints(&r.Users, maxUsers*maxInstances)),
			optional("app_instances", d.ints(&r.AppInstances, maxInstances)),
			optional("generators", d.integer(&r.Generators, 1, maxInstances)),
			required("hold", d.duration(&r.Hold, time.Second)),
			optional("warmup", d.duration(&r.Warmup, 0)),
			optional("stop", d.stop(&r.Stop)),
			optional("faults", d.faults(&r.Faults)),
		)
		if !ok {
			return
		}
		d.rampLevels(v, got, r)
		if _, byMax := got["max"]; !byMax {
			r.Start, r.Step = 0, 0
			r.Generators = max(r.Generators, 1)
		}
		if w, ok := got["warmup"]; ok && r.Hold > 0 && r.Warmup >= r.Hold {
			d.errorf(w, "must be shorter than hold (%s), got %s", r.Hold, r.Warmup)
		}
		if _, byMax := got["max"]; !byMax {
			return
		}
		// A field that failed to decode kept its default or zero; the rules below skip
		// what they cannot judge instead of repeating the same problem.
		mx := got["max"]
		switch {
		case r.Max == 0:
		case r.Max < r.Start:
			d.errorf(mx, "must be at least start (%d), got %d", r.Start, r.Max)
		case r.Step == 0 && r.Max != r.Start:
			d.errorf(got["step"], "must be at least 1; 0 is only allowed when max equals start")
		case r.Step > 0 && 1+(r.Max-r.Start)/r.Step > maxSteps:
			d.errorf(mx, "makes %d ramp steps (1 + (max-start)/step), at most %d are allowed; raise step or lower max",
				1+(r.Max-r.Start)/r.Step, maxSteps)
		}
	}
}

func (d *decoder) stop(s *StopConditions) func(value) {
	return func(v value) {
		d.object(v,
			optional("p99_above", d.duration(&s.P99Above, positive)),
			optional("mean_above", d.duration(&s.MeanAbove, positive)),
			optional("app_cpu_above", d.number(&s.AppCPUAbove, func(x float64) bool { return x > 0 }, "a percentage of one core greater than 0 (100 = one core)")),
			optional("error_rate_above", d.number(&s.ErrorRateAbove, func(x float64) bool { return x > 0 && x <= 1 }, "a fraction greater than 0 and at most 1")),
			optional("plateau", d.number(&s.Plateau, func(x float64) bool { return x > 0 && x < 1 }, "a fraction between 0 and 1 (exclusive)")),
		)
	}
}

func (d *decoder) collectors(c *Collectors) func(value) {
	return func(v value) {
		d.object(v,
			optional("container_metrics", func(v value) {
				d.object(v, optional("interval", d.duration(&c.ContainerMetrics.Interval, time.Second)))
			}),
			optional("router_logs", d.routerLogs(&c.RouterLogs)),
			optional("app_timings", func(v value) {
				d.object(v,
					optional("enabled", d.boolean(&c.AppTimings.Enabled)),
					optional("path", d.str(&c.AppTimings.Path, checkPath)),
				)
			}),
		)
	}
}

func (d *decoder) routerLogs(dst **RouterLogs) func(value) {
	return func(v value) {
		rl := &RouterLogs{}
		*dst = rl
		got, ok := d.object(v,
			required("source", enum(d, &rl.Source, SourceElasticsearch, SourceFile, SourceDrain)),
			optional("url", d.str(&rl.URL, checkAbsURL)),
			optional("index", d.str(&rl.Index)),
			optional("fields", d.stringMap(&rl.Fields, func(k, v string) string {
				if !slices.Contains(RouterLogFields, k) {
					return fmt.Sprintf("unknown field %q: want one of %s", k, strings.Join(RouterLogFields, ", "))
				}
				if v == "" {
					return `must be a dotted field path, or "-" for a field the documents lack`
				}
				return ""
			})),
			optional("raw", d.boolean(&rl.Raw)),
			optional("delay", d.duration(&rl.Delay, 0)),
			optional("path", d.str(&rl.Path)),
			optional("max_documents", d.integer(&rl.MaxDocuments, 1, math.MaxInt)),
			optional("max_requests_per_second", d.number(&rl.MaxRequestsPerSecond, func(x float64) bool { return x > 0 }, "a number greater than 0")),
		)
		if !ok || rl.Source == "" {
			return
		}
		es, file := rl.Source == SourceElasticsearch, rl.Source == SourceFile
		d.onlyWith(got, es, "source elasticsearch", "url", "index", "fields", "raw")
		if _, set := got["delay"]; !set {
			rl.Delay = 30 * time.Second
		}
		d.onlyWith(got, file, "source file", "path")
		// A drain receives every line as it happens: no pull, no document budget.
		d.onlyWith(got, es || file, "source elasticsearch or file (a drain pulls nothing)", "max_documents", "max_requests_per_second")
		switch {
		case rl.Source == SourceDrain:
		case es:
			d.requiredWith(got, v.path, "source", "url", "source elasticsearch")
			if rl.Index == "" {
				rl.Index = "logs-app-*"
			}
		default:
			d.requiredWith(got, v.path, "source", "path", "source file")
		}
	}
}

// drainVariants reports each variant with a url: in a spec whose router logs come
// from a drain: the drain is bound to the apps the run pushes, and sees no other
// target's router lines.
func (d *decoder) drainVariants(s *Spec) {
	if rl := s.Collectors.RouterLogs; rl == nil || rl.Source != SourceDrain {
		return
	}
	for i, v := range s.Variants {
		if v.URL == "" || i > 0 && s.Variants[i-1].Field == v.Field {
			continue
		}
		p := d.pos[v.Field+".url"]
		d.add(p.line, p.col, v.Field+".url", "router_logs source drain sees only the apps the run pushes: give the variant a manifest, or take its router lines from another source")
	}
}

func (d *decoder) export(e *Export) func(value) {
	return func(v value) {
		d.object(v,
			optional("dir", d.str(&e.Dir)),
			optional("tables", d.tables(&e.Tables)),
		)
	}
}

func (d *decoder) tables(dst *[]string) func(value) {
	return func(v value) {
		items, ok := d.list(v)
		if !ok {
			return
		}
		if len(items) == 0 {
			d.errorf(v, "must name at least one table; leave tables out to export all")
			return
		}
		var tables []string
		seen := map[string]value{}
		for _, it := range items {
			var t string
			enum(d, &t, AllTables...)(it)
			d.unique(seen, it, t, "table")
			tables = append(tables, t)
		}
		*dst = tables
	}
}
