package cc

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// Quotas: organization quotas (the built-in "default", with no limits: the local
// foundation is one machine, whose limits are its own; and those created, e.g. by
// terraform/, organization_quotas.go) and space quotas, which a user creates and
// applies as on Cloud Foundry (cf create-space-quota, cf set-space-quota) so that a run
// can be checked against them before it pushes anything. The definitions are served in
// the CC v3 shapes; pushes and scaling are not refused by them here.

// SpaceQuota is a space quota definition. A nil limit is unlimited; its limits are an
// org quota's without domains.
type SpaceQuota struct {
	GUID    string    `json:"guid"`
	Name    string    `json:"name"`
	OrgGUID string    `json:"org_guid"`
	Limits  quotaBody `json:"limits"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// UnmarshalJSON reads a space quota, also as states written before its limits were
// kept whole had it: the apps limits at the top.
func (q *SpaceQuota) UnmarshalJSON(b []byte) error {
	type plain SpaceQuota
	var v struct {
		plain
		TotalMemoryMB      *int `json:"total_memory_in_mb"`
		PerProcessMemoryMB *int `json:"per_process_memory_in_mb"`
		TotalInstances     *int `json:"total_instances"`
		PerAppTasks        *int `json:"per_app_tasks"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*q = SpaceQuota(v.plain)
	a := &q.Limits.Apps
	a.TotalMemoryMB, a.PerProcessMemoryMB = cmp.Or(a.TotalMemoryMB, v.TotalMemoryMB), cmp.Or(a.PerProcessMemoryMB, v.PerProcessMemoryMB)
	a.TotalInstances, a.PerAppTasks = cmp.Or(a.TotalInstances, v.TotalInstances), cmp.Or(a.PerAppTasks, v.PerAppTasks)
	return nil
}

// orgQuotaCreated is the default org quota's creation time: it is no state of its own.
var orgQuotaCreated = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Server) quotaRoutes() {
	s.handle("GET /v3/organization_quotas", s.listOrgQuotas)
	s.handle("GET /v3/organization_quotas/{guid}", s.getOrgQuota)
	s.handle("GET /v3/space_quotas", s.listSpaceQuotas)
	s.handle("POST /v3/space_quotas", s.createSpaceQuota)
	s.handle("GET /v3/space_quotas/{guid}", s.getSpaceQuota)
	s.handle("PATCH /v3/space_quotas/{guid}", s.updateSpaceQuota)
	s.handle("DELETE /v3/space_quotas/{guid}", s.deleteSpaceQuota)
	s.handle("POST /v3/space_quotas/{guid}/relationships/spaces", s.applySpaceQuota)
	s.handle("DELETE /v3/space_quotas/{guid}/relationships/spaces/{space}", s.removeSpaceQuota)
}

// orgQuotaView is an org quota and the orgs it is applied to.
type orgQuotaView struct {
	q    *OrgQuota
	orgs []string
}

func (s *Server) renderOrgQuota(v orgQuotaView) any {
	q, l := v.q, v.q.Limits
	data := make([]any, len(v.orgs))
	for i, g := range v.orgs {
		data[i] = obj{"guid": g}
	}
	out := l.render()
	out["guid"], out["name"], out["created_at"], out["updated_at"] = q.GUID, q.Name, ts(q.Created), ts(q.Updated)
	out["domains"] = obj{"total_domains": l.Domains.TotalDomains}
	out["relationships"] = obj{"organizations": obj{"data": data}}
	out["links"] = obj{"self": link(s, "/v3/organization_quotas/"+q.GUID)}
	return out
}

// render renders the limits that org and space quotas share: apps, services, routes.
func (l *quotaBody) render() obj {
	paid := true
	if l.Services.PaidServicesAllowed != nil {
		paid = *l.Services.PaidServicesAllowed
	}
	return obj{
		"apps": obj{"total_memory_in_mb": l.Apps.TotalMemoryMB, "per_process_memory_in_mb": l.Apps.PerProcessMemoryMB,
			"total_instances": l.Apps.TotalInstances, "per_app_tasks": l.Apps.PerAppTasks, "log_rate_limit_in_bytes_per_second": l.Apps.LogRateLimit},
		"services": obj{"paid_services_allowed": paid, "total_service_instances": l.Services.TotalServiceInstances, "total_service_keys": l.Services.TotalServiceKeys},
		"routes":   obj{"total_routes": l.Routes.TotalRoutes, "total_reserved_ports": l.Routes.TotalReservedPorts},
	}
}

// orgQuotaView reads q with its orgs; st is read-locked.
func (st *State) orgQuotaView(q *OrgQuota) orgQuotaView {
	v := orgQuotaView{q: clone(q)}
	for _, o := range sorted(st.Orgs, func(o *Org) time.Time { return o.Created }, func(o *Org) string { return o.GUID }) {
		if o.quota() == q.GUID {
			v.orgs = append(v.orgs, o.GUID)
		}
	}
	return v
}

