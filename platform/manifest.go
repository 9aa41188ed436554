package platform

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cf-benchmark/cf-benchmark/internal/bytesize"
)

// manifestApp is one application of a CF app manifest (cf CLI manifest v1), checked.
type manifestApp struct {
	Name     string
	Path     string            // as written; "" = the manifest's directory
	Env      map[string]string // values as strings, as CF gives them to the app
	Services []string          // service instance names to bind
	// NoRoute or RandomRoute: the push does not ask for the default route, which the
	// cf CLI asks for otherwise (CC ignores it for an app with routes listed).
	NoRoute, RandomRoute bool
	raw                  map[string]any // the app as written, for apply_manifest
}

// ManifestError is a manifest that cannot be pushed; its message names the file, the
// app and the field.
type ManifestError struct {
	File, App, Field string // App and Field are "" when the problem is the file's
	Line             int    // 0 = unknown
	Problem          string
}

func (e *ManifestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "manifest %s", e.File)
	if e.App != "" {
		fmt.Fprintf(&b, ": app %s", e.App)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Problem)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// parseManifest reads a manifest's applications and checks every key PushApp or
// CC acts on, so that a mistake is reported with its file, app and field before
// anything is pushed. Keys it does not know pass on to CC, which ignores what it does
// not know either.
func parseManifest(file string, data []byte) ([]*manifestApp, error) {
	fail := func(n *yaml.Node, format string, args ...any) error {
		e := &ManifestError{File: file, Problem: fmt.Sprintf(format, args...)}
		if n != nil {
			e.Line = n.Line
		}
		return e
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fail(nil, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fail(nil, "empty: want applications: [...]")
	}
	top := deref(doc.Content[0])
	if top.Kind != yaml.MappingNode {
		return nil, fail(top, "want a mapping with applications: [...], got %s", kindName(top))
	}
	apps := lookup(top, "applications")
	if apps == nil {
		return nil, fail(top, "no applications")
	}
	if apps.Kind != yaml.SequenceNode || len(apps.Content) == 0 {
		return nil, &ManifestError{File: file, Field: "applications", Line: apps.Line, Problem: "want a list of at least one app"}
	}
	var out []*manifestApp
	seen := map[string]bool{}
	for i, n := range apps.Content {
		a, err := parseApp(deref(n))
		if err != nil {
			fe := &fieldError{problem: err.Error()}
			errors.As(err, &fe)
			app := fmt.Sprintf("#%d", i+1)
			if a != nil && a.Name != "" {
				app = strconv.Quote(a.Name)
			}
			return nil, &ManifestError{File: file, App: app, Field: fe.field, Line: fe.line, Problem: fe.problem}
		}
		if seen[a.Name] {
			return nil, &ManifestError{File: file, App: strconv.Quote(a.Name), Field: "name", Line: n.Line, Problem: "listed twice"}
		}
		seen[a.Name] = true
		out = append(out, a)
	}
	return out, nil
}

// fieldError is a bad value in one app.
type fieldError struct {
	field, problem string
	line           int
}

func (e *fieldError) Error() string { return e.field + ": " + e.problem }

func badField(n *yaml.Node, field, format string, args ...any) *fieldError {
	return &fieldError{field: field, problem: fmt.Sprintf(format, args...), line: n.Line}
}

// parseApp checks one application. It returns the app as far as it got with a
// *fieldError, so that the error can name the app.
func parseApp(n *yaml.Node) (*manifestApp, error) {
	a := &manifestApp{}
	if n.Kind != yaml.MappingNode {
		return a, badField(n, "(app)", "want a mapping, got %s", kindName(n))
	}
	// The name first, so that every later error can name the app.
	name := lookup(n, "name")
	if name == nil {
		return a, badField(n, "name", "missing")
	}
	if err := decodeScalar(name, "name", &a.Name); err != nil {
		return a, err
	}
	if a.Name == "" {
		return a, badField(name, "name", "must not be empty")
	}
	if err := checkProcess(n, ""); err != nil {
		return a, err
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i].Value, deref(n.Content[i+1])
		var err error
		switch key {
		case "path", "stack", "buildpack":
			var s string
			err = decodeScalar(v, key, &s)
			if key == "path" {
				a.Path = s
			}
		case "buildpacks":
			var l []string
			if v.Kind != yaml.SequenceNode || v.Decode(&l) != nil {
				err = badField(v, key, "want a list of buildpack names, got %s", kindName(v))
			}
		case "env":
			a.Env, err = parseEnv(v)
		case "routes":
			err = checkRoutes(v)
		case "no-route", "random-route", "default-route":
			var b bool
			if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
				err = badField(v, key, "want true or false, got %s", describe(v))
			}
			switch key {
			case "no-route":
				a.NoRoute = b
			case "random-route":
				a.RandomRoute = b
			}
		case "services":
			a.Services, err = parseServices(v)
		case "processes":
			err = checkProcesses(v)
		case "docker":
			err = badField(v, key, "docker images are not supported: PushApp uploads the app's files")
		}
		if err != nil {
			return a, err
		}
	}
	if lookup(n, "buildpack") != nil && lookup(n, "buildpacks") != nil {
		return a, badField(lookup(n, "buildpack"), "buildpack", "give buildpacks or buildpack, not both")
	}
	if err := checkVariables(n); err != nil {
		return a, err
	}
	var raw map[string]any
	if err := n.Decode(&raw); err != nil {
		return a, badField(n, "(app)", "%v", err)
	}
	a.raw = raw
	return a, nil
}

