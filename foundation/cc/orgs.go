package cc

import (
	"net/http"
	"slices"
	"time"
)

// routes registers every endpoint. Patterns use the method and wildcards of
// net/http's ServeMux; anything else gets CC's "Unknown request".
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/", s.root)
	s.mux.HandleFunc("POST /oauth/token", s.tokens)
	s.mux.HandleFunc("GET /login", s.loginInfo)
	s.mux.HandleFunc("GET /info", s.loginInfo)
	s.mux.HandleFunc("GET /v3", func(w http.ResponseWriter, r *http.Request) { s.v3root(&call{s: s, w: w, r: r}) })
	s.handle("/v3/", func(c *call) error { return errUnknownRequest })
	s.mux.HandleFunc("/v2/", s.v2)

	s.handleMember("GET /v3/organizations", s.listOrgs)
	s.handleMember("GET /v3/organizations/{guid}", s.getOrg)
	s.handle("GET /v3/organizations/{guid}/domains/default", s.defaultDomain)
	s.handle("PATCH /v3/organizations/{guid}/relationships/default_isolation_segment", s.setOrgSegment)
	s.handleMember("GET /v3/spaces", s.listSpaces)
	s.handle("POST /v3/spaces", s.createSpace)
	s.handleMember("GET /v3/spaces/{guid}", s.getSpace)
	s.handle("GET /v3/spaces/{guid}/relationships/isolation_segment", s.getSpaceSegment)
	s.handle("PATCH /v3/spaces/{guid}/relationships/isolation_segment", s.setSpaceSegment)
	s.handle("POST /v3/spaces/{guid}/actions/apply_manifest", s.applyManifest)
	s.handle("GET /v3/isolation_segments", s.listSegments)
	s.handle("POST /v3/isolation_segments", s.createSegment)
	s.handle("GET /v3/isolation_segments/{guid}", s.getSegment)
	s.handle("GET /v3/isolation_segments/{guid}/organizations", s.segmentOrgs)
	s.handle("GET /v3/isolation_segments/{guid}/relationships/organizations", s.segmentOrgRelationships)
	s.handle("POST /v3/isolation_segments/{guid}/relationships/organizations", s.entitleOrgs)
	s.handle("GET /v3/domains", s.listDomains)
	s.quotaRoutes()

	s.handle("GET /v3/apps", s.listApps)
	s.handle("POST /v3/apps", s.createApp)
	s.handle("GET /v3/apps/{guid}", s.getApp)
	s.handle("PATCH /v3/apps/{guid}", s.updateApp)
	s.handle("DELETE /v3/apps/{guid}", s.deleteApp)
	s.handle("POST /v3/apps/{guid}/actions/start", s.startApp)
	s.handle("POST /v3/apps/{guid}/actions/stop", s.stopApp)
	s.handle("POST /v3/apps/{guid}/actions/restart", s.restartApp)
	s.handle("GET /v3/apps/{guid}/env", s.appEnv)
	s.handle("GET /v3/apps/{guid}/environment_variables", s.appEnvVars)
	s.handle("PATCH /v3/apps/{guid}/environment_variables", s.updateAppEnvVars)
	s.handle("GET /v3/apps/{guid}/processes", s.appProcesses)
	s.handle("GET /v3/apps/{guid}/processes/{type}", s.appProcess)
	s.handle("GET /v3/apps/{guid}/processes/{type}/stats", s.appProcessStats)
	s.handle("POST /v3/apps/{guid}/processes/{type}/actions/scale", s.scaleAppProcess)
	s.handle("GET /v3/apps/{guid}/routes", s.appRoutes)
	s.handle("GET /v3/apps/{guid}/droplets/current", s.currentDroplet)
	s.handle("GET /v3/apps/{guid}/relationships/current_droplet", s.currentDropletRelationship)
	s.handle("PATCH /v3/apps/{guid}/relationships/current_droplet", s.setCurrentDroplet)
	s.handle("GET /v3/processes", s.listProcesses)
	s.handle("GET /v3/processes/{guid}", s.getProcess)
	s.handle("GET /v3/processes/{guid}/stats", s.processStats)
	s.handle("GET /v3/processes/{guid}/sidecars", s.emptyList)
	s.handle("POST /v3/processes/{guid}/actions/scale", s.scaleProcess)
	s.handle("GET /v3/packages", s.listPackages)
	s.handle("POST /v3/packages", s.createPackage)
	s.handle("GET /v3/packages/{guid}", s.getPackage)
	s.handle("POST /v3/packages/{guid}/upload", s.uploadPackage)
	s.handle("POST /v3/resource_matches", s.resourceMatches)
	s.handle("GET /v3/apps/{guid}/manifest", s.getAppManifest)
	s.handle("POST /v3/spaces/{guid}/manifest_diff", s.manifestDiff)
	s.handle("GET /v3/packages/{guid}/droplets", s.packageDroplets)
	s.handle("GET /v3/apps/{guid}/droplets", s.appDroplets)
	s.handle("GET /v3/droplets", s.listDroplets)
	s.handle("POST /v3/builds", s.createBuild)
	s.handle("GET /v3/builds/{guid}", s.getBuild)
	s.handle("GET /v3/droplets/{guid}", s.getDroplet)
	s.handle("GET /v3/routes", s.listRoutes)
	s.handle("GET /v3/jobs/{guid}", s.getJob)
	s.handle("GET /v3/audit_events", s.listAuditEvents)
	s.handle("GET /v3/audit_events/{guid}", s.getAuditEvent)

	s.handle("GET /v3/service_offerings", s.listOfferings)
	s.handle("GET /v3/service_plans", s.listPlans)
	s.handle("GET /v3/service_instances", s.listServiceInstances)
	s.handle("POST /v3/service_instances", s.createServiceInstance)
	s.handle("GET /v3/service_instances/{guid}", s.getServiceInstance)
	s.handle("DELETE /v3/service_instances/{guid}", s.deleteServiceInstance)
	s.handle("GET /v3/service_credential_bindings", s.listBindings)
	s.handle("POST /v3/service_credential_bindings", s.createBinding)
	s.handle("GET /v3/service_credential_bindings/{guid}", s.getBinding)
	s.handle("GET /v3/service_credential_bindings/{guid}/details", s.bindingDetails)
	s.handle("DELETE /v3/service_credential_bindings/{guid}", s.deleteBinding)
	s.landscapeRoutes()
	s.metadataRoutes()
	s.envGroupRoutes()
	s.userProvidedRoutes()
	s.routesRoutes()
	s.roleRoutes()
	s.featureFlagRoutes()
	s.domainRoutes()
	s.deploymentRoutes()
}

