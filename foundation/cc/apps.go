package cc

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

func (s *Server) listApps(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var (
		out      []*App
		included obj
	)
	s.st.read(func(st *State) {
		for _, a := range sorted(st.Apps, func(a *App) time.Time { return a.Created }, func(a *App) string { return a.GUID }) {
			sp := st.Spaces[a.SpaceGUID]
			if q.match("names", a.Name) && q.match("guids", a.GUID) && q.match("space_guids", a.SpaceGUID) &&
				(sp == nil || q.match("organization_guids", sp.OrgGUID)) && q.match("stacks", a.Stack) && q.match("lifecycle_type", "buildpack") && q.labels(a.Metadata) {
				out = append(out, clone(a))
			}
		}
		included = s.includeSpaces(st, q, out)
	})
	return paginate(c, q, out, func(a *App) string { return a.Name }, func(a *App) time.Time { return a.Created }, s.renderApp, included)
}

// includeSpaces answers include=space and include=space.organization of app lists.
func (s *Server) includeSpaces(st *State, q *query, apps []*App) obj {
	inc := q.list("include")
	if inc == nil {
		return nil
	}
	out := obj{}
	seen := map[string]bool{}
	var spaces, orgs []any
	for _, a := range apps {
		sp := st.Spaces[a.SpaceGUID]
		if sp == nil || seen[sp.GUID] {
			continue
		}
		seen[sp.GUID] = true
		spaces = append(spaces, s.renderSpace(sp))
		if o := st.Orgs[sp.OrgGUID]; o != nil && !seen[o.GUID] {
			seen[o.GUID] = true
			orgs = append(orgs, s.renderOrg(o))
		}
	}
	if slices.Contains(inc, "space") || slices.Contains(inc, "space.organization") {
		out["spaces"] = nonNil(spaces)
	}
	if slices.Contains(inc, "space.organization") {
		out["organizations"] = nonNil(orgs)
	}
	return out
}

func nonNil(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func (s *Server) getApp(c *call) error {
	var a *App
	s.st.read(func(st *State) { a = st.Apps[c.r.PathValue("guid")] })
	if a == nil {
		return notFound("App")
	}
	return c.json(http.StatusOK, s.renderApp(a))
}

// appBody is the request of POST and PATCH /v3/apps.
type appBody struct {
	Name          *string           `json:"name"`
	Metadata      *metadataPatch    `json:"metadata"`
	Env           map[string]string `json:"environment_variables"`
	Lifecycle     *lifecycleBody    `json:"lifecycle"`
	Relationships struct {
		Space toOneBody `json:"space"`
	} `json:"relationships"`
}

type lifecycleBody struct {
	Type string `json:"type"`
	Data struct {
		Buildpacks []string `json:"buildpacks"`
		Stack      string   `json:"stack"`
	} `json:"data"`
}

func checkLifecycle(l *lifecycleBody) error {
	if l != nil && l.Type != "" && l.Type != "buildpack" {
		return unprocessable("Lifecycle type '%s' is not supported here: the local foundation stages buildpack apps only", l.Type)
	}
	return nil
}

func (s *Server) createApp(c *call) error {
	var body appBody
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == nil || *body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	if err := checkLifecycle(body.Lifecycle); err != nil {
		return err
	}
	var created string
	defer func() {
		if created != "" {
			s.logCreated(created)
		}
	}()
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		space := body.Relationships.Space.guid()
		if st.Spaces[space] == nil {
			return nil, unprocessable("Invalid space. Ensure that the space exists and you have access to it.")
		}
		if st.appByName(space, *body.Name) != nil {
			return nil, unprocessable("App with the name '%s' already exists.", *body.Name)
		}
		a := newApp(st, space, *body.Name)
		created = a.GUID
		st.audit("audit.app.create", a, map[string]any{"request": map[string]any{"name": a.Name}})
		a.Env = body.Env
		if body.Lifecycle != nil {
			a.Buildpacks = body.Lifecycle.Data.Buildpacks
		}
		return s.renderApp(a), nil
	})
}

