package cc

import (
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cf-benchmark/cf-benchmark/internal/bytesize"
)

// manifestRoutes registers the endpoints of applying a manifest.
func (s *Server) manifestRoutes() {
	s.handle("POST /v3/spaces/{guid}/actions/apply_manifest", s.applyManifest)
}

// manifest is the part of an app manifest the local foundation applies. Keys it does
// not know are ignored, as CC ignores keys it has no use for.
type manifest struct {
	Applications []manifestApp `yaml:"applications"`
}

type manifestApp struct {
	Name            string            `yaml:"name"`
	Buildpacks      []string          `yaml:"buildpacks"`
	Buildpack       string            `yaml:"buildpack"`
	Stack           string            `yaml:"stack"`
	Env             map[string]any    `yaml:"env"`
	Routes          []manifestRoute   `yaml:"routes"`
	NoRoute         bool              `yaml:"no-route"`
	RandomRoute     bool              `yaml:"random-route"`
	DefaultRoute    bool              `yaml:"default-route"`
	Services        []manifestService `yaml:"services"`
	Processes       []manifestProcess `yaml:"processes"`
	manifestProcess `yaml:",inline"`
}

type manifestProcess struct {
	Type            string `yaml:"type"`
	Command         string `yaml:"command"`
	Instances       *int   `yaml:"instances"`
	Memory          string `yaml:"memory"`
	DiskQuota       string `yaml:"disk_quota"`
	Disk            string `yaml:"disk-quota"`
	HealthCheckType string `yaml:"health-check-type"`
	HealthCheckPath string `yaml:"health-check-http-endpoint"`
	Timeout         int    `yaml:"timeout"`
}

type manifestRoute struct {
	Route string `yaml:"route"`
}

// manifestService is a service name, or a mapping with name and binding_name.
type manifestService struct {
	Name        string `yaml:"name"`
	BindingName string `yaml:"binding_name"`
}

func (m *manifestService) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		m.Name = n.Value
		return nil
	}
	type plain manifestService
	return n.Decode((*plain)(m))
}

// parseManifest reads and checks a manifest; errors name the app and the field, as
// CC's do ("For application 'x': …").
func parseManifest(r io.Reader) (*manifest, error) {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, badRequest("Request invalid due to parse error: %v", err)
	}
	var m manifest
	if err := yaml.Unmarshal(body, &m); err != nil {
		return nil, badRequest("Request invalid due to parse error: invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(m.Applications) == 0 {
		return nil, unprocessable("Manifest must have at least one application")
	}
	for i := range m.Applications {
		a := &m.Applications[i]
		if a.Name == "" {
			return nil, unprocessable("For application at index %d: Name must not be empty", i)
		}
		procs := a.processes()
		for _, p := range procs {
			if err := p.check(); err != nil {
				return nil, unprocessable("For application '%s': %s", a.Name, err)
			}
		}
		if a.Buildpack != "" && len(a.Buildpacks) > 0 {
			return nil, unprocessable("For application '%s': Buildpack and buildpacks cannot both be given", a.Name)
		}
		for k := range a.Env {
			if p := envNameProblem(k); p != "" {
				return nil, unprocessable("For application '%s': Env %s", a.Name, p)
			}
		}
	}
	return &m, nil
}