func (s *Server) emptyList(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return paginate(c, q, []any{}, func(any) string { return "" }, func(any) time.Time { return time.Time{} }, func(v any) any { return v }, nil)
}

func (s *Server) listOrgs(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Org
	s.st.read(func(st *State) {
		for _, o := range sorted(st.Orgs, func(o *Org) time.Time { return o.Created }, func(o *Org) string { return o.GUID }) {
			if q.match("names", o.Name) && q.match("guids", o.GUID) && q.labels(o.Metadata) && c.seesOrg(st, o.GUID) {
				out = append(out, clone(o))
			}
		}
	})
	return paginate(c, q, out, func(o *Org) string { return o.Name }, func(o *Org) time.Time { return o.Created }, s.renderOrg, nil)
}

func (s *Server) getOrg(c *call) error {
	var o *Org
	s.st.read(func(st *State) {
		if o = st.Orgs[c.r.PathValue("guid")]; o != nil && !c.seesOrg(st, o.GUID) {
			o = nil
		}
	})
	if o == nil {
		return notFound("Organization")
	}
	return c.json(http.StatusOK, s.renderOrg(o))
}

func (s *Server) defaultDomain(c *call) error {
	var d *Domain
	s.st.read(func(st *State) {
		if st.Orgs[c.r.PathValue("guid")] != nil {
			for _, x := range sorted(st.Domains, func(d *Domain) time.Time { return d.Created }, func(d *Domain) string { return d.GUID }) {
				d = x
				break
			}
		}
	})
	if d == nil {
		return notFound("Domain")
	}
	return c.json(http.StatusOK, s.renderDomain(d))
}

func (s *Server) listDomains(c *call) error { return s.domains(c, "") }

