package cc

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// appRoutes registers the endpoints of apps and their lifecycle.
func (s *Server) appRoutes() {
	s.handle("GET /v3/apps", s.listApps)
	s.handle("POST /v3/apps", s.createApp)
	s.handle("GET /v3/apps/{guid}", s.getApp)
	s.handle("PATCH /v3/apps/{guid}", s.updateApp)
	s.handle("DELETE /v3/apps/{guid}", s.deleteApp)
	s.handle("POST /v3/apps/{guid}/actions/start", s.startApp)
	s.handle("POST /v3/apps/{guid}/actions/stop", s.stopApp)
	s.handle("POST /v3/apps/{guid}/actions/restart", s.restartApp)
}

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
	if err := body.Metadata.validate(); err != nil {
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
		a := newApp(st, space, *body.Name, s.cfg.DefaultAppMemoryMB)
		created = a.GUID
		st.audit("audit.app.create", a, map[string]any{"request": map[string]any{"name": a.Name}})
		a.Env = body.Env
		if body.Lifecycle != nil {
			a.Buildpacks = body.Lifecycle.Data.Buildpacks
		}
		a.Metadata.apply(body.Metadata)
		return s.renderApp(a), nil
	})
}

// newApp adds a stopped app with a web process of the default scale.
func newApp(st *State, space, name string, memoryMB int) *App {
	now := time.Now().UTC()
	a := &App{GUID: newGUID(), Name: name, SpaceGUID: space, State: AppStopped, Stack: DefaultStack, Created: now, Updated: now}
	st.Apps[a.GUID] = a
	p := &Process{GUID: a.GUID, AppGUID: a.GUID, SpaceGUID: space, Type: "web", Instances: defaultInstances, MemoryMB: memoryMB,
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
	if err := body.Metadata.validate(); err != nil {
		return err
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
