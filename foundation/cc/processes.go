// Processes: listing, stats and scaling (cf scale), and handing the runtime the
// instances a process should run.

package cc

import (
	"net/http"
	"path/filepath"
	"time"
)

// processRoutes registers the endpoints of processes, their stats and scaling.
func (s *Server) processRoutes() {
	s.handle("GET /v3/apps/{guid}/processes", s.appProcesses)
	s.handle("GET /v3/apps/{guid}/processes/{type}", s.appProcess)
	s.handle("GET /v3/apps/{guid}/processes/{type}/stats", s.appProcessStats)
	s.handle("POST /v3/apps/{guid}/processes/{type}/actions/scale", s.scaleAppProcess)
	s.handle("GET /v3/processes", s.listProcesses)
	s.handle("GET /v3/processes/{guid}", s.getProcess)
	s.handle("GET /v3/processes/{guid}/stats", s.processStats)
	s.handle("GET /v3/processes/{guid}/sidecars", s.emptyList)
	s.handle("POST /v3/processes/{guid}/actions/scale", s.scaleProcess)
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
		cmd = d.processTypes()[p.Type]
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
				p.Command = d.processTypes()[p.Type]
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