var healthChecks = []string{"port", "process", "http", "none"}

// checkProcess checks the keys that describe a process, at the top of an app (the web
// process) or in its processes list (prefix "processes[i].").
func checkProcess(n *yaml.Node, prefix string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, v := n.Content[i].Value, deref(n.Content[i+1])
		field := prefix + key
		switch key {
		case "type", "command", "health-check-http-endpoint":
			var s string
			if err := decodeScalar(v, field, &s); err != nil {
				return err
			}
			if key == "health-check-http-endpoint" && !strings.HasPrefix(s, "/") {
				return badField(v, field, "want a path starting with /, got %q", s)
			}
		case "memory", "disk_quota", "disk-quota", "log-rate-limit-per-second":
			var s string
			if err := decodeScalar(v, field, &s); err != nil {
				return err
			}
			if _, err := bytesize.Megabytes(s); err != nil {
				return badField(v, field, "%v", err)
			}
		case "instances", "timeout", "health-check-invocation-timeout":
			least := 1 // seconds
			if key == "instances" {
				least = 0
			}
			if n, err := strconv.Atoi(v.Value); v.Kind != yaml.ScalarNode || err != nil || n < least {
				return badField(v, field, "want a whole number of at least %d, got %s", least, describe(v))
			}
		case "health-check-type":
			if v.Kind != yaml.ScalarNode || !slices.Contains(healthChecks, v.Value) {
				return badField(v, field, "want one of %s, got %s", strings.Join(healthChecks, ", "), describe(v))
			}
		}
	}
	return nil
}

func checkProcesses(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return badField(v, "processes", "want a list of processes, got %s", kindName(v))
	}
	for i, p := range v.Content {
		p = deref(p)
		prefix := fmt.Sprintf("processes[%d].", i)
		if p.Kind != yaml.MappingNode {
			return badField(p, prefix[:len(prefix)-1], "want a mapping, got %s", kindName(p))
		}
		if t := lookup(p, "type"); t == nil || t.Value == "" {
			return badField(p, prefix+"type", "missing")
		}
		if err := checkProcess(p, prefix); err != nil {
			return err
		}
	}
	return nil
}

// parseEnv reads env: a mapping of names to strings, numbers or booleans, which CF
// hands to the app as strings.
func parseEnv(v *yaml.Node) (map[string]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, badField(v, "env", "want a mapping of names to values, got %s", kindName(v))
	}
	env := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], deref(v.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, badField(k, "env", "want variable names, got %s", describe(k))
		}
		if val.Kind != yaml.ScalarNode {
			return nil, badField(val, "env."+k.Value, "want a string, number or boolean, got %s", kindName(val))
		}
		env[k.Value] = val.Value
		if val.Tag == "!!null" {
			env[k.Value] = ""
		}
	}
	return env, nil
}