// orgQuotas are the built-in default quota and those created (organization_quotas.go).
func (st *State) orgQuotas() []*OrgQuota {
	return append([]*OrgQuota{defaultOrgQuota}, sorted(st.OrgQuotas, func(q *OrgQuota) time.Time { return q.Created }, func(q *OrgQuota) string { return q.GUID })...)
}

func (s *Server) listOrgQuotas(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []orgQuotaView
	s.st.read(func(st *State) {
		for _, oq := range st.orgQuotas() {
			v := st.orgQuotaView(oq)
			inOrg := q.list("organization_guids") == nil
			for _, g := range v.orgs {
				inOrg = inOrg || q.match("organization_guids", g)
			}
			if q.match("names", oq.Name) && q.match("guids", oq.GUID) && inOrg {
				out = append(out, v)
			}
		}
	})
	return paginate(c, q, out, func(v orgQuotaView) string { return v.q.Name }, func(v orgQuotaView) time.Time { return v.q.Created }, s.renderOrgQuota, nil)
}

func (s *Server) getOrgQuota(c *call) error {
	var (
		v     orgQuotaView
		found bool
	)
	s.st.read(func(st *State) {
		if q := st.orgQuota(c.r.PathValue("guid")); q != nil {
			v, found = st.orgQuotaView(q), true
		}
	})
	if !found {
		return notFound("Organization quota")
	}
	return c.json(http.StatusOK, s.renderOrgQuota(v))
}

// spaceQuotaView is a space quota and the spaces it is applied to.
type spaceQuotaView struct {
	q      *SpaceQuota
	spaces []string
}

func (s *Server) renderSpaceQuota(v spaceQuotaView) any {
	q := v.q
	out := q.Limits.render()
	out["guid"], out["name"], out["created_at"], out["updated_at"] = q.GUID, q.Name, ts(q.Created), ts(q.Updated)
	out["relationships"] = obj{"organization": rel(q.OrgGUID), "spaces": spaceQuotaSpaces(v)}
	out["links"] = obj{"self": link(s, "/v3/space_quotas/"+q.GUID), "organization": link(s, "/v3/organizations/"+q.OrgGUID)}
	return out
}

// spaceQuotaSpaces is the to-many relationship of a space quota to its spaces.
func spaceQuotaSpaces(v spaceQuotaView) obj {
	data := make([]any, len(v.spaces))
	for i, g := range v.spaces {
		data[i] = obj{"guid": g}
	}
	return obj{"data": data}
}

// spaceQuotaView reads q with its spaces; st is read-locked.
func (st *State) spaceQuotaView(q *SpaceQuota) spaceQuotaView {
	v := spaceQuotaView{q: clone(q)}
	for _, sp := range sorted(st.Spaces, func(sp *Space) time.Time { return sp.Created }, func(sp *Space) string { return sp.GUID }) {
		if sp.QuotaGUID == q.GUID {
			v.spaces = append(v.spaces, sp.GUID)
		}
	}
	return v
}

func (s *Server) listSpaceQuotas(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []spaceQuotaView
	s.st.read(func(st *State) {
		for _, sq := range sorted(st.SpaceQuotas, func(q *SpaceQuota) time.Time { return q.Created }, func(q *SpaceQuota) string { return q.GUID }) {
			v := st.spaceQuotaView(sq)
			inSpace := q.list("space_guids") == nil
			for _, g := range v.spaces {
				inSpace = inSpace || q.match("space_guids", g)
			}
			if q.match("names", sq.Name) && q.match("guids", sq.GUID) && q.match("organization_guids", sq.OrgGUID) && inSpace {
				out = append(out, v)
			}
		}
	})
	return paginate(c, q, out, func(v spaceQuotaView) string { return v.q.Name }, func(v spaceQuotaView) time.Time { return v.q.Created }, s.renderSpaceQuota, nil)
}

func (s *Server) getSpaceQuota(c *call) error {
	var (
		v     spaceQuotaView
		found bool
	)
	s.st.read(func(st *State) {
		if q := st.SpaceQuotas[c.r.PathValue("guid")]; q != nil {
			v, found = st.spaceQuotaView(q), true
		}
	})
	if !found {
		return notFound("Space quota")
	}
	return c.json(http.StatusOK, s.renderSpaceQuota(v))
}

// toMany is a to-many relationship request: {"data": [{"guid": "…"}, …]}.
type toMany struct {
	Data []struct {
		GUID string `json:"guid"`
	} `json:"data"`
}

// guids are the request's guids, each once, in its order.
func (m toMany) guids() []string {
	var out []string
	for _, d := range m.Data {
		if !slices.Contains(out, d.GUID) {
			out = append(out, d.GUID)
		}
	}
	return out
}

