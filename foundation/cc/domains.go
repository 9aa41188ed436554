package cc

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

func (s *Server) domainRoutes() {
	s.handle("GET /v3/organizations/{guid}/domains/default", s.defaultDomain)
	s.handle("GET /v3/domains", s.listDomains)
	s.handle("GET /v3/domains/{guid}", s.getDomain)
	s.handle("GET /v3/organizations/{guid}/domains", s.orgDomains)
	s.handle("POST /v3/domains", s.createDomain)
	s.handle("DELETE /v3/domains/{guid}", s.deleteDomain)
}

// domainRE is a DNS name of at least two labels, as CC's domain validation wants it.
var domainRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// visibleTo reports whether org may use d: shared domains are everyone's, a private one
// its owner's and the orgs it is shared with.
func (d *Domain) visibleTo(org string) bool {
	return d.OrgGUID == "" || d.OrgGUID == org || slices.Contains(d.SharedOrgs, org)
}

// createDomain serves cf create-shared-domain (no organization) and
// cf create-private-domain (organization set).
func (s *Server) createDomain(c *call) error {
	var body struct {
		Name        string `json:"name"`
		Internal    bool   `json:"internal"`
		RouterGroup *struct {
			GUID string `json:"guid"`
		} `json:"router_group"`
		Metadata      *metadataPatch `json:"metadata"`
		Relationships struct {
			Organization        toOneBody `json:"organization"`
			SharedOrganizations toMany    `json:"shared_organizations"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	name := strings.ToLower(body.Name)
	switch {
	case name == "":
		return unprocessable("Name can't be blank")
	case !strings.Contains(name, "."):
		return unprocessable("Name must contain at least one \".\"")
	case len(name) > 253 || !domainRE.MatchString(name):
		return unprocessable("Name does not comply with RFC 1035 standards")
	case body.RouterGroup != nil:
		return unprocessable("Router group '%s' not found: the local foundation has no TCP routing.", body.RouterGroup.GUID)
	}
	org := body.Relationships.Organization.guid()
	if org != "" && body.Internal {
		return unprocessable("Cannot associate an internal domain with an organization")
	}
	shared := body.Relationships.SharedOrganizations.guids()
	if org == "" && len(shared) > 0 {
		return unprocessable("Domains cannot be shared with other organizations unless they are scoped to an organization.")
	}
	if err := body.Metadata.validate(); err != nil {
		return err
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if org != "" && st.Orgs[org] == nil {
			return nil, unprocessable("Organization with guid '%s' does not exist or you do not have access to it.", org)
		}
		for _, o := range shared {
			if st.Orgs[o] == nil || o == org {
				return nil, unprocessable("Organization with guid '%s' does not exist, or you do not have access to it.", o)
			}
		}
		for _, d := range st.Domains {
			if d.Name == name {
				return nil, unprocessable("The domain name \"%s\" is already in use", name)
			}
		}
		d := &Domain{GUID: newGUID(), Name: name, OrgGUID: org, SharedOrgs: shared, Internal: body.Internal, Created: time.Now().UTC()}
		d.Metadata.apply(body.Metadata)
		st.Domains[d.GUID] = d
		return s.renderDomain(d), nil
	})
}

// deleteDomain deletes a domain and its routes, as CC's domain delete job does.
func (s *Server) deleteDomain(c *call) error {
	err := s.st.update(func(st *State) error {
		if st.Domains[c.r.PathValue("guid")] == nil {
			return notFound("Domain")
		}
		st.deleteDomain(c.r.PathValue("guid"))
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("domain.delete", nil)
}

// deleteDomain deletes the domain guid and its routes; st is locked.
func (st *State) deleteDomain(guid string) {
	for g, r := range st.Routes {
		if r.DomainGUID == guid {
			delete(st.Routes, g)
		}
	}
	delete(st.Domains, guid)
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

func (s *Server) getDomain(c *call) error {
	var d *Domain
	s.st.read(func(st *State) { d = st.Domains[c.r.PathValue("guid")] })
	if d == nil {
		return notFound("Domain")
	}
	return c.json(http.StatusOK, s.renderDomain(d))
}

// orgDomains lists the domains an org may use: the shared ones, its private ones and
// those shared with it.
func (s *Server) orgDomains(c *call) error {
	var found bool
	s.st.read(func(st *State) { found = st.Orgs[c.r.PathValue("guid")] != nil })
	if !found {
		return notFound("Organization")
	}
	return s.domains(c, c.r.PathValue("guid"))
}