// newApp adds a stopped app with a web process of the default scale.
func newApp(st *State, space, name string) *App {
	now := time.Now().UTC()
	a := &App{GUID: newGUID(), Name: name, SpaceGUID: space, State: AppStopped, Stack: DefaultStack, Created: now, Updated: now}
	st.Apps[a.GUID] = a
	p := &Process{GUID: a.GUID, AppGUID: a.GUID, SpaceGUID: space, Type: "web", Instances: defaultInstances, MemoryMB: defaultMemoryMB,
		DiskMB: defaultDiskMB, HealthCheck: defaultHealthType, Created: now, Updated: now}
	st.Processes[p.GUID] = p // as on CC, the web process shares the app's guid
	return a
}

func (s *Server) updateApp(c *call) error {
	var body appBody
	if err := c.decode(&body); err != nil {
		return err
	}
	if err := checkLifecycle(body.Lifecycle); err != nil {
		return err
	}
	if body.Metadata != nil {
		if err := body.Metadata.validate(); err != nil {
			return err
		}
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		if body.Name != nil && *body.Name != a.Name {
			if *body.Name == "" || st.appByName(a.SpaceGUID, *body.Name) != nil {
				return nil, unprocessable("App with the name '%s' already exists.", *body.Name)
			}
			a.Name = *body.Name
		}
		if body.Lifecycle != nil {
			a.Buildpacks = body.Lifecycle.Data.Buildpacks
		}
		a.Metadata.apply(body.Metadata)
		a.Updated = time.Now().UTC()
		st.audit("audit.app.update", a, nil)
		return s.renderApp(a), nil
	})
}

func (s *Server) deleteApp(c *call) error {
	jobErr, err := s.removeApp(c.r.Context(), c.r.PathValue("guid"))
	if err != nil {
		return err
	}
	return c.job("app.delete", jobErr)
}

// removeApp deletes the app guid: its processes stop, its bindings are unbound, its
// packages and droplets removed. err is a failure to delete (the app is kept); jobErr
// one of the broker's afterwards, which CC reports in the delete job.
func (s *Server) removeApp(ctx context.Context, guid string) (jobErr, err error) {
	var (
		procs    []string
		bindings []*Binding
		files    []string
	)
	err = s.st.update(func(st *State) error {
		if st.Apps[guid] == nil {
			return notFound("App")
		}
		for _, p := range st.Processes {
			if p.AppGUID == guid {
				procs = append(procs, p.GUID)
			}
		}
		for _, b := range st.Bindings {
			if b.AppGUID == guid {
				bindings = append(bindings, b)
			}
		}
		for _, p := range st.Packages {
			if p.AppGUID == guid {
				files = append(files, s.packagePath(p.GUID))
			}
		}
		for _, d := range st.Droplets {
			if d.AppGUID == guid {
				files = append(files, s.dropletDir(d.GUID))
			}
		}
		st.audit("audit.app.delete-request", st.Apps[guid], map[string]any{"request": map[string]any{"recursive": true}})
		st.deleteApp(guid)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		s.stopProcess(p)
	}
	for _, b := range bindings {
		if s.cfg.Broker != nil {
			if err := s.cfg.Broker.Unbind(ctx, b.InstanceGUID, b.GUID); err != nil && jobErr == nil {
				jobErr = err
			}
		}
	}
	for _, f := range files {
		os.RemoveAll(f)
	}
	return jobErr, nil
}

func (s *Server) packagePath(guid string) string {
	return filepath.Join(s.cfg.DataDir, "packages", guid+".zip")
}

func (s *Server) dropletDir(guid string) string {
	return filepath.Join(s.cfg.DataDir, "droplets", guid)
}

func (s *Server) startApp(c *call) error {
	resp, err := s.setState(c.r.PathValue("guid"), AppStarted, "audit.app.start")
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, resp)
}

func (s *Server) stopApp(c *call) error {
	resp, err := s.setState(c.r.PathValue("guid"), AppStopped, "audit.app.stop")
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, resp)
}

func (s *Server) restartApp(c *call) error {
	guid := c.r.PathValue("guid")
	if _, err := s.setState(guid, AppStopped, ""); err != nil {
		return err
	}
	resp, err := s.setState(guid, AppStarted, "audit.app.restart")
	if err != nil {
		return err
	}
	return c.json(http.StatusOK, resp)
}