func (s *Server) createSpaceQuota(c *call) error {
	var body struct {
		Name string `json:"name"`
		quotaBody
		Relationships struct {
			Organization toOneBody `json:"organization"`
			Spaces       toMany    `json:"spaces"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	if err := body.quotaBody.check(); err != nil {
		return err
	}
	org := body.Relationships.Organization.guid()
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if st.Orgs[org] == nil {
			return nil, unprocessable("Organization with guid '%s' does not exist, or you do not have access to it.", org)
		}
		if st.spaceQuotaByName(org, body.Name) != nil {
			return nil, unprocessable("Space Quota '%s' already exists.", body.Name)
		}
		now := time.Now().UTC()
		q := &SpaceQuota{GUID: newGUID(), Name: body.Name, OrgGUID: org, Limits: body.quotaBody, Created: now, Updated: now}
		if err := st.applySpaceQuota(q, body.Relationships.Spaces); err != nil {
			return nil, err
		}
		st.SpaceQuotas[q.GUID] = q
		return s.renderSpaceQuota(st.spaceQuotaView(q)), nil
	})
}

// applySpaceQuota applies q to the spaces of body, which must be q's org's.
func (st *State) applySpaceQuota(q *SpaceQuota, body toMany) error {
	for _, d := range body.Data {
		sp := st.Spaces[d.GUID]
		if sp == nil || sp.OrgGUID != q.OrgGUID {
			return unprocessable("Spaces with guids [\"%s\"] do not exist within the organization specified, or you do not have access to them.", d.GUID)
		}
	}
	for _, d := range body.Data {
		st.Spaces[d.GUID].QuotaGUID = q.GUID
	}
	return nil
}

func (s *Server) applySpaceQuota(c *call) error {
	var body toMany
	if err := c.decode(&body); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		q := st.SpaceQuotas[c.r.PathValue("guid")]
		if q == nil {
			return nil, notFound("Space quota")
		}
		if err := st.applySpaceQuota(q, body); err != nil {
			return nil, err
		}
		out := spaceQuotaSpaces(st.spaceQuotaView(q))
		out["links"] = obj{"self": link(s, "/v3/space_quotas/"+q.GUID+"/relationships/spaces")}
		return out, nil
	})
}

// spaceQuotaByName returns org's space quota called name, or nil; st is locked.
func (st *State) spaceQuotaByName(org, name string) *SpaceQuota {
	for _, q := range st.SpaceQuotas {
		if q.OrgGUID == org && q.Name == name {
			return q
		}
	}
	return nil
}

// updateSpaceQuota changes a space quota's name and the limits the request names.
func (s *Server) updateSpaceQuota(c *call) error {
	var raw json.RawMessage
	if err := c.decode(&raw); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		q := st.SpaceQuotas[c.r.PathValue("guid")]
		if q == nil {
			return nil, notFound("Space quota")
		}
		name, limits, err := patchQuota(q.Name, q.Limits, raw)
		if err != nil {
			return nil, err
		}
		if name != q.Name && st.spaceQuotaByName(q.OrgGUID, name) != nil {
			return nil, unprocessable("Space Quota '%s' already exists.", name)
		}
		q.Name, q.Limits, q.Updated = name, limits, time.Now().UTC()
		return s.renderSpaceQuota(st.spaceQuotaView(q)), nil
	})
}

// patchQuota applies the body of an org or space quota's PATCH to its name and limits, as CC does: a
// limit the body does not name stays, one it sets to null becomes unlimited.
func patchQuota(name string, limits quotaBody, raw json.RawMessage) (string, quotaBody, error) {
	// A copy through JSON, so that decoding the body over it leaves limits' pointers be.
	cur, err := json.Marshal(limits)
	if err != nil {
		return "", limits, err
	}
	patch := struct {
		Name *string `json:"name"`
		quotaBody
	}{Name: &name}
	if err := json.Unmarshal(cur, &patch.quotaBody); err != nil {
		return "", limits, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &patch); err != nil {
			return "", limits, badRequest("Request invalid due to parse error: invalid request body")
		}
	}
	if patch.Name == nil || *patch.Name == "" {
		return "", limits, unprocessable("Name can't be blank")
	}
	return *patch.Name, patch.quotaBody, patch.quotaBody.check()
}

// deleteSpaceQuota deletes a space quota that no space has, as CC does.
func (s *Server) deleteSpaceQuota(c *call) error {
	guid := c.r.PathValue("guid")
	err := s.st.update(func(st *State) error {
		q := st.SpaceQuotas[guid]
		if q == nil {
			return notFound("Space quota")
		}
		if len(st.spaceQuotaView(q).spaces) > 0 {
			return unprocessable("This quota is applied to one or more spaces. Remove this quota from all spaces before deleting.")
		}
		delete(st.SpaceQuotas, guid)
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("space_quota.delete", nil)
}

// removeSpaceQuota takes a space quota off a space (cf unset-space-quota).
func (s *Server) removeSpaceQuota(c *call) error {
	err := s.st.update(func(st *State) error {
		if st.SpaceQuotas[c.r.PathValue("guid")] == nil {
			return notFound("Space quota")
		}
		sp := st.Spaces[c.r.PathValue("space")]
		if sp == nil {
			return notFound("Space")
		}
		if sp.QuotaGUID == c.r.PathValue("guid") {
			sp.QuotaGUID, sp.Updated = "", time.Now().UTC()
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}
