package cc

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"
)

// serviceRoutes registers the endpoints of service offerings, plans, instances and credential bindings.
func (s *Server) serviceRoutes() {
	s.handle("GET /v3/service_offerings", s.listOfferings)
	s.handle("GET /v3/service_offerings/{guid}", s.getOffering)
	s.handle("GET /v3/service_plans", s.listPlans)
	s.handle("GET /v3/service_plans/{guid}", s.getPlan)
	s.handle("GET /v3/service_instances", s.listServiceInstances)
	s.handle("POST /v3/service_instances", s.createServiceInstance)
	s.handle("GET /v3/service_instances/{guid}", s.getServiceInstance)
	s.handle("DELETE /v3/service_instances/{guid}", s.deleteServiceInstance)
	s.handle("GET /v3/service_credential_bindings", s.listBindings)
	s.handle("POST /v3/service_credential_bindings", s.createBinding)
	s.handle("GET /v3/service_credential_bindings/{guid}", s.getBinding)
	s.handle("GET /v3/service_credential_bindings/{guid}/details", s.bindingDetails)
	s.handle("DELETE /v3/service_credential_bindings/{guid}", s.deleteBinding)
}

// The broker's catalog gets stable guids derived from names, so that they survive
// restarts without being stored.
const brokerName = "cf-benchmark-local"

func stableGUID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	s := hex.EncodeToString(sum[:16])
	return s[0:8] + "-" + s[8:12] + "-4" + s[13:16] + "-8" + s[17:20] + "-" + s[20:32]
}

var (
	brokerGUID = stableGUID("broker", brokerName)
	epoch      = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // creation time of catalog entries
)

func offeringGUID(o Offering) string { return stableGUID("offering", o.Name) }
func planGUID(o Offering, p Plan) string {
	return stableGUID("plan", o.Name, p.Name)
}

// planByGUID finds a plan and its offering in the catalog.
func (s *Server) planByGUID(guid string) (Offering, Plan) {
	for _, o := range s.catalog() {
		for _, p := range o.Plans {
			if planGUID(o, p) == guid {
				return o, p
			}
		}
	}
	return Offering{Name: "unknown"}, Plan{Name: "unknown"}
}

func (s *Server) catalog() []Offering {
	if s.cfg.Broker == nil {
		return nil
	}
	return s.cfg.Broker.Catalog()
}

func (s *Server) renderOffering(o Offering) any {
	g := offeringGUID(o)
	tags := o.Tags
	if tags == nil {
		tags = []string{}
	}
	return obj{
		"guid": g, "name": o.Name, "description": o.Description, "available": true, "tags": tags, "requires": []string{},
		"shareable": false, "documentation_url": nil, "created_at": ts(epoch), "updated_at": ts(epoch),
		"broker_catalog": obj{"id": g, "metadata": obj{}, "features": obj{"plan_updateable": false, "bindable": true,
			"instances_retrievable": true, "bindings_retrievable": true, "allow_context_updates": false}},
		"relationships": obj{"service_broker": rel(brokerGUID)}, "metadata": metadata(),
		"links": obj{"self": link(s, "/v3/service_offerings/"+g), "service_plans": link(s, "/v3/service_plans?service_offering_guids="+g),
			"service_broker": link(s, "/v3/service_brokers/"+brokerGUID)},
	}
}

func (s *Server) renderPlan(o Offering, p Plan) any {
	g := planGUID(o, p)
	return obj{
		"guid": g, "name": p.Name, "description": p.Description, "visibility_type": "public", "available": true, "free": true,
		"costs": []any{}, "maintenance_info": obj{}, "broker_catalog": obj{"id": g, "metadata": obj{}, "maximum_polling_duration": nil,
			"features": obj{"bindable": true, "plan_updateable": false}},
		"schemas": obj{"service_instance": obj{"create": obj{"parameters": obj{}}, "update": obj{"parameters": obj{}}},
			"service_binding": obj{"create": obj{"parameters": obj{}}}},
		"created_at": ts(epoch), "updated_at": ts(epoch),
		"relationships": obj{"service_offering": rel(offeringGUID(o))}, "metadata": metadata(),
		"links": obj{"self": link(s, "/v3/service_plans/"+g), "service_offering": link(s, "/v3/service_offerings/"+offeringGUID(o)),
			"visibility": link(s, "/v3/service_plans/"+g+"/visibility")},
	}
}

func (s *Server) renderBroker() any {
	return obj{"guid": brokerGUID, "name": brokerName, "url": s.url("/broker"), "created_at": ts(epoch), "updated_at": ts(epoch),
		"relationships": obj{}, "metadata": metadata(), "links": obj{"self": link(s, "/v3/service_brokers/"+brokerGUID)}}
}