// domains lists the domains (those org may use, when set).
func (s *Server) domains(c *call, org string) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Domain
	s.st.read(func(st *State) {
		for _, d := range sorted(st.Domains, func(d *Domain) time.Time { return d.Created }, func(d *Domain) string { return d.GUID }) {
			// organization_guids: the domains these orgs own.
			orgs := q.list("organization_guids")
			if q.match("names", d.Name) && q.match("guids", d.GUID) && (orgs == nil || slices.Contains(orgs, d.OrgGUID)) &&
				(org == "" || d.visibleTo(org)) && q.labels(d.Metadata) {
				out = append(out, clone(d))
			}
		}
	})
	return paginate(c, q, out, func(d *Domain) string { return d.Name }, func(d *Domain) time.Time { return d.Created }, s.renderDomain, nil)
}

// toOneBody is a to-one relationship request: {"data": {"guid": "…"}} or {"data": null}.
type toOneBody struct {
	Data *struct {
		GUID *string `json:"guid"`
	} `json:"data"`
}

func (b toOneBody) guid() string {
	if b.Data == nil || b.Data.GUID == nil {
		return ""
	}
	return *b.Data.GUID
}

func (s *Server) setOrgSegment(c *call) error {
	var body toOneBody
	if err := c.decode(&body); err != nil {
		return err
	}
	guid := body.guid()
	return c.change(http.StatusOK, func(st *State) (any, error) {
		o := st.Orgs[c.r.PathValue("guid")]
		if o == nil {
			return nil, notFound("Organization")
		}
		if guid != "" {
			seg := st.IsolationSegments[guid]
			if seg == nil || !slices.Contains(seg.Orgs, o.GUID) {
				return nil, unprocessable("Unable to assign isolation segment with guid '%s'. Ensure it has been entitled to the organization.", guid)
			}
		}
		o.DefaultIsolationSegment, o.Updated = guid, time.Now().UTC()
		return obj{"data": relData(guid), "links": obj{"self": link(s, "/v3/organizations/"+o.GUID+"/relationships/default_isolation_segment")}}, nil
	})
}

func relData(guid string) any {
	if guid == "" {
		return nil
	}
	return obj{"guid": guid}
}

func (s *Server) listSpaces(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Space
	s.st.read(func(st *State) {
		for _, sp := range sorted(st.Spaces, func(s *Space) time.Time { return s.Created }, func(s *Space) string { return s.GUID }) {
			if q.match("names", sp.Name) && q.match("guids", sp.GUID) && q.match("organization_guids", sp.OrgGUID) && q.labels(sp.Metadata) && c.seesSpace(st, sp) {
				out = append(out, clone(sp))
			}
		}
	})
	return paginate(c, q, out, func(s *Space) string { return s.Name }, func(s *Space) time.Time { return s.Created }, s.renderSpace, nil)
}

func (s *Server) getSpace(c *call) error {
	var sp *Space
	s.st.read(func(st *State) {
		if sp = st.Spaces[c.r.PathValue("guid")]; sp != nil && !c.seesSpace(st, sp) {
			sp = nil
		}
	})
	if sp == nil {
		return notFound("Space")
	}
	return c.json(http.StatusOK, s.renderSpace(sp))
}