// setState starts or stops an app and its processes, and records event (none if "").
func (s *Server) setState(guid, state, event string) (any, error) {
	var (
		resp  any
		specs []RunSpec
		procs []string
	)
	err := s.st.update(func(st *State) error {
		a := st.Apps[guid]
		if a == nil {
			return notFound("App")
		}
		if state == AppStarted && a.DropletGUID == "" {
			return unprocessable("Assign a droplet before starting this app.")
		}
		a.State, a.Updated = state, time.Now().UTC()
		if event != "" {
			st.audit(event, a, nil)
		}
		for _, p := range st.Processes {
			if p.AppGUID != guid {
				continue
			}
			procs = append(procs, p.GUID)
			if state == AppStarted {
				specs = append(specs, s.runSpec(st, p))
			}
		}
		resp = s.renderApp(a)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if state == AppStopped {
		for _, p := range procs {
			s.stopProcess(p)
		}
	}
	for _, spec := range specs {
		s.runProcess(spec)
	}
	return resp, nil
}

func (s *Server) runProcess(spec RunSpec) {
	s.runMu.Lock()
	s.running[spec.ProcessGUID] = spec
	s.runMu.Unlock()
	s.cfg.Runtime.Run(spec)
}

func (s *Server) stopProcess(guid string) {
	s.runMu.Lock()
	delete(s.running, guid)
	s.runMu.Unlock()
	s.cfg.Runtime.Stop(guid)
}

// Reconcile starts the processes of every started app, as after a restart of the
// foundation (instances get fresh env, like a restart on CF), and finalizes the
// deployments it interrupted.
func (s *Server) Reconcile() {
	s.finishInterruptedDeployments()
	var specs []RunSpec
	s.st.read(func(st *State) {
		for _, p := range st.Processes {
			if a := st.Apps[p.AppGUID]; a != nil && a.State == AppStarted && a.DropletGUID != "" {
				specs = append(specs, s.runSpec(st, p))
			}
		}
	})
	for _, spec := range specs {
		s.runProcess(spec)
	}
}

// runSpec is how process p of a started app runs: its droplet, command, scale, env
// (the app's, VCAP_APPLICATION and VCAP_SERVICES) and cell.
func (s *Server) runSpec(st *State, p *Process) RunSpec {
	a := st.Apps[p.AppGUID]
	d := st.Droplets[a.DropletGUID]
	cmd := p.Command
	if cmd == "" && d != nil {
		cmd = d.StartCommand
	}
	env := st.groupEnv("running", a.Env)
	env["VCAP_APPLICATION"] = string(mustJSON(s.vcapApplication(st, a, p)))
	env["VCAP_SERVICES"] = string(mustJSON(s.vcapServices(st, a.GUID)))
	timeout := time.Duration(p.Timeout) * time.Second
	return RunSpec{ProcessGUID: p.GUID, AppGUID: a.GUID, AppName: a.Name, ProcessType: p.Type,
		Dir: filepath.Join(s.dropletDir(a.DropletGUID), "app"), Command: cmd, Env: env,
		Instances: p.Instances, MemoryMB: p.MemoryMB, DiskMB: p.DiskMB, HealthCheck: p.HealthCheck, HealthPath: p.HealthPath,
		Timeout: timeout, IsolationSegment: st.segmentOf(a.SpaceGUID)}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values only
	}
	return b
}

func (s *Server) vcapApplication(st *State, a *App, p *Process) obj {
	sp := st.Spaces[a.SpaceGUID]
	org := st.Orgs[sp.OrgGUID]
	uris := []string{}
	for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
		if slices.Contains(r.Apps, a.GUID) {
			uris = append(uris, st.routeURL(r))
		}
	}
	return obj{
		"application_id": a.GUID, "application_name": a.Name, "application_uris": uris, "application_version": a.DropletGUID,
		"cf_api": s.baseURL, "limits": obj{"disk": p.DiskMB, "fds": 16384, "mem": p.MemoryMB},
		"name": a.Name, "organization_id": org.GUID, "organization_name": org.Name, "process_id": p.GUID, "process_type": p.Type,
		"space_id": sp.GUID, "space_name": sp.Name, "uris": uris, "users": nil, "version": a.DropletGUID,
	}
}

