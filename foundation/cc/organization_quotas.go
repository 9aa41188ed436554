package cc

import (
	"encoding/json"
	"net/http"
	"time"
)

// OrgQuota is an organization quota. A nil limit is unlimited. Orgs without one of
// their own have the built-in unlimited quota "default" (quotaGUID).
type OrgQuota struct {
	GUID    string    `json:"guid"`
	Name    string    `json:"name"`
	Limits  quotaBody `json:"limits"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// quotaBody is the limits part of the organization quota object and of its create
// request (resources/organization_quotas/_object.md.erb).
type quotaBody struct {
	Apps struct {
		TotalMemoryMB      *int `json:"total_memory_in_mb"`
		PerProcessMemoryMB *int `json:"per_process_memory_in_mb"`
		LogRateLimit       *int `json:"log_rate_limit_in_bytes_per_second"`
		TotalInstances     *int `json:"total_instances"`
		PerAppTasks        *int `json:"per_app_tasks"`
	} `json:"apps"`
	Services struct {
		PaidServicesAllowed   *bool `json:"paid_services_allowed"`
		TotalServiceInstances *int  `json:"total_service_instances"`
		TotalServiceKeys      *int  `json:"total_service_keys"`
	} `json:"services"`
	Routes struct {
		TotalRoutes        *int `json:"total_routes"`
		TotalReservedPorts *int `json:"total_reserved_ports"`
	} `json:"routes"`
	Domains struct {
		TotalDomains *int `json:"total_domains"`
	} `json:"domains"`
}

func (b *quotaBody) check() error {
	for _, v := range []*int{b.Apps.TotalMemoryMB, b.Apps.PerProcessMemoryMB, b.Apps.TotalInstances, b.Apps.PerAppTasks,
		b.Services.TotalServiceInstances, b.Services.TotalServiceKeys, b.Routes.TotalRoutes, b.Routes.TotalReservedPorts, b.Domains.TotalDomains} {
		if v != nil && *v < 0 {
			return unprocessable("Limits must be greater than or equal to 0")
		}
	}
	if v := b.Apps.LogRateLimit; v != nil && *v < -1 {
		return unprocessable("Log rate limit in bytes per second must be greater than or equal to -1")
	}
	return nil
}

// defaultOrgQuota is the built-in quota of every org that has no other.
var defaultOrgQuota = &OrgQuota{GUID: quotaGUID, Name: "default", Created: orgQuotaCreated, Updated: orgQuotaCreated}

// orgQuota returns the quota guid names, the built-in default included, or nil.
func (st *State) orgQuota(guid string) *OrgQuota {
	if guid == quotaGUID {
		return defaultOrgQuota
	}
	return st.OrgQuotas[guid]
}

func (s *Server) createOrgQuota(c *call) error {
	var body struct {
		Name string `json:"name"`
		quotaBody
		Relationships struct {
			Organizations struct {
				Data []struct {
					GUID string `json:"guid"`
				} `json:"data"`
			} `json:"organizations"`
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
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		for _, q := range st.OrgQuotas {
			if q.Name == body.Name {
				return nil, unprocessable("Organization Quota '%s' already exists.", body.Name)
			}
		}
		var orgs []*Org
		for _, d := range body.Relationships.Organizations.Data {
			o := st.Orgs[d.GUID]
			if o == nil {
				return nil, unprocessable("Organizations with guids [\"%s\"] do not exist, or you do not have access to them.", d.GUID)
			}
			orgs = append(orgs, o)
		}
		now := time.Now().UTC()
		q := &OrgQuota{GUID: newGUID(), Name: body.Name, Limits: body.quotaBody, Created: now, Updated: now}
		st.OrgQuotas[q.GUID] = q
		for _, o := range orgs {
			o.QuotaGUID, o.Updated = q.GUID, now
		}
		return s.renderOrgQuota(st.orgQuotaView(q)), nil
	})
}

// updateOrgQuota changes an org quota's name and the limits the request names (as a
// space quota's, quotas.go). The built-in default has no limits and keeps none.
func (s *Server) updateOrgQuota(c *call) error {
	var raw json.RawMessage
	if err := c.decode(&raw); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		guid := c.r.PathValue("guid")
		if guid == quotaGUID {
			return nil, unprocessable("The default quota is the local foundation's own, without limits: create a quota and apply it instead")
		}
		q := st.OrgQuotas[guid]
		if q == nil {
			return nil, notFound("Organization quota")
		}
		name, limits, err := patchQuota(q.Name, q.Limits, raw)
		if err != nil {
			return nil, err
		}
		for _, other := range st.OrgQuotas {
			if other != q && other.Name == name {
				return nil, unprocessable("Organization Quota '%s' already exists.", name)
			}
		}
		q.Name, q.Limits, q.Updated = name, limits, time.Now().UTC()
		return s.renderOrgQuota(st.orgQuotaView(q)), nil
	})
}

func (s *Server) deleteOrgQuota(c *call) error {
	guid := c.r.PathValue("guid")
	err := s.st.update(func(st *State) error {
		if st.orgQuota(guid) == nil {
			return notFound("Organization quota")
		}
		for _, o := range st.Orgs {
			if o.quota() == guid {
				return unprocessable("This quota is applied to one or more organizations. Apply different quotas to those organizations before deleting.")
			}
		}
		delete(st.OrgQuotas, guid)
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("organization_quota.delete", nil)
}

func (s *Server) applyOrgQuota(c *call) error {
	var body struct {
		Data []struct {
			GUID string `json:"guid"`
		} `json:"data"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		q := st.orgQuota(c.r.PathValue("guid"))
		if q == nil {
			return nil, notFound("Organization quota")
		}
		var guids []string
		for _, d := range body.Data {
			if st.Orgs[d.GUID] == nil {
				return nil, unprocessable("Organizations with guids [\"%s\"] do not exist, or you do not have access to them.", d.GUID)
			}
			guids = append(guids, d.GUID)
		}
		now := time.Now().UTC()
		for _, g := range guids {
			st.Orgs[g].QuotaGUID, st.Orgs[g].Updated = q.GUID, now
		}
		data := []obj{}
		for _, o := range sorted(st.Orgs, func(o *Org) time.Time { return o.Created }, func(o *Org) string { return o.GUID }) {
			if o.quota() == q.GUID {
				data = append(data, obj{"guid": o.GUID})
			}
		}
		return obj{"data": data, "links": obj{"self": link(s, "/v3/organization_quotas/"+q.GUID+"/relationships/organizations")}}, nil
	})
}