// processes are the app's processes: the top-level keys describe web unless processes
// lists it.
func (a *manifestApp) processes() []manifestProcess {
	web := a.manifestProcess
	web.Type = "web"
	out := []manifestProcess{web}
	for _, p := range a.Processes {
		if p.Type == "web" || p.Type == "" {
			p.Type = "web"
			out[0] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

func (p *manifestProcess) check() error {
	if p.Instances != nil && *p.Instances < 0 {
		return fmt.Errorf("Instances must be greater than or equal to 0")
	}
	for _, q := range []struct{ name, v string }{{"Memory", p.Memory}, {"Disk quota", p.DiskQuota}, {"Disk quota", p.Disk}} {
		if q.v == "" {
			continue
		}
		if _, err := bytesize.Megabytes(q.v); err != nil {
			// Cloud Controller's own words.
			return fmt.Errorf("%s must use a supported unit: B, K, KB, M, MB, G, GB, T, or TB (got %q)", q.name, q.v)
		}
	}
	switch p.HealthCheckType {
	case "", "port", "process", "http", "none":
	default:
		return fmt.Errorf("Health check type must be \"port\", \"process\", or \"http\"")
	}
	if p.HealthCheckPath != "" && !strings.HasPrefix(p.HealthCheckPath, "/") {
		return fmt.Errorf("Health check http endpoint must be a valid URI path")
	}
	return nil
}

// applyManifest creates or updates the manifest's apps, their processes, routes and
// service bindings in the space, then answers 202 with a finished job.
func (s *Server) applyManifest(c *call) error {
	space := c.r.PathValue("guid")
	var exists bool
	s.st.read(func(st *State) { exists = st.Spaces[space] != nil })
	if !exists {
		return notFound("Space")
	}
	m, err := parseManifest(c.r.Body)
	if err != nil {
		return err
	}
	var (
		binds   []pendingBinding
		created []string
	)
	err = s.st.update(func(st *State) error {
		for i := range m.Applications {
			b, err := s.applyApp(st, space, &m.Applications[i], &created)
			if err != nil {
				return err
			}
			binds = append(binds, b...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, app := range created {
		s.logCreated(app)
	}
	return c.job("app.apply_manifest", s.bindAll(c, binds))
}

// pendingBinding is a binding the manifest asks for, made after the state is saved
// because the broker call must not hold the state lock.
type pendingBinding struct {
	app, instance, name string
}

// applyApp applies m to its app in space, creating it (its guid goes to created) when
// there is none.
func (s *Server) applyApp(st *State, space string, m *manifestApp, created *[]string) ([]pendingBinding, error) {
	now := time.Now().UTC()
	a := st.appByName(space, m.Name)
	if a == nil {
		a = newApp(st, space, m.Name, s.cfg.DefaultAppMemoryMB)
		*created = append(*created, a.GUID)
		st.audit("audit.app.create", a, map[string]any{"request": map[string]any{"name": a.Name}})
	}
	if len(m.Buildpacks) > 0 {
		a.Buildpacks = m.Buildpacks
	} else if m.Buildpack != "" {
		a.Buildpacks = []string{m.Buildpack}
	}
	if m.Stack != "" {
		a.Stack = m.Stack
	}
	if len(m.Env) > 0 {
		// A new map: rendered copies of the app share the old one.
		env := make(map[string]string, len(a.Env)+len(m.Env))
		for k, v := range a.Env {
			env[k] = v
		}
		for k, v := range m.Env {
			env[k] = fmt.Sprint(v)
		}
		a.Env = env
	}
	a.Updated = now
	for _, mp := range m.processes() {
		p := st.process(a.GUID, mp.Type)
		if p == nil {
			p = &Process{GUID: newGUID(), AppGUID: a.GUID, SpaceGUID: a.SpaceGUID, Type: mp.Type, Instances: 0, MemoryMB: s.cfg.DefaultAppMemoryMB, DiskMB: defaultDiskMB,
				HealthCheck: "process", Created: now}
			st.Processes[p.GUID] = p
		}
		if mp.Command != "" {
			p.Command = mp.Command
		}
		if mp.Instances != nil {
			p.Instances = *mp.Instances
		}
		if mp.Memory != "" {
			p.MemoryMB, _ = bytesize.Megabytes(mp.Memory)
		}
		if d := mp.DiskQuota + mp.Disk; d != "" {
			p.DiskMB, _ = bytesize.Megabytes(d)
		}
		switch mp.HealthCheckType {
		case "none":
			p.HealthCheck = "process"
		case "":
		default:
			p.HealthCheck = mp.HealthCheckType
		}
		if mp.HealthCheckPath != "" {
			p.HealthPath = mp.HealthCheckPath
		}
		if mp.Timeout > 0 {
			p.Timeout = mp.Timeout
		}
		p.Updated = now
	}
	if err := s.applyRoutes(st, a, m); err != nil {
		return nil, err
	}
	st.audit("audit.app.apply_manifest", a, map[string]any{"request": map[string]any{"manifest": map[string]any{"applications": []any{map[string]any{"name": a.Name}}}}})
	var binds []pendingBinding
	for _, svc := range m.Services {
		si := st.instanceByName(space, svc.Name)
		if si == nil {
			return nil, unprocessable("For application '%s': Service instance '%s' not found", m.Name, svc.Name)
		}
		bound := false
		for _, b := range st.Bindings {
			bound = bound || b.AppGUID == a.GUID && b.InstanceGUID == si.GUID
		}
		if !bound {
			binds = append(binds, pendingBinding{app: a.GUID, instance: si.GUID, name: svc.BindingName})
		}
	}
	return binds, nil
}

func (s *Server) applyRoutes(st *State, a *App, m *manifestApp) error {
	if m.NoRoute {
		for _, r := range st.Routes {
			r.unmap(a.GUID)
		}
		return nil
	}
	// As CC: listed routes are mapped (others stay mapped); without routes, random-route
	// and default-route map one only to an app that has none. Nothing asked: no route
	// (the cf CLI asks for default-route itself).
	hosts := []string{}
	for _, r := range m.Routes {
		hosts = append(hosts, r.Route) // host and path keep their case, as on CC
	}
	if len(m.Routes) == 0 && !st.hasRoutes(a.GUID) {
		d := st.defaultDomain()
		if m.RandomRoute {
			hosts = append(hosts, randomHost(a.Name)+"."+d.Name)
		}
		if m.DefaultRoute {
			hosts = append(hosts, a.Name+"."+d.Name)
		}
	}
	now := time.Now().UTC()
	for _, url := range hosts {
		host, domain, ok := st.splitRoute(url)
		if !ok {
			return unprocessable("For application '%s': The route '%s' did not match any existing domains.", m.Name, url)
		}
		path := routePath(url)
		route := st.findRoute(host, domain.GUID, path)
		if route == nil && host == "" && domain.OrgGUID == "" {
			return errSharedDomainHost()
		}
		if route == nil {
			route = &Route{GUID: newGUID(), Host: host, Path: path, DomainGUID: domain.GUID, SpaceGUID: a.SpaceGUID, Created: now, Updated: now}
			st.Routes[route.GUID] = route
		}
		if route.SpaceGUID != a.SpaceGUID {
			return unprocessable("For application '%s': The route '%s' belongs to another space.", m.Name, url)
		}
		if !slices.Contains(route.Apps, a.GUID) {
			route.Apps = append(route.Apps, a.GUID)
		}
	}
	return nil
}

// hasRoutes reports whether any route is mapped to app.
func (st *State) hasRoutes(app string) bool {
	for _, r := range st.Routes {
		if slices.Contains(r.Apps, app) {
			return true
		}
	}
	return false
}

func (st *State) defaultDomain() *Domain {
	for _, d := range sorted(st.Domains, func(d *Domain) time.Time { return d.Created }, func(d *Domain) string { return d.GUID }) {
		return d
	}
	return &Domain{Name: "apps.localhost"}
}

// Words of random routes, as CC makes them: APP-ADJECTIVE-NOUN-XX.
var (
	routeAdjectives = strings.Fields("agile brave bright busy calm clever crisp eager fair fast fresh gentle happy keen " +
		"kind lively lucky merry nimble noble proud quick quiet rapid ready shiny sleek smart steady swift tidy wise")
	routeNouns = strings.Fields("badger bison cheetah crane dolphin eagle falcon ferret gecko heron ibex jaguar koala " +
		"lemur lynx marmot newt ocelot otter panda puffin quokka raven salmon tapir turtle walrus wombat yak zebra")
)

// randomHost is a random route's host for app: its name (lowercase, without what a DNS
// label may not hold, cut so that the host stays one label), an adjective, a noun and two random characters.
func randomHost(app string) string {
	b := make([]byte, 4)
	rand.Read(b)
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	tail := "-" + routeAdjectives[int(b[0])%len(routeAdjectives)] + "-" + routeNouns[int(b[1])%len(routeNouns)] +
		"-" + string(chars[int(b[2])%len(chars)]) + string(chars[int(b[3])%len(chars)])
	name := strings.Map(func(r rune) rune { // what a DNS label may hold
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, strings.ToLower(app))
	if max := 63 - len(tail); len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return name + tail
}

// routePath is the path of a manifest route, host.domain[/path] ("" for none).
func routePath(url string) string {
	if i := strings.IndexByte(url, '/'); i >= 0 {
		return url[i:]
	}
	return ""
}

// splitRoute splits host.domain[/path] on the longest known domain.
func (st *State) splitRoute(url string) (host string, d *Domain, ok bool) {
	url, _, _ = strings.Cut(url, "/")
	lower := strings.ToLower(url) // domains match in any case; the host keeps its own
	for _, dom := range st.Domains {
		name := strings.ToLower(dom.Name)
		switch {
		case lower == name:
			if d == nil || len(dom.Name) > len(d.Name) {
				host, d = "", dom
			}
		case strings.HasSuffix(lower, "."+name):
			if d == nil || len(dom.Name) > len(d.Name) {
				host, d = url[:len(url)-len(name)-1], dom
			}
		}
	}
	return host, d, d != nil
}

// bindAll makes the bindings a manifest asked for.
func (s *Server) bindAll(c *call, binds []pendingBinding) error {
	for _, b := range binds {
		// A user-provided instance's binding carries its own credentials, as
		// createBinding gives it: there is no broker to ask.
		var creds map[string]any
		userProvided := false
		s.st.read(func(st *State) {
			if si := st.ServiceInstances[b.instance]; si != nil && si.UserProvided {
				userProvided, creds = true, si.Credentials
			}
		})
		guid := newGUID()
		if !userProvided {
			if s.cfg.Broker == nil {
				return unprocessable("No service broker")
			}
			var err error
			if creds, err = s.cfg.Broker.Bind(c.r.Context(), b.instance, guid); err != nil {
				return unprocessable("Service broker error: %v", err)
			}
		}
		now := time.Now().UTC()
		err := s.st.update(func(st *State) error {
			st.Bindings[guid] = &Binding{GUID: guid, Name: b.name, AppGUID: b.app, InstanceGUID: b.instance, Credentials: creds, Created: now, Updated: now}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
