package cc

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

func (s *Server) domainRoutes() {
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
		Relationships struct {
			Organization toOneBody `json:"organization"`
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
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if org != "" && st.Orgs[org] == nil {
			return nil, unprocessable("Organization with guid '%s' does not exist or you do not have access to it.", org)
		}
		for _, d := range st.Domains {
			if d.Name == name {
				return nil, unprocessable("The domain name \"%s\" is already in use", name)
			}
		}
		d := &Domain{GUID: newGUID(), Name: name, OrgGUID: org, Internal: body.Internal, Created: time.Now().UTC()}
		st.Domains[d.GUID] = d
		return s.renderDomain(d), nil
	})
}

// deleteDomain deletes a domain and its routes, as CC's domain delete job does.
func (s *Server) deleteDomain(c *call) error {
	err := s.st.update(func(st *State) error {
		d := st.Domains[c.r.PathValue("guid")]
		if d == nil {
			return notFound("Domain")
		}
		for guid, r := range st.Routes {
			if r.DomainGUID == d.GUID {
				delete(st.Routes, guid)
			}
		}
		delete(st.Domains, d.GUID)
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("domain.delete", nil)
}
