package cc

import (
	"net/http"
	"time"
)

// Deployments (cf restart/restage/push --strategy rolling, cf cancel-deployment): a
// deployment moves an app to a droplet by replacing its web instances a few at a time
// (Runtime.Roll), so that the app keeps serving. Unlike CC, the web process keeps its
// guid (it is the app's, which the router and Log Cache key on) instead of a new
// process taking over; new_processes names it. Revisions and the canary strategy are
// not implemented and are refused with a 422.

// Deployment status values and reasons, as CC names them.
const (
	deployActive    = "ACTIVE"
	deployFinalized = "FINALIZED"

	reasonDeploying  = "DEPLOYING"
	reasonDeployed   = "DEPLOYED"
	reasonCanceling  = "CANCELING"
	reasonCanceled   = "CANCELED"
	reasonSuperseded = "SUPERSEDED"
)

// Deployment is an app's move to a droplet.
type Deployment struct {
	GUID            string    `json:"guid"`
	AppGUID         string    `json:"app_guid"`
	ProcessGUID     string    `json:"process_guid"` // the web process it rolls
	DropletGUID     string    `json:"droplet_guid"`
	PreviousDroplet string    `json:"previous_droplet_guid,omitempty"`
	Strategy        string    `json:"strategy"`
	MaxInFlight     int       `json:"max_in_flight"`
	WebInstances    *int      `json:"web_instances,omitempty"`
	MemoryMB        *int      `json:"memory_in_mb,omitempty"`
	DiskMB          *int      `json:"disk_in_mb,omitempty"`
	Value           string    `json:"status_value"`
	Reason          string    `json:"status_reason"`
	LastChange      time.Time `json:"last_status_change"`
	LastHealthy     time.Time `json:"last_successful_healthcheck"`
	// Roll counts the rolls started for it; a roll's end counts only if it is the
	// latest (a cancel's roll back supersedes the forward roll).
	Roll    int       `json:"roll"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

func (d *Deployment) setStatus(value, reason string, now time.Time) {
	d.Value, d.Reason, d.LastChange, d.Updated = value, reason, now, now
}

func (s *Server) deploymentRoutes() {
	s.handle("POST /v3/deployments", s.createDeployment)
	s.handle("GET /v3/deployments", s.listDeployments)
	s.handle("GET /v3/deployments/{guid}", s.getDeployment)
	s.handle("POST /v3/deployments/{guid}/actions/cancel", s.cancelDeployment)
	s.handle("POST /v3/deployments/{guid}/actions/continue", s.continueDeployment)
}

func (s *Server) renderDeployment(d *Deployment) any {
	state := d.Reason // the deprecated state: DEPLOYING, DEPLOYED, CANCELING or CANCELED
	if d.Reason == reasonSuperseded {
		state = reasonDeployed
	}
	opts := obj{"max_in_flight": d.MaxInFlight}
	if d.WebInstances != nil {
		opts["web_instances"] = *d.WebInstances
	}
	if d.MemoryMB != nil {
		opts["memory_in_mb"] = *d.MemoryMB
	}
	if d.DiskMB != nil {
		opts["disk_in_mb"] = *d.DiskMB
	}
	links := obj{"self": link(s, "/v3/deployments/"+d.GUID), "app": link(s, "/v3/apps/"+d.AppGUID)}
	if d.Value == deployActive {
		cancel := link(s, "/v3/deployments/"+d.GUID+"/actions/cancel")
		cancel["method"] = "POST"
		links["cancel"] = cancel
	}
	return obj{"guid": d.GUID, "state": state,
		"status": obj{"value": d.Value, "reason": d.Reason,
			"details": obj{"last_successful_healthcheck": ts(d.LastHealthy), "last_status_change": ts(d.LastChange)}},
		"strategy": d.Strategy, "options": opts,
		"droplet": obj{"guid": d.DropletGUID}, "previous_droplet": obj{"guid": nullString(d.PreviousDroplet)},
		"new_processes": []any{obj{"guid": d.ProcessGUID, "type": "web"}},
		"revision":      nil,
		"created_at":    ts(d.Created), "updated_at": ts(d.Updated), "metadata": metadata(),
		"relationships": obj{"app": rel(d.AppGUID)}, "links": links}
}

type deploymentBody struct {
	Droplet *struct {
		GUID string `json:"guid"`
	} `json:"droplet"`
	Revision *struct {
		GUID string `json:"guid"`
	} `json:"revision"`
	Strategy string `json:"strategy"`
	Options  struct {
		MaxInFlight  *int `json:"max_in_flight"`
		WebInstances *int `json:"web_instances"`
		MemoryMB     *int `json:"memory_in_mb"`
		DiskMB       *int `json:"disk_in_mb"`
		Canary       any  `json:"canary"`
	} `json:"options"`
	Relationships struct {
		App toOneBody `json:"app"`
	} `json:"relationships"`
}

func (b *deploymentBody) check() error {
	o := b.Options
	switch {
	case b.Revision != nil:
		return unprocessable("Revisions are not supported by the local foundation: give a droplet, or none for the app's current droplet.")
	case b.Strategy == "canary" || o.Canary != nil:
		return unprocessable("The canary strategy is not supported by the local foundation: use rolling.")
	case b.Strategy != "" && b.Strategy != "rolling":
		return unprocessable("Strategy '%s' is not a supported deployment strategy", b.Strategy)
	case o.MaxInFlight != nil && *o.MaxInFlight < 1:
		return unprocessable("Max in flight must be an integer greater than 0")
	case o.WebInstances != nil && (*o.WebInstances < 0 || *o.WebInstances > 1000):
		return unprocessable("Web instances must be greater than or equal to 0 and at most 1000")
	case o.MemoryMB != nil && *o.MemoryMB < 1:
		return unprocessable("Memory in mb must be greater than 0")
	case o.DiskMB != nil && *o.DiskMB < 1:
		return unprocessable("Disk in mb must be greater than 0")
	}
	return nil
}

// createDeployment points the app at the droplet and rolls its web process onto it;
// its other processes restart at once. A stopped app is started, and its deployment
// is DEPLOYED at once, as CC does. An ACTIVE deployment of the app is SUPERSEDED.
func (s *Server) createDeployment(c *call) error {
	var body deploymentBody
	if err := c.decode(&body); err != nil {
		return err
	}
	if err := body.check(); err != nil {
		return err
	}
	var (
		d      *Deployment
		resp   any
		web    RunSpec
		others []RunSpec
		roll   bool
	)
	err := s.st.update(func(st *State) error {
		a := st.Apps[body.Relationships.App.guid()]
		if a == nil {
			return unprocessable("Unable to use app. Ensure that the app exists and you have access to it.")
		}
		droplet := a.DropletGUID
		if body.Droplet != nil {
			droplet = body.Droplet.GUID
		}
		if dr := st.Droplets[droplet]; dr == nil || dr.AppGUID != a.GUID || dr.State != BuildStaged {
			return unprocessable("Invalid droplet. Please specify a droplet in the request or set a current droplet for the app.")
		}
		p := st.process(a.GUID, "web")
		if p == nil {
			return unprocessable("The app has no web process to deploy.")
		}
		now := time.Now().UTC()
		for _, old := range st.Deployments {
			if old.AppGUID == a.GUID && old.Value == deployActive {
				old.setStatus(deployFinalized, reasonSuperseded, now)
			}
		}
		o := body.Options
		d = &Deployment{GUID: newGUID(), AppGUID: a.GUID, ProcessGUID: p.GUID, DropletGUID: droplet, PreviousDroplet: a.DropletGUID,
			Strategy: "rolling", MaxInFlight: 1, WebInstances: o.WebInstances, MemoryMB: o.MemoryMB, DiskMB: o.DiskMB,
			Value: deployActive, Reason: reasonDeploying, LastChange: now, LastHealthy: now, Roll: 1, Created: now, Updated: now}
		if o.MaxInFlight != nil {
			d.MaxInFlight = *o.MaxInFlight
		}
		if o.WebInstances != nil {
			p.Instances = *o.WebInstances
		}
		if o.MemoryMB != nil {
			p.MemoryMB = *o.MemoryMB
		}
		if o.DiskMB != nil {
			p.DiskMB = *o.DiskMB
		}
		roll = a.State == AppStarted
		if !roll {
			d.setStatus(deployFinalized, reasonDeployed, now)
		}
		a.DropletGUID, a.State, a.Updated = droplet, AppStarted, now
		st.Deployments[d.GUID] = d
		st.audit("audit.app.deployment.create", a, map[string]any{"deployment_guid": d.GUID, "droplet_guid": droplet,
			"strategy": d.Strategy, "request": map[string]any{"max_in_flight": d.MaxInFlight}})
		for _, q := range st.Processes {
			if q.AppGUID != a.GUID {
				continue
			}
			if q.GUID == p.GUID {
				web = s.runSpec(st, q)
			} else {
				others = append(others, s.runSpec(st, q))
			}
		}
		resp = s.renderDeployment(d)
		return nil
	})
	if err != nil {
		return err
	}
	for _, spec := range others {
		s.runProcess(spec)
	}
	if roll {
		s.rollProcess(web, d.GUID, d.MaxInFlight, 1)
	} else {
		s.runProcess(web)
	}
	return c.json(http.StatusCreated, resp)
}

// rollProcess rolls the web process onto spec and records the roll's end in the
// deployment when roll is still its latest.
func (s *Server) rollProcess(spec RunSpec, deployment string, maxInFlight, roll int) {
	s.runMu.Lock()
	s.running[spec.ProcessGUID] = spec
	s.runMu.Unlock()
	s.cfg.Runtime.Roll(spec, maxInFlight, func(err error) { s.rollEnded(deployment, roll, err) })
}

func (s *Server) rollEnded(guid string, roll int, err error) {
	uerr := s.st.update(func(st *State) error {
		d := st.Deployments[guid]
		if d == nil || d.Roll != roll || d.Value != deployActive {
			return nil
		}
		now := time.Now().UTC()
		switch {
		case d.Reason == reasonCanceling || err != nil:
			// Rolled back, or something else (a stop, a restart, a scale) took the
			// process over: it does not run this deployment's droplet by its doing.
			d.setStatus(deployFinalized, reasonCanceled, now)
		default:
			d.LastHealthy = now
			d.setStatus(deployFinalized, reasonDeployed, now)
		}
		return nil
	})
	if uerr != nil {
		s.cfg.Logger.Error("record the end of a deployment", "deployment", guid, "err", uerr)
	}
}

// finishInterruptedDeployments finalizes the deployments a stopped foundation left
// ACTIVE: Reconcile then starts every process on the app's current droplet, the
// deployment's (DEPLOYED) or, when it was being cancelled, the previous one (CANCELED).
func (s *Server) finishInterruptedDeployments() {
	err := s.st.update(func(st *State) error {
		now := time.Now().UTC()
		for _, d := range st.Deployments {
			switch {
			case d.Value != deployActive:
			case d.Reason == reasonCanceling:
				d.setStatus(deployFinalized, reasonCanceled, now)
			default:
				d.setStatus(deployFinalized, reasonDeployed, now)
			}
		}
		return nil
	})
	if err != nil {
		s.cfg.Logger.Error("finalize interrupted deployments", "err", err)
	}
}

func (s *Server) listDeployments(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Deployment
	s.st.read(func(st *State) {
		for _, d := range sorted(st.Deployments, func(d *Deployment) time.Time { return d.Created }, func(d *Deployment) string { return d.GUID }) {
			if st.Apps[d.AppGUID] == nil {
				continue // the app was deleted, and its deployments with it
			}
			state := d.Reason
			if state == reasonSuperseded {
				state = reasonDeployed
			}
			if q.match("guids", d.GUID) && q.match("app_guids", d.AppGUID) && q.match("status_values", d.Value) &&
				q.match("status_reasons", d.Reason) && q.match("states", state) {
				out = append(out, clone(d))
			}
		}
	})
	return paginate(c, q, out, func(d *Deployment) string { return d.GUID }, func(d *Deployment) time.Time { return d.Created }, s.renderDeployment, nil)
}

func (s *Server) getDeployment(c *call) error {
	var d *Deployment
	s.st.read(func(st *State) {
		if x := st.Deployments[c.r.PathValue("guid")]; x != nil && st.Apps[x.AppGUID] != nil {
			d = clone(x)
		}
	})
	if d == nil {
		return notFound("Deployment")
	}
	return c.json(http.StatusOK, s.renderDeployment(d))
}

// cancelDeployment rolls the web process back to the previous droplet, as CC does; the
// deployment is CANCELING until the roll back ends, then CANCELED.
func (s *Server) cancelDeployment(c *call) error {
	var (
		spec RunSpec
		d    Deployment
	)
	err := s.st.update(func(st *State) error {
		x := st.Deployments[c.r.PathValue("guid")]
		if x == nil || st.Apps[x.AppGUID] == nil {
			return notFound("Deployment")
		}
		if x.Value != deployActive || x.Reason != reasonDeploying {
			return unprocessable("Cannot cancel a deployment with status: %s and reason: %s", x.Value, x.Reason)
		}
		a := st.Apps[x.AppGUID]
		now := time.Now().UTC()
		x.Roll++
		x.setStatus(deployActive, reasonCanceling, now)
		if x.PreviousDroplet != "" && st.Droplets[x.PreviousDroplet] != nil {
			a.DropletGUID, a.Updated = x.PreviousDroplet, now
		}
		st.audit("audit.app.deployment.cancel", a, map[string]any{"deployment_guid": x.GUID, "droplet_guid": a.DropletGUID})
		p := st.Processes[x.ProcessGUID]
		if p == nil {
			x.setStatus(deployFinalized, reasonCanceled, now)
			return nil
		}
		spec, d = s.runSpec(st, p), *x
		return nil
	})
	if err != nil {
		return err
	}
	if d.GUID != "" {
		s.rollProcess(spec, d.GUID, d.MaxInFlight, d.Roll)
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// continueDeployment is for paused canary deployments, which this foundation does not
// make.
func (s *Server) continueDeployment(c *call) error {
	var value, reason string
	s.st.read(func(st *State) {
		if d := st.Deployments[c.r.PathValue("guid")]; d != nil && st.Apps[d.AppGUID] != nil {
			value, reason = d.Value, d.Reason
		}
	})
	if value == "" {
		return notFound("Deployment")
	}
	return unprocessable("Cannot continue a deployment with status: %s and reason: %s", value, reason)
}