func checkRoutes(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return badField(v, "routes", "want a list of {route: host.domain}, got %s", kindName(v))
	}
	for i, r := range v.Content {
		r = deref(r)
		field := fmt.Sprintf("routes[%d].route", i)
		route := lookup(r, "route")
		if r.Kind != yaml.MappingNode || route == nil {
			return badField(r, field, "missing: want {route: host.domain}")
		}
		var s string
		if err := decodeScalar(route, field, &s); err != nil {
			return err
		}
		if s == "" || strings.Contains(s, "://") {
			return badField(route, field, "want host.domain[/path] (no scheme), got %q", s)
		}
	}
	return nil
}

// parseServices reads services: names, or mappings with a name (and binding_name,
// parameters).
func parseServices(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, badField(v, "services", "want a list of service instance names, got %s", kindName(v))
	}
	var names []string
	for i, s := range v.Content {
		s = deref(s)
		field := fmt.Sprintf("services[%d]", i)
		name := s
		if s.Kind == yaml.MappingNode {
			field += ".name"
			if name = lookup(s, "name"); name == nil {
				return nil, badField(s, field, "missing")
			}
		}
		var n string
		if err := decodeScalar(name, field, &n); err != nil {
			return nil, err
		}
		if n == "" {
			return nil, badField(name, field, "must not be empty")
		}
		names = append(names, n)
	}
	return names, nil
}

var variableRE = regexp.MustCompile(`\(\(([-\w./]+)\)\)`)

// checkVariables rejects ((variables)): the cf CLI fills them from --vars, which a
// benchmark spec has no place for.
func checkVariables(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if m := variableRE.FindStringSubmatch(n.Value); m != nil {
			return badField(n, "(("+m[1]+"))", "manifest variables are not substituted: write the value in")
		}
	}
	for _, c := range n.Content {
		if err := checkVariables(c); err != nil {
			return err
		}
	}
	return nil
}

func decodeScalar(v *yaml.Node, field string, out *string) error {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return badField(v, field, "want a string, got %s", describe(v))
	}
	*out = v.Value
	return nil
}

// lookup returns the value of key in mapping n, aliases resolved; nil when absent.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return "a value"
	}
	return "nothing"
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}

// pick returns the app to push: the named one, or the only one.
func pick(file string, apps []*manifestApp, name string) (*manifestApp, error) {
	var names []string
	for _, a := range apps {
		if a.Name == name || name == "" && len(apps) == 1 {
			return a, nil
		}
		names = append(names, a.Name)
	}
	if name == "" {
		return nil, &ManifestError{File: file, Problem: fmt.Sprintf("lists %d apps (%s): name the one to push", len(apps), strings.Join(names, ", "))}
	}
	return nil, &ManifestError{File: file, Problem: fmt.Sprintf("has no app %q (it lists %s)", name, strings.Join(names, ", "))}
}

// Overrides change a manifest's app for one variant before it is pushed: a spec's env,
// a matrix cell's env, memory and instances, and the name suffix that keeps the apps of
// one manifest apart.
type Overrides struct {
	// Env is set over the manifest's env.
	Env map[string]string
	// Memory (a CF size, 800M) and Instances (at least 1) replace the web process's;
	// "" and 0 keep the manifest's.
	Memory    string
	Instances int
	// NameSuffix is appended to the app's name and to the host of every route the
	// manifest lists ("-60": bulletin-java-60, bulletin-java-60.apps.example.com), so
	// that the apps of one manifest neither replace each other nor share a route.
	NameSuffix string
}

// ResolvedApp is a manifest's app as PushApp pushes it, after the overrides.
type ResolvedApp struct {
	Name string
	// Manifest is the manifest applied to the space: the app as written without its
	// path, with the overrides, env merged and the default route asked for.
	Manifest []byte
	// Env is the manifest's env with the overrides' over it.
	Env map[string]string
	// MemoryMB is the web process's memory limit; 0 when the manifest leaves it to the
	// foundation's default.
	MemoryMB int
	// Instances is the web process's instances (1 when the manifest says nothing, as
	// on Cloud Foundry).
	Instances int
}

// maxHost is the longest DNS label, which a route's host is.
const maxHost = 63