// vcapServices is VCAP_SERVICES of app: bindings grouped by offering label.
func (s *Server) vcapServices(st *State, app string) obj {
	out := obj{}
	var bindings []*Binding
	for _, b := range st.Bindings {
		if b.AppGUID == app {
			bindings = append(bindings, b)
		}
	}
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Created.Before(bindings[j].Created) })
	for _, b := range bindings {
		si := st.ServiceInstances[b.InstanceGUID]
		if si == nil {
			continue
		}
		if si.UserProvided {
			list, _ := out[typeUserProvided].([]obj)
			out[typeUserProvided] = append(list, userProvidedVCAP(b, si))
			continue
		}
		offering, plan := s.planByGUID(si.PlanGUID)
		label := offering.Name
		tags := append([]string{}, offering.Tags...)
		tags = append(tags, si.Tags...)
		list, _ := out[label].([]obj)
		out[label] = append(list, obj{
			"binding_guid": b.GUID, "binding_name": nullString(b.Name), "credentials": b.Credentials,
			"instance_guid": si.GUID, "instance_name": si.Name, "label": label, "name": si.Name, "plan": plan.Name,
			"provider": nil, "syslog_drain_url": nil, "tags": tags, "volume_mounts": []any{},
		})
	}
	return out
}

func (s *Server) appEnv(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return
		}
		env := obj{}
		for k, v := range a.Env {
			env[k] = v
		}
		p := st.process(a.GUID, "web")
		vcapApp := obj{}
		if p != nil {
			vcapApp = s.vcapApplication(st, a, p)
		}
		resp = obj{"staging_env_json": st.envGroupJSON("staging"), "running_env_json": st.envGroupJSON("running"), "environment_variables": env,
			"system_env_json": obj{"VCAP_SERVICES": s.vcapServices(st, a.GUID)}, "application_env_json": obj{"VCAP_APPLICATION": vcapApp}}
	})
	if resp == nil {
		return notFound("App")
	}
	return c.json(http.StatusOK, resp)
}

// renderEnvVars is the body of GET and PATCH /v3/apps/:guid/environment_variables.
func (s *Server) renderEnvVars(a *App) any {
	vars := obj{}
	for k, v := range a.Env {
		vars[k] = v
	}
	return obj{"var": vars, "links": obj{"self": link(s, "/v3/apps/"+a.GUID+"/environment_variables"), "app": link(s, "/v3/apps/"+a.GUID)}}
}

func (s *Server) appEnvVars(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			resp = s.renderEnvVars(a)
		}
	})
	if resp == nil {
		return notFound("App")
	}
	return c.json(http.StatusOK, resp)
}