func (s *Server) listOfferings(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []Offering
	for _, o := range s.catalog() {
		if q.match("names", o.Name) && q.match("guids", offeringGUID(o)) && q.match("service_broker_names", brokerName) {
			out = append(out, o)
		}
	}
	return paginate(c, q, out, func(o Offering) string { return o.Name }, func(Offering) time.Time { return epoch }, s.renderOffering, nil)
}

// getOffering answers one offering by guid, as the Terraform provider's
// cloudfoundry_service_offering data source and `cf service` read it.
func (s *Server) getOffering(c *call) error {
	guid := c.r.PathValue("guid")
	for _, o := range s.catalog() {
		if offeringGUID(o) == guid {
			return c.json(http.StatusOK, s.renderOffering(o))
		}
	}
	return notFound("Service offering")
}

// getPlan answers one plan by guid, as the Terraform provider looks up the plan of a
// managed service instance it creates or reads.
func (s *Server) getPlan(c *call) error {
	guid := c.r.PathValue("guid")
	for _, o := range s.catalog() {
		for _, p := range o.Plans {
			if planGUID(o, p) == guid {
				return c.json(http.StatusOK, s.renderPlan(o, p))
			}
		}
	}
	return notFound("Service plan")
}

type planRef struct {
	o Offering
	p Plan
}

// listPlans answers the marketplace: plans, with their offerings and the broker under
// included when asked by include= or fields[…].
func (s *Server) listPlans(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []planRef
	for _, o := range s.catalog() {
		for _, p := range o.Plans {
			if q.match("names", p.Name) && q.match("service_offering_names", o.Name) && q.match("service_offering_guids", offeringGUID(o)) &&
				q.match("guids", planGUID(o, p)) && q.match("service_broker_names", brokerName) && q.match("available", "true") {
				out = append(out, planRef{o, p})
			}
		}
	}
	var included obj
	wantOfferings := slices.Contains(q.list("include"), "service_offering") || q.v.Has("fields[service_offering]") || q.v.Has("fields[service_offering.service_broker]")
	if wantOfferings {
		included = obj{}
		var offerings []any
		seen := map[string]bool{}
		for _, r := range out {
			if g := offeringGUID(r.o); !seen[g] {
				seen[g] = true
				offerings = append(offerings, s.renderOffering(r.o))
			}
		}
		included["service_offerings"] = nonNil(offerings)
		if q.v.Has("fields[service_offering.service_broker]") {
			included["service_brokers"] = []any{s.renderBroker()}
		}
	}
	return paginate(c, q, out, func(r planRef) string { return r.p.Name }, func(planRef) time.Time { return epoch },
		func(r planRef) any { return s.renderPlan(r.o, r.p) }, included)
}

func (s *Server) listServiceInstances(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*ServiceInstance
	s.st.read(func(st *State) {
		for _, i := range sorted(st.ServiceInstances, func(i *ServiceInstance) time.Time { return i.Created }, func(i *ServiceInstance) string { return i.GUID }) {
			sp := st.Spaces[i.SpaceGUID]
			if q.match("names", i.Name) && q.match("guids", i.GUID) && q.match("space_guids", i.SpaceGUID) &&
				(sp == nil || q.match("organization_guids", sp.OrgGUID)) && q.match("service_plan_guids", i.PlanGUID) && q.match("type", instanceType(i)) {
				cp := *i
				out = append(out, &cp)
			}
		}
	})
	// fields[service_plan…] asks for the plan, offering and broker under included, as
	// `cf services` does without include=.
	var included obj
	if q.v.Has("fields[service_plan]") || q.v.Has("fields[service_plan.service_offering]") {
		included = obj{}
		var plans, offerings []any
		seen := map[string]bool{}
		for _, i := range out {
			if i.UserProvided {
				continue
			}
			o, p := s.planByGUID(i.PlanGUID)
			if !seen[i.PlanGUID] {
				seen[i.PlanGUID] = true
				plans = append(plans, s.renderPlan(o, p))
			}
			if g := offeringGUID(o); !seen[g] {
				seen[g] = true
				offerings = append(offerings, s.renderOffering(o))
			}
		}
		included["service_plans"] = nonNil(plans)
		if q.v.Has("fields[service_plan.service_offering]") {
			included["service_offerings"] = nonNil(offerings)
		}
		if q.v.Has("fields[service_plan.service_offering.service_broker]") {
			included["service_brokers"] = []any{s.renderBroker()}
		}
	}
	return paginate(c, q, out, func(i *ServiceInstance) string { return i.Name }, func(i *ServiceInstance) time.Time { return i.Created }, s.renderInstance, included)
}