// resolve applies o to a: the app as written without path (a local path means nothing
// to CC), env overlaid, memory and instances replaced (also in a web entry of
// processes, which would win otherwise), name and route hosts suffixed, and the default
// route asked for unless no-route or random-route, as the cf CLI does.
func (a *manifestApp) resolve(file string, o Overrides) (*ResolvedApp, error) {
	fail := func(field, format string, args ...any) error {
		return &ManifestError{File: file, App: strconv.Quote(a.Name), Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	app := maps.Clone(a.raw)
	delete(app, "path")
	r := &ResolvedApp{Name: a.Name + o.NameSuffix, Env: map[string]string{}, Instances: 1}
	app["name"] = r.Name
	maps.Copy(r.Env, a.Env)
	maps.Copy(r.Env, o.Env)
	if len(r.Env) > 0 {
		app["env"] = r.Env
	}
	if o.Memory != "" {
		if _, err := bytesize.Megabytes(o.Memory); err != nil {
			return nil, fail("memory", "%v", err)
		}
		app["memory"] = o.Memory
	}
	if o.Instances < 0 {
		return nil, fail("instances", "want at least 0, got %d", o.Instances)
	}
	if o.Instances > 0 {
		app["instances"] = o.Instances
	}
	if procs, ok := app["processes"].([]any); ok && (o.Memory != "" || o.Instances > 0) {
		out := make([]any, len(procs))
		for i, p := range procs {
			out[i] = p
			if pm, ok := p.(map[string]any); ok && fmt.Sprint(pm["type"]) == "web" {
				pm = maps.Clone(pm)
				if o.Memory != "" {
					delete(pm, "memory")
				}
				if o.Instances > 0 {
					delete(pm, "instances")
				}
				out[i] = pm
			}
		}
		app["processes"] = out
	}
	r.MemoryMB, r.Instances = webProcess(app)
	if routes, ok := app["routes"].([]any); ok {
		out := make([]any, len(routes))
		for i, rt := range routes {
			rm, _ := rt.(map[string]any)
			route := fmt.Sprint(rm["route"])
			host, rest, _ := strings.Cut(route, ".")
			host += o.NameSuffix
			if len(host) > maxHost {
				return nil, fail(fmt.Sprintf("routes[%d].route", i), "the host %q is longer than %d characters (with the matrix's suffix %q): shorten it", host, maxHost, o.NameSuffix)
			}
			rm = maps.Clone(rm)
			rm["route"] = host + "." + rest
			out[i] = rm
		}
		app["routes"] = out
	} else if !a.NoRoute && !a.RandomRoute {
		if host := hostOf(r.Name); len(host) > maxHost {
			return nil, fail("name", "the default route's host %q would be longer than %d characters: shorten the name, or list routes", host, maxHost)
		}
	}
	if !a.NoRoute && !a.RandomRoute {
		// As the cf CLI asks; CC ignores it for an app with routes listed.
		app["default-route"] = true
	}
	body, err := yaml.Marshal(map[string]any{"applications": []any{app}})
	if err != nil {
		return nil, fail("", "%v", err)
	}
	r.Manifest = body
	return r, nil
}

// hostOf is the host Cloud Foundry makes of an app name for its default route:
// lowercase, runs of other characters than letters and digits as one dash.
func hostOf(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		default:
			dash = true
		}
	}
	return b.String()
}

// webProcess is the memory (MB, 0 = the foundation's default) and instances (1 when
// unset) of app's web process: a web entry of processes wins over the app's own keys,
// as in Cloud Foundry. The values were checked by parseApp.
func webProcess(app map[string]any) (memoryMB, instances int) {
	instances = 1
	read := func(m map[string]any) {
		if v, ok := m["memory"]; ok {
			if mb, err := bytesize.Megabytes(fmt.Sprint(v)); err == nil {
				memoryMB = mb
			}
		}
		if v, ok := m["instances"]; ok {
			if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil {
				instances = n
			}
		}
	}
	read(app)
	if procs, ok := app["processes"].([]any); ok {
		for _, p := range procs {
			if pm, ok := p.(map[string]any); ok && fmt.Sprint(pm["type"]) == "web" {
				read(pm)
			}
		}
	}
	return memoryMB, instances
}