// updateAppEnvVars merges the request's variables into the app's; a null value removes
// one. As on CF, running instances see the change only after a restart.
func (s *Server) updateAppEnvVars(c *call) error {
	var body struct {
		Var map[string]json.RawMessage `json:"var"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	set, unset := map[string]string{}, []string{}
	for k, raw := range body.Var {
		if p := envNameProblem(k); p != "" {
			return unprocessable("Var %s", p)
		}
		if string(raw) == "null" {
			unset = append(unset, k)
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return unprocessable("Non-string value in environment variable for key '%s', value '%s'", k, raw)
		}
		set[k] = v
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		// A new map: rendered copies of the app share the old one.
		env := make(map[string]string, len(a.Env)+len(set))
		for k, v := range a.Env {
			env[k] = v
		}
		for k, v := range set {
			env[k] = v
		}
		for _, k := range unset {
			delete(env, k)
		}
		a.Env, a.Updated = env, time.Now().UTC()
		st.audit("audit.app.update", a, map[string]any{"request": map[string]any{"environment_variables": "[PRIVATE DATA HIDDEN]"}})
		return s.renderEnvVars(a), nil
	})
}

// envNameProblem says why CC rejects an environment variable name ("" = it does not):
// the names it reserves.
func envNameProblem(k string) string {
	u := strings.ToUpper(k)
	switch {
	case k == "":
		return "key must be a minimum length of 1"
	case strings.HasPrefix(u, "VCAP_"):
		return "cannot start with VCAP_"
	case strings.HasPrefix(u, "VMC"):
		return "cannot start with VMC_"
	case u == "PORT":
		return "cannot set PORT"
	}
	return ""
}

func (s *Server) listProcesses(c *call) error { return s.processList(c, "") }

func (s *Server) appProcesses(c *call) error {
	var found bool
	s.st.read(func(st *State) { found = st.Apps[c.r.PathValue("guid")] != nil })
	if !found {
		return notFound("App")
	}
	return s.processList(c, c.r.PathValue("guid"))
}

// processList lists processes, of app when set.
func (s *Server) processList(c *call, app string) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Process
	s.st.read(func(st *State) {
		for _, p := range sorted(st.Processes, func(p *Process) time.Time { return p.Created }, func(p *Process) string { return p.GUID }) {
			a := st.Apps[p.AppGUID]
			if a == nil {
				continue
			}
			sp := st.Spaces[a.SpaceGUID]
			if (app == "" || p.AppGUID == app) && q.match("app_guids", p.AppGUID) && q.match("guids", p.GUID) &&
				q.match("types", p.Type) && q.match("space_guids", a.SpaceGUID) && (sp == nil || q.match("organization_guids", sp.OrgGUID)) {
				out = append(out, clone(p))
			}
		}
	})
	return paginate(c, q, out, func(p *Process) string { return p.Type }, func(p *Process) time.Time { return p.Created }, s.renderProcess, nil)
}

// processOf finds a process by guid, or by app guid and type when typ is set.
func (s *Server) processOf(guid, typ string) (*Process, string, bool) {
	var (
		p     *Process
		seg   string
		state bool
	)
	s.st.read(func(st *State) {
		if typ == "" {
			p = st.Processes[guid]
		} else if st.Apps[guid] != nil {
			p = st.process(guid, typ)
		}
		if p != nil {
			cp := *p
			p = &cp
			a := st.Apps[p.AppGUID]
			// CC shows the specified or else the detected command (cf app's start command).
			if d := st.Droplets[a.DropletGUID]; p.Command == "" && d != nil {
				p.Command = d.StartCommand
			}
			seg = st.segmentOf(a.SpaceGUID)
			state = a.State == AppStarted
		}
	})
	return p, seg, state
}

func (s *Server) getProcess(c *call) error {
	p, _, _ := s.processOf(c.r.PathValue("guid"), "")
	if p == nil {
		return notFound("Process")
	}
	return c.json(http.StatusOK, s.renderProcess(p))
}

func (s *Server) appProcess(c *call) error {
	p, _, _ := s.processOf(c.r.PathValue("guid"), c.r.PathValue("type"))
	if p == nil {
		return notFound("Process")
	}
	return c.json(http.StatusOK, s.renderProcess(p))
}

func (s *Server) processStats(c *call) error {
	return s.stats(c, c.r.PathValue("guid"), "")
}

func (s *Server) appProcessStats(c *call) error {
	return s.stats(c, c.r.PathValue("guid"), c.r.PathValue("type"))
}

// stats answers GET …/stats: one entry per desired instance, from the runtime; an
// instance the runtime does not report yet is STARTING, and a stopped app's are DOWN.
func (s *Server) stats(c *call, guid, typ string) error {
	p, seg, started := s.processOf(guid, typ)
	if p == nil {
		return notFound("Process")
	}
	now := time.Now()
	byIndex := map[int]Instance{}
	if started {
		for _, in := range s.cfg.Runtime.Instances(p.GUID) {
			byIndex[in.Index] = in
		}
	}
	resources := []any{}
	for i := 0; i < p.Instances; i++ {
		in, ok := byIndex[i]
		switch {
		case !started:
			in = Instance{Index: i, State: "DOWN"}
		case !ok:
			in = Instance{Index: i, State: "STARTING"}
		}
		resources = append(resources, renderStats(p, in, seg, now))
	}
	return c.json(http.StatusOK, obj{"resources": resources})
}

// scaleBody is the request of the scale actions.
type scaleBody struct {
	Instances *int `json:"instances"`
	MemoryMB  *int `json:"memory_in_mb"`
	DiskMB    *int `json:"disk_in_mb"`
}

// scaleRequest is a scale request as audit.app.process.scale records it.
func scaleRequest(b scaleBody) map[string]any {
	r := map[string]any{}
	if b.Instances != nil {
		r["instances"] = *b.Instances
	}
	if b.MemoryMB != nil {
		r["memory_in_mb"] = *b.MemoryMB
	}
	if b.DiskMB != nil {
		r["disk_in_mb"] = *b.DiskMB
	}
	return r
}

func (s *Server) scaleProcess(c *call) error { return s.scale(c, c.r.PathValue("guid"), "") }

func (s *Server) scaleAppProcess(c *call) error {
	return s.scale(c, c.r.PathValue("guid"), c.r.PathValue("type"))
}

// scale changes a process's scale. A new instance count applies at once; memory and
// disk apply at the next start, as on CF (the cf CLI restarts the app for them).
func (s *Server) scale(c *call, guid, typ string) error {
	var body scaleBody
	if err := c.decode(&body); err != nil {
		return err
	}
	switch {
	case body.Instances != nil && (*body.Instances < 0 || *body.Instances > 1000):
		return unprocessable("Instances must be greater than or equal to 0 and at most 1000")
	case body.MemoryMB != nil && *body.MemoryMB < 1:
		return unprocessable("Memory in mb must be greater than 0")
	case body.DiskMB != nil && *body.DiskMB < 1:
		return unprocessable("Disk in mb must be greater than 0")
	}
	var (
		resp    any
		procID  string
		started bool
		n       int
	)
	err := s.st.update(func(st *State) error {
		p := st.Processes[guid]
		if typ != "" {
			p = nil
			if st.Apps[guid] != nil {
				p = st.process(guid, typ)
			}
		}
		if p == nil {
			return notFound("Process")
		}
		if body.Instances != nil {
			p.Instances = *body.Instances
		}
		if body.MemoryMB != nil {
			p.MemoryMB = *body.MemoryMB
		}
		if body.DiskMB != nil {
			p.DiskMB = *body.DiskMB
		}
		p.Updated = time.Now().UTC()
		procID, n, started = p.GUID, p.Instances, st.Apps[p.AppGUID].State == AppStarted
		st.audit("audit.app.process.scale", st.Apps[p.AppGUID], map[string]any{"process_type": p.Type, "request": scaleRequest(body)})
		resp = s.renderProcess(p)
		return nil
	})
	if err != nil {
		return err
	}
	if started {
		s.runMu.Lock()
		spec, ok := s.running[procID]
		spec.Instances = n
		if ok {
			s.running[procID] = spec
		}
		s.runMu.Unlock()
		if ok {
			s.cfg.Runtime.Run(spec)
		}
	}
	return c.json(http.StatusAccepted, resp)
}

func (s *Server) currentDroplet(c *call) error {
	var (
		d     *Droplet
		found bool
	)
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			found = true
			d = st.Droplets[a.DropletGUID]
		}
	})
	switch {
	case !found:
		return notFound("App")
	case d == nil:
		return notFound("Droplet") // the cf CLI tolerates exactly this detail
	}
	return c.json(http.StatusOK, s.renderDroplet(d))
}

func (s *Server) currentDropletRelationship(c *call) error {
	var (
		guid  string
		found bool
	)
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			found, guid = true, a.DropletGUID
		}
	})
	if !found {
		return notFound("App")
	}
	if guid == "" {
		return notFound("Droplet")
	}
	return c.json(http.StatusOK, s.dropletRelationship(c.r.PathValue("guid"), guid))
}

func (s *Server) dropletRelationship(app, droplet string) any {
	return obj{"data": obj{"guid": droplet}, "links": obj{
		"self":    link(s, "/v3/apps/"+app+"/relationships/current_droplet"),
		"related": link(s, "/v3/apps/"+app+"/droplets/current")}}
}

func (s *Server) setCurrentDroplet(c *call) error {
	var body toOneBody
	if err := c.decode(&body); err != nil {
		return err
	}
	guid := body.guid()
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		d := st.Droplets[guid]
		if d == nil || d.AppGUID != a.GUID || d.State != BuildStaged {
			return nil, unprocessable("Unable to assign current droplet. Ensure the droplet exists and belongs to this app.")
		}
		a.DropletGUID, a.Updated = guid, time.Now().UTC()
		st.audit("audit.app.droplet.mapped", a, map[string]any{"request": map[string]any{"droplet_guid": guid}})
		return s.dropletRelationship(a.GUID, guid), nil
	})
}

func (s *Server) getDroplet(c *call) error {
	var d *Droplet
	s.st.read(func(st *State) { d = st.Droplets[c.r.PathValue("guid")] })
	if d == nil {
		return notFound("Droplet")
	}
	return c.json(http.StatusOK, s.renderDroplet(d))
}

func (s *Server) appRoutes(c *call) error {
	var found bool
	s.st.read(func(st *State) { found = st.Apps[c.r.PathValue("guid")] != nil })
	if !found {
		return notFound("App")
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.routeList(c, q, c.r.PathValue("guid"))
}

func (s *Server) listRoutes(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.routeList(c, q, "")
}

func (s *Server) routeList(c *call, q *query, app string) error {
	var (
		out    []*Route
		render func(*Route) any
	)
	s.st.read(func(st *State) {
		for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
			appOK := q.list("app_guids") == nil
			for _, g := range q.list("app_guids") {
				appOK = appOK || slices.Contains(r.Apps, g)
			}
			if (app == "" || slices.Contains(r.Apps, app)) && appOK && q.match("space_guids", r.SpaceGUID) && q.match("hosts", r.Host) &&
				q.match("domain_guids", r.DomainGUID) && q.match("guids", r.GUID) && q.match("paths", r.Path) && q.labels(r.Metadata) {
				cp := *r
				out = append(out, &cp)
			}
		}
		urls := map[string]string{}
		for _, r := range out {
			urls[r.GUID] = st.routeURL(r)
		}
		render = func(r *Route) any { return s.renderRoute(r, urls[r.GUID]) }
	})
	return paginate(c, q, out, func(r *Route) string { return r.Host }, func(r *Route) time.Time { return r.Created }, render, nil)
}

func (s *Server) getJob(c *call) error {
	var j *Job
	s.st.read(func(st *State) { j = st.Jobs[c.r.PathValue("guid")] })
	if j == nil {
		return notFound("Job")
	}
	return c.json(http.StatusOK, s.renderJob(j))
}

// pathRoute is one route of a host: its path (lowercase, "" for none), its app, and
// whether that app's destination protocol is http2.
type pathRoute struct {
	path, app string
	http2     bool
}

// Lookup resolves a request's host (host.domain, no port, any case) and path to the app
// whose web process serves it (its guid is the app's) and whether the router speaks
// HTTP/2 to it (its destination protocol is http2), as gorouter does: the route of
// the host whose path is the longest prefix of the request's path, compared
// case-insensitively and on whole segments (/foo matches /foo and /foo/bar, not
// /foobar). It takes no lock: the router calls it on every request.
func (s *Server) Lookup(host, path string) (appGUID string, http2, ok bool) {
	m := s.hosts.Load()
	if m == nil {
		return "", false, false
	}
	for _, r := range (*m)[strings.ToLower(host)] { // longest path first
		if r.path == "" || prefixSegments(path, r.path) {
			return r.app, r.http2, true
		}
	}
	return "", false, false
}

// prefixSegments reports whether path (any case) begins with the whole segments of
// prefix (lowercase, no trailing slash).
func prefixSegments(path, prefix string) bool {
	if len(path) < len(prefix) || !strings.EqualFold(path[:len(prefix)], prefix) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/'
}

func (s *Server) indexRoutes(st *State) {
	m := make(map[string][]pathRoute, len(st.Routes))
	for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
		if len(r.Apps) > 0 {
			host := strings.ToLower(st.routeHost(r))
			m[host] = append(m[host], pathRoute{path: strings.TrimSuffix(strings.ToLower(r.Path), "/"), app: r.Apps[0], http2: r.protocol(r.Apps[0]) == "http2"})
		}
	}
	for _, routes := range m {
		slices.SortStableFunc(routes, func(a, b pathRoute) int { return len(b.path) - len(a.path) })
	}
	s.hosts.Store(&m)
}

// AppMeta is an app's name and where it lives.
type AppMeta struct {
	Name, SpaceName, SpaceGUID, OrgName, OrgGUID string
}

// AppMeta looks an app up by guid, as log pipelines label lines with it.
func (s *Server) AppMeta(guid string) (m AppMeta, ok bool) {
	s.st.read(func(st *State) {
		a := st.Apps[guid]
		if a == nil {
			return
		}
		sp := st.Spaces[a.SpaceGUID]
		org := st.Orgs[sp.OrgGUID]
		m, ok = AppMeta{Name: a.Name, SpaceName: sp.Name, SpaceGUID: sp.GUID, OrgName: org.Name, OrgGUID: org.GUID}, true
	})
	return m, ok
}