func (s *Server) getServiceInstance(c *call) error {
	var i *ServiceInstance
	s.st.read(func(st *State) {
		if x := st.ServiceInstances[c.r.PathValue("guid")]; x != nil {
			cp := *x
			i = &cp
		}
	})
	if i == nil {
		return notFound("Service instance")
	}
	return c.json(http.StatusOK, s.renderInstance(i))
}

// createServiceInstance provisions synchronously, then answers 202 with a finished job,
// as CC does for managed instances.
func (s *Server) createServiceInstance(c *call) error {
	var body struct {
		Type          string   `json:"type"`
		Name          string   `json:"name"`
		Tags          []string `json:"tags"`
		Relationships struct {
			Space       toOneBody `json:"space"`
			ServicePlan toOneBody `json:"service_plan"`
		} `json:"relationships"`
		upsBody
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Type == typeUserProvided {
		return s.createUserProvided(c, body.Name, body.Relationships.Space.guid(), body.Tags, body.upsBody)
	}
	if body.Type != "managed" {
		return unprocessable("Type must be one of 'managed', 'user-provided'")
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	plan := body.Relationships.ServicePlan.guid()
	if o, _ := s.planByGUID(plan); o.Name == "unknown" {
		return unprocessable("Invalid service plan. Ensure that the service plan exists, is available, and you have access to it.")
	}
	now := time.Now().UTC()
	si := &ServiceInstance{GUID: newGUID(), Name: body.Name, SpaceGUID: body.Relationships.Space.guid(), PlanGUID: plan, Tags: body.Tags, Created: now, Updated: now}
	err := s.st.update(func(st *State) error {
		if st.Spaces[si.SpaceGUID] == nil {
			return unprocessable("Invalid space. Ensure that the space exists and you have access to it.")
		}
		if st.instanceByName(si.SpaceGUID, si.Name) != nil {
			return unprocessable("The service instance name is taken: %s.", si.Name)
		}
		st.ServiceInstances[si.GUID] = si // reserve the name while provisioning
		return nil
	})
	if err != nil {
		return err
	}
	_, p := s.planByGUID(plan)
	if err := s.cfg.Broker.Provision(c.r.Context(), si.GUID, p.Name); err != nil {
		s.st.update(func(st *State) error { delete(st.ServiceInstances, si.GUID); return nil })
		return unprocessable("Service broker error: %v", err)
	}
	return c.job("service_instance.create", nil)
}

func (s *Server) deleteServiceInstance(c *call) error {
	userProvided, jobErr, err := s.removeServiceInstance(c.r.Context(), c.r.PathValue("guid"))
	if err != nil {
		return err
	}
	if userProvided {
		return c.noContent() // no broker: gone at once, as CC answers for user-provided instances
	}
	return c.job("service_instance.delete", jobErr)
}

// removeServiceInstance deletes the instance guid and, as CC v3 does, its credential
// bindings, then unbinds and deprovisions it at the broker (a user-provided instance
// has none): err means the instance does not exist, jobErr is the broker's failure.
func (s *Server) removeServiceInstance(ctx context.Context, guid string) (userProvided bool, jobErr, err error) {
	var bindings []string
	err = s.st.update(func(st *State) error {
		if st.ServiceInstances[guid] == nil {
			return notFound("Service instance")
		}
		userProvided = st.ServiceInstances[guid].UserProvided
		for g, b := range st.Bindings {
			if b.InstanceGUID == guid {
				bindings = append(bindings, g)
				delete(st.Bindings, g)
			}
		}
		delete(st.ServiceInstances, guid)
		return nil
	})
	if err != nil || userProvided {
		return userProvided, nil, err
	}
	for _, b := range bindings {
		if err := s.cfg.Broker.Unbind(ctx, guid, b); err != nil && jobErr == nil {
			jobErr = err
		}
	}
	return false, cmp.Or(jobErr, s.cfg.Broker.Deprovision(ctx, guid)), nil
}

func (s *Server) listBindings(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var (
		out  []*Binding
		apps []any
	)
	s.st.read(func(st *State) {
		seen := map[string]bool{}
		for _, b := range sorted(st.Bindings, func(b *Binding) time.Time { return b.Created }, func(b *Binding) string { return b.GUID }) {
			if q.match("service_instance_guids", b.InstanceGUID) && q.match("app_guids", b.AppGUID) && q.match("guids", b.GUID) &&
				q.match("type", b.kind()) && q.match("names", b.Name) {
				cp := *b
				out = append(out, &cp)
				if a := st.Apps[b.AppGUID]; a != nil && !seen[a.GUID] {
					seen[a.GUID] = true
					apps = append(apps, s.renderApp(a))
				}
			}
		}
	})
	var included obj
	if slices.Contains(q.list("include"), "app") {
		included = obj{"apps": nonNil(apps)}
	}
	return paginate(c, q, out, func(b *Binding) string { return b.Name }, func(b *Binding) time.Time { return b.Created }, s.renderBinding, included)
}

func (s *Server) getBinding(c *call) error {
	var b *Binding
	s.st.read(func(st *State) {
		if x := st.Bindings[c.r.PathValue("guid")]; x != nil {
			cp := *x
			b = &cp
		}
	})
	if b == nil {
		return notFound("Service credential binding")
	}
	return c.json(http.StatusOK, s.renderBinding(b))
}

func (s *Server) bindingDetails(c *call) error {
	var b *Binding
	s.st.read(func(st *State) { b = st.Bindings[c.r.PathValue("guid")] })
	if b == nil {
		return notFound("Service credential binding")
	}
	return c.json(http.StatusOK, obj{"credentials": b.Credentials})
}

// createBinding binds an app (type app) or makes a service key of a managed instance
// (type key) synchronously and answers 201 with the binding.
func (s *Server) createBinding(c *call) error {
	var body struct {
		Type          string         `json:"type"`
		Name          string         `json:"name"`
		Parameters    map[string]any `json:"parameters"`
		Relationships struct {
			App             toOneBody `json:"app"`
			ServiceInstance toOneBody `json:"service_instance"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	key := body.Type == "key"
	switch {
	case body.Type != "app" && !key:
		return unprocessable("Type must be one of 'app', 'key'")
	case key && body.Name == "":
		return unprocessable("Name can't be blank")
	}
	app, inst := body.Relationships.App.guid(), body.Relationships.ServiceInstance.guid()
	if key {
		app = "" // a key is bound to no app
	}
	var upsCreds map[string]any // a user-provided instance's: no broker to ask
	userProvided := false
	err := s.st.update(func(st *State) error {
		a, si := st.Apps[app], st.ServiceInstances[inst]
		if si != nil && si.UserProvided {
			userProvided, upsCreds = true, si.Credentials
		}
		switch {
		case si == nil:
			return unprocessable("The service instance could not be found: %s", inst)
		case key && si.UserProvided:
			return unprocessable("Service credential bindings of type 'key' are not supported for user-provided service instances.")
		case si.UserProvided && body.Parameters != nil:
			return unprocessable("Binding parameters are not supported for user-provided service instances")
		case key:
		case a == nil:
			return unprocessable("The app could not be found: %s", app)
		case a.SpaceGUID != si.SpaceGUID:
			return unprocessable("The service instance and the app are in different spaces")
		}
		for _, b := range st.Bindings {
			switch {
			case b.InstanceGUID != inst:
			case key && b.kind() == "key" && b.Name == body.Name:
				return unprocessable("The binding name is invalid. Key binding names must be unique. The service instance already has a key binding with name '%s'.", body.Name)
			case !key && b.AppGUID == app:
				return unprocessable("The app is already bound to the service instance")
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	guid := newGUID()
	creds := upsCreds
	if !userProvided {
		if creds, err = s.cfg.Broker.Bind(c.r.Context(), inst, guid); err != nil {
			return unprocessable("Service broker error: %v", err)
		}
	}
	now := time.Now().UTC()
	b := &Binding{GUID: guid, Name: body.Name, AppGUID: app, InstanceGUID: inst, Credentials: creds, Created: now, Updated: now}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if (!key && st.Apps[app] == nil) || st.ServiceInstances[inst] == nil {
			return nil, unprocessable("The app or the service instance was deleted while binding")
		}
		st.Bindings[b.GUID] = b
		return s.renderBinding(b), nil
	})
}

func (s *Server) deleteBinding(c *call) error {
	var b *Binding
	userProvided := false
	err := s.st.update(func(st *State) error {
		if b = st.Bindings[c.r.PathValue("guid")]; b == nil {
			return notFound("Service credential binding")
		}
		if si := st.ServiceInstances[b.InstanceGUID]; si != nil && si.UserProvided {
			userProvided = true
		}
		delete(st.Bindings, b.GUID)
		return nil
	})
	if err != nil {
		return err
	}
	if userProvided {
		return c.noContent()
	}
	return c.job("service_bindings.delete", s.cfg.Broker.Unbind(c.r.Context(), b.InstanceGUID, b.GUID))
}
