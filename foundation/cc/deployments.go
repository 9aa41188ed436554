package cc

import (
	"math"
	"net/http"
	"time"
)

// Deployments (cf restart/restage/push --strategy rolling|canary, cf
// continue-deployment, cf cancel-deployment): a deployment moves an app to a droplet by
// replacing its web instances a few at a time (Runtime.Roll), so that the app keeps
// serving. Unlike CC, the web process keeps its guid (it is the app's, which the router
// and Log Cache key on) instead of a new process taking over; new_processes names it.
// A canary deployment replaces the instances of its step's lowest indexes (CC's
// canary_step_plan: one instance, or each step's instance_weight of the instances),
// pauses (ACTIVE/PAUSED) until continued, and replaces the rest after its last step;
// unlike CC, which runs the canaries beside all but one of the old instances, the
// process keeps its instance count. Revisions are not implemented and are refused with
// a 422.

// Deployment status values and reasons, as CC names them.
const (
	deployActive    = "ACTIVE"
	deployFinalized = "FINALIZED"

	reasonDeploying  = "DEPLOYING"
	reasonPaused     = "PAUSED"
	reasonDeployed   = "DEPLOYED"
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
	Strategy        string    `json:"strategy"` // rolling or canary
	MaxInFlight     int       `json:"max_in_flight"`
	WebInstances    *int      `json:"web_instances,omitempty"`
	MemoryMB        *int      `json:"memory_in_mb,omitempty"`
	DiskMB          *int      `json:"disk_in_mb,omitempty"`
	Value           string    `json:"status_value"`
	Reason          string    `json:"status_reason"`
	LastChange      time.Time `json:"last_status_change"`
	LastHealthy     time.Time `json:"last_successful_healthcheck"`
	// CanaryWeights are the canary steps' instance weights as asked for (none: one
	// step of one instance); CanaryStep is the current step, from 1.
	CanaryWeights []int `json:"canary_weights,omitempty"`
	CanaryStep    int   `json:"canary_step,omitempty"`
	// Replaced is how many of the lowest indexes a canary deployment has rolled so
	// far; Finishing is set once its last step is continued, so that the end of the
	// roll is DEPLOYED rather than PAUSED.
	Replaced  int  `json:"replaced,omitempty"`
	Finishing bool `json:"finishing,omitempty"`
	// Roll counts the rolls started for it; a roll's end counts only if it is the
	// latest (a cancel's roll back supersedes the forward roll).
	Roll    int       `json:"roll"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

func (d *Deployment) setStatus(value, reason string, now time.Time) {
	d.Value, d.Reason, d.LastChange, d.Updated = value, reason, now, now
}

func (d *Deployment) canary() bool { return d.Strategy == "canary" }

// canaryPlan is how many instances run the new droplet at each canary step, as CC's
// canary_step_plan works it out: one without weights, else each step's weight of the
// instances, rounded, at least one.
func canaryPlan(weights []int, instances int) []int {
	if len(weights) == 0 {
		return []int{min(1, instances)}
	}
	plan := make([]int, len(weights))
	for i, w := range weights {
		plan[i] = min(max(int(math.Round(float64(instances)*float64(w)/100)), 1), instances)
	}
	return plan
}

func (s *Server) deploymentRoutes() {
	s.handle("POST /v3/deployments", s.createDeployment)
	s.handle("GET /v3/deployments", s.listDeployments)
	s.handle("GET /v3/deployments/{guid}", s.getDeployment)
	s.handle("POST /v3/deployments/{guid}/actions/cancel", s.cancelDeployment)
	s.handle("POST /v3/deployments/{guid}/actions/continue", s.continueDeployment)
}

func (s *Server) renderDeployment(d *Deployment) any {
	state := d.Reason // the deprecated state: DEPLOYING, PAUSED, DEPLOYED or CANCELED
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
	if d.Reason == reasonPaused {
		cont := link(s, "/v3/deployments/"+d.GUID+"/actions/continue")
		cont["method"] = "POST"
		links["continue"] = cont
	}
	status := obj{"value": d.Value, "reason": d.Reason,
		"details": obj{"last_successful_healthcheck": ts(d.LastHealthy), "last_status_change": ts(d.LastChange)}}
	if d.canary() {
		status["canary"] = obj{"steps": obj{"current": d.CanaryStep, "total": max(len(d.CanaryWeights), 1)}}
		if len(d.CanaryWeights) > 0 {
			steps := make([]any, len(d.CanaryWeights))
			for i, w := range d.CanaryWeights {
				steps[i] = obj{"instance_weight": w}
			}
			opts["canary"] = obj{"steps": steps}
		}
	}
	return obj{"guid": d.GUID, "state": state, "status": status,
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
		Canary       *struct {
			Steps []struct {
				InstanceWeight *int `json:"instance_weight"`
			} `json:"steps"`
		} `json:"canary"`
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
	case b.Strategy != "" && b.Strategy != "rolling" && b.Strategy != "canary":
		return unprocessable("Strategy '%s' is not a supported deployment strategy", b.Strategy)
	case o.Canary != nil && b.Strategy != "canary":
		return unprocessable("Options canary are only valid for Canary deployments")
	case o.MaxInFlight != nil && *o.MaxInFlight < 1:
		return unprocessable("Max in flight must be an integer greater than 0")
	case o.WebInstances != nil && (*o.WebInstances < 0 || *o.WebInstances > 1000):
		return unprocessable("Web instances must be greater than or equal to 0 and at most 1000")
	case o.MemoryMB != nil && *o.MemoryMB < 1:
		return unprocessable("Memory in mb must be greater than 0")
	case o.DiskMB != nil && *o.DiskMB < 1:
		return unprocessable("Disk in mb must be greater than 0")
	}
	prev := 0
	for _, step := range b.canaryWeights() {
		switch {
		case step < 0:
			return unprocessable(`Options canary.steps missing key: "instance_weight"`)
		case step < 1 || step > 100:
			return unprocessable("Options canary.steps.instance weight must be an Integer between 1-100 (inclusive)")
		case step < prev:
			return unprocessable("Options canary.steps.instance weight must be sorted in ascending order")
		}
		prev = step
	}
	return nil
}

// canaryWeights are the canary steps' instance weights, -1 for a step without one.
func (b *deploymentBody) canaryWeights() []int {
	if b.Options.Canary == nil {
		return nil
	}
	var w []int
	for _, step := range b.Options.Canary.Steps {
		if step.InstanceWeight == nil {
			w = append(w, -1)
		} else {
			w = append(w, *step.InstanceWeight)
		}
	}
	return w
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
		to     int // the instances rolled: all, or a canary's first step
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
		if body.Strategy == "canary" {
			d.Strategy, d.CanaryWeights, d.CanaryStep = "canary", body.canaryWeights(), 1
		}
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
		to = p.Instances
		if d.canary() {
			to = canaryPlan(d.CanaryWeights, p.Instances)[0]
			d.Replaced = to
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
		s.rollProcess(web, d.GUID, d.MaxInFlight, 0, to, 1)
	} else {
		s.runProcess(web)
	}
	return c.json(http.StatusCreated, resp)
}

// rollProcess rolls the web process's indexes from ≤ i < to onto spec and records the
// roll's end in the deployment when roll is still its latest.
func (s *Server) rollProcess(spec RunSpec, deployment string, maxInFlight, from, to, roll int) {
	s.runMu.Lock()
	s.running[spec.ProcessGUID] = spec
	s.runMu.Unlock()
	s.cfg.Runtime.Roll(spec, maxInFlight, from, to, func(err error) { s.rollEnded(deployment, roll, err) })
}

func (s *Server) rollEnded(guid string, roll int, err error) {
	uerr := s.st.update(func(st *State) error {
		d := st.Deployments[guid]
		if d == nil || d.Roll != roll || d.Value != deployActive {
			return nil
		}
		now := time.Now().UTC()
		switch {
		case err != nil:
			// Something else (a stop, a restart, a scale) took the process over: it
			// does not run this deployment's droplet by its doing.
			d.setStatus(deployFinalized, reasonCanceled, now)
		case d.canary() && !d.Finishing:
			d.LastHealthy = now
			d.setStatus(deployActive, reasonPaused, now)
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
// deployment's (DEPLOYED).
func (s *Server) finishInterruptedDeployments() {
	err := s.st.update(func(st *State) error {
		now := time.Now().UTC()
		for _, d := range st.Deployments {
			if d.Value == deployActive {
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

// cancelDeployment rolls the web process back to the previous droplet and finalizes the
// deployment CANCELED at once: CC's deployment updater does so on its next tick, once
// it has scaled the prior process back up, whether or not that process is healthy (a
// cf push whose droplet and previous droplet both crash must end).
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
		if x.Value != deployActive || (x.Reason != reasonDeploying && x.Reason != reasonPaused) {
			return unprocessable("Cannot cancel a deployment with status: %s and reason: %s", x.Value, x.Reason)
		}
		a := st.Apps[x.AppGUID]
		now := time.Now().UTC()
		x.Roll++
		x.setStatus(deployFinalized, reasonCanceled, now)
		if x.PreviousDroplet != "" && st.Droplets[x.PreviousDroplet] != nil {
			a.DropletGUID, a.Updated = x.PreviousDroplet, now
		}
		st.audit("audit.app.deployment.cancel", a, map[string]any{"deployment_guid": x.GUID, "droplet_guid": a.DropletGUID})
		p := st.Processes[x.ProcessGUID]
		if p == nil {
			return nil
		}
		spec, d = s.runSpec(st, p), *x
		return nil
	})
	if err != nil {
		return err
	}
	if d.GUID != "" {
		s.rollProcess(spec, d.GUID, d.MaxInFlight, 0, spec.Instances, d.Roll)
	}
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// continueDeployment carries a paused canary deployment on: to its next step, or after
// its last one to the rest of the instances (ACTIVE/DEPLOYING, then FINALIZED/DEPLOYED).
func (s *Server) continueDeployment(c *call) error {
	var (
		spec     RunSpec
		d        Deployment
		from, to int
	)
	err := s.st.update(func(st *State) error {
		x := st.Deployments[c.r.PathValue("guid")]
		if x == nil || st.Apps[x.AppGUID] == nil {
			return notFound("Deployment")
		}
		if x.Value != deployActive || x.Reason != reasonPaused {
			return unprocessable("Cannot continue a deployment with status: %s and reason: %s", x.Value, x.Reason)
		}
		p := st.Processes[x.ProcessGUID]
		if p == nil {
			return unprocessable("The app has no web process to deploy.")
		}
		now := time.Now().UTC()
		plan := canaryPlan(x.CanaryWeights, p.Instances)
		from, to = x.Replaced, p.Instances
		if x.CanaryStep < len(plan) {
			x.CanaryStep++
			to = max(plan[x.CanaryStep-1], from)
		} else {
			x.Finishing = true
		}
		x.Replaced = to
		x.Roll++
		x.setStatus(deployActive, reasonDeploying, now)
		st.audit("audit.app.deployment.continue", st.Apps[x.AppGUID], map[string]any{"deployment_guid": x.GUID, "droplet_guid": x.DropletGUID})
		spec, d = s.runSpec(st, p), *x
		return nil
	})
	if err != nil {
		return err
	}
	s.rollProcess(spec, d.GUID, d.MaxInFlight, from, to, d.Roll)
	c.w.WriteHeader(http.StatusOK)
	return nil
}