func (s *Server) createSpace(c *call) error {
	var body struct {
		Name          string `json:"name"`
		Relationships struct {
			Organization toOneBody `json:"organization"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		org := st.Orgs[body.Relationships.Organization.guid()]
		if org == nil {
			return nil, unprocessable("Invalid organization. Ensure the organization exists and you have access to it.")
		}
		if st.spaceByName(org.GUID, body.Name) != nil {
			// CC's words, which the cf CLI matches to say "Space X already exists" and exit 0.
			return nil, unprocessable("Name must be unique per organization")
		}
		now := time.Now().UTC()
		sp := &Space{GUID: newGUID(), Name: body.Name, OrgGUID: org.GUID, Created: now, Updated: now}
		st.Spaces[sp.GUID] = sp
		return s.renderSpace(sp), nil
	})
}

func (s *Server) getSpaceSegment(c *call) error {
	var (
		sp  *Space
		seg string
	)
	s.st.read(func(st *State) {
		if sp = st.Spaces[c.r.PathValue("guid")]; sp != nil {
			seg = sp.IsolationSegment
		}
	})
	if sp == nil {
		return notFound("Space")
	}
	return c.json(http.StatusOK, obj{"data": relData(seg), "links": obj{"self": link(s, "/v3/spaces/"+sp.GUID+"/relationships/isolation_segment")}})
}

func (s *Server) setSpaceSegment(c *call) error {
	var body toOneBody
	if err := c.decode(&body); err != nil {
		return err
	}
	guid := body.guid()
	return c.change(http.StatusOK, func(st *State) (any, error) {
		sp := st.Spaces[c.r.PathValue("guid")]
		if sp == nil {
			return nil, notFound("Space")
		}
		if guid != "" {
			seg := st.IsolationSegments[guid]
			if seg == nil || !slices.Contains(seg.Orgs, sp.OrgGUID) {
				return nil, unprocessable("Unable to assign isolation segment with guid '%s'. Ensure it has been entitled to the organization that this space belongs to.", guid)
			}
		}
		// As on CF, running apps move to the new segment only when restarted.
		sp.IsolationSegment, sp.Updated = guid, time.Now().UTC()
		return obj{"data": relData(guid), "links": obj{"self": link(s, "/v3/spaces/"+sp.GUID+"/relationships/isolation_segment")}}, nil
	})
}

func (s *Server) listSegments(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*IsolationSegment
	s.st.read(func(st *State) {
		for _, i := range sorted(st.IsolationSegments, func(i *IsolationSegment) time.Time { return i.Created }, func(i *IsolationSegment) string { return i.GUID }) {
			orgOK := q.list("organization_guids") == nil
			for _, o := range q.list("organization_guids") {
				orgOK = orgOK || slices.Contains(i.Orgs, o)
			}
			if q.match("names", i.Name) && q.match("guids", i.GUID) && orgOK {
				out = append(out, clone(i))
			}
		}
	})
	return paginate(c, q, out, func(i *IsolationSegment) string { return i.Name }, func(i *IsolationSegment) time.Time { return i.Created }, s.renderSegment, nil)
}

func (s *Server) getSegment(c *call) error {
	var seg *IsolationSegment
	s.st.read(func(st *State) { seg = st.IsolationSegments[c.r.PathValue("guid")] })
	if seg == nil {
		return notFound("Isolation segment")
	}
	return c.json(http.StatusOK, s.renderSegment(seg))
}

func (s *Server) createSegment(c *call) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if st.segmentByName(body.Name) != nil {
			return nil, unprocessable("Name must be unique")
		}
		now := time.Now().UTC()
		seg := &IsolationSegment{GUID: newGUID(), Name: body.Name, Orgs: []string{}, Created: now, Updated: now}
		st.IsolationSegments[seg.GUID] = seg
		return s.renderSegment(seg), nil
	})
}

func (s *Server) segmentOrgs(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var (
		seg *IsolationSegment
		out []*Org
	)
	s.st.read(func(st *State) {
		if seg = st.IsolationSegments[c.r.PathValue("guid")]; seg != nil {
			for _, g := range seg.Orgs {
				if o := st.Orgs[g]; o != nil && q.match("names", o.Name) {
					out = append(out, clone(o))
				}
			}
		}
	})
	if seg == nil {
		return notFound("Isolation segment")
	}
	return paginate(c, q, out, func(o *Org) string { return o.Name }, func(o *Org) time.Time { return o.Created }, s.renderOrg, nil)
}

func (s *Server) orgRelationships(seg *IsolationSegment) any {
	data := []obj{}
	for _, g := range seg.Orgs {
		data = append(data, obj{"guid": g})
	}
	return obj{"data": data, "links": obj{"self": link(s, "/v3/isolation_segments/"+seg.GUID+"/relationships/organizations"),
		"related": link(s, "/v3/isolation_segments/"+seg.GUID+"/organizations")}}
}

func (s *Server) segmentOrgRelationships(c *call) error {
	var seg *IsolationSegment
	s.st.read(func(st *State) { seg = st.IsolationSegments[c.r.PathValue("guid")] })
	if seg == nil {
		return notFound("Isolation segment")
	}
	return c.json(http.StatusOK, s.orgRelationships(seg))
}

func (s *Server) entitleOrgs(c *call) error {
	var body struct {
		Data []struct {
			GUID string `json:"guid"`
		} `json:"data"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		seg := st.IsolationSegments[c.r.PathValue("guid")]
		if seg == nil {
			return nil, notFound("Isolation segment")
		}
		for _, d := range body.Data {
			if st.Orgs[d.GUID] == nil {
				return nil, unprocessable("Organization with guid '%s' does not exist or you do not have access to it.", d.GUID)
			}
			if !slices.Contains(seg.Orgs, d.GUID) {
				seg.Orgs = append(seg.Orgs, d.GUID)
			}
		}
		seg.Updated = time.Now().UTC()
		return s.orgRelationships(seg), nil
	})
}
