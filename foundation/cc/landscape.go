package cc

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"
)

// What the Terraform provider (cloudfoundry/cloudfoundry, terraform/) needs beyond what
// cf push and a run use: creating and deleting orgs, spaces' SSH feature, deleting
// spaces and isolation segments, revoking entitlements, and org quotas. Shaped as the CC
// v3 docs say: deleting an org or a space deletes what is in it, and a delete CC refuses
// (a quota in use, a segment still entitled or assigned) is refused. Quotas are
// recorded and rendered; the local foundation enforces none.
func (s *Server) landscapeRoutes() {
	s.handle("POST /v3/organizations", s.createOrg)
	s.handle("DELETE /v3/organizations/{guid}", s.deleteOrg)
	s.handle("GET /v3/spaces/{guid}/features/ssh", s.getSpaceSSH)
	s.handle("PATCH /v3/spaces/{guid}/features/ssh", s.setSpaceSSH)
	s.handle("DELETE /v3/spaces/{guid}", s.deleteSpace)
	s.handle("DELETE /v3/isolation_segments/{guid}", s.deleteSegment)
	s.handle("DELETE /v3/isolation_segments/{guid}/relationships/organizations/{org}", s.revokeOrg)
	s.handle("POST /v3/organization_quotas", s.createOrgQuota)
	s.handle("PATCH /v3/organization_quotas/{guid}", s.updateOrgQuota)
	s.handle("DELETE /v3/organization_quotas/{guid}", s.deleteOrgQuota)
	s.handle("POST /v3/organization_quotas/{guid}/relationships/organizations", s.applyOrgQuota)
	s.securityGroupRoutes()
}

func (s *Server) createOrg(c *call) error {
	var body struct {
		Name     string         `json:"name"`
		Metadata *metadataPatch `json:"metadata"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	if err := body.Metadata.validate(); err != nil {
		return err
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if st.orgByName(body.Name) != nil {
			return nil, unprocessable("Organization '%s' already exists.", body.Name)
		}
		now := time.Now().UTC()
		o := &Org{GUID: newGUID(), Name: body.Name, Created: now, Updated: now}
		o.Metadata.apply(body.Metadata)
		st.Orgs[o.GUID] = o
		return s.renderOrg(o), nil
	})
}

// deleteOrg deletes an org and, as CC does, everything in it: its spaces and the
// domains it owns.
func (s *Server) deleteOrg(c *call) error {
	guid := c.r.PathValue("guid")
	var spaces []string
	s.st.read(func(st *State) {
		if st.Orgs[guid] != nil {
			for _, sp := range st.Spaces {
				if sp.OrgGUID == guid {
					spaces = append(spaces, sp.GUID)
				}
			}
		}
	})
	if spaces == nil {
		if err := s.st.update(func(st *State) error {
			if st.Orgs[guid] == nil {
				return notFound("Organization")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	var jobErr error
	for _, sp := range spaces {
		if err := s.removeSpace(c.r.Context(), sp); err != nil && jobErr == nil {
			jobErr = err
		}
	}
	if jobErr == nil {
		jobErr = s.st.update(func(st *State) error {
			for _, seg := range st.IsolationSegments {
				seg.Orgs = slices.DeleteFunc(slices.Clone(seg.Orgs), func(g string) bool { return g == guid })
			}
			for _, d := range st.Domains {
				if d.OrgGUID == guid {
					st.deleteDomain(d.GUID)
				}
				d.SharedOrgs = slices.DeleteFunc(slices.Clone(d.SharedOrgs), func(g string) bool { return g == guid })
			}
			delete(st.Orgs, guid)
			return nil
		})
	}
	return c.job("organization.delete", jobErr)
}

// The space feature object (resources/space_features/_object.md.erb).
func spaceSSH(sp *Space) any {
	return obj{"name": "ssh", "description": "Enable SSHing into apps in the space.", "enabled": !sp.SSHDisabled}
}

func (s *Server) getSpaceSSH(c *call) error {
	var sp *Space
	s.st.read(func(st *State) { sp = st.Spaces[c.r.PathValue("guid")] })
	if sp == nil {
		return notFound("Space")
	}
	return c.json(http.StatusOK, spaceSSH(sp))
}

// decodeEnabled reads an SSH feature's body, {"enabled": true|false}.
func decodeEnabled(c *call) (bool, error) {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if err := c.decode(&body); err != nil {
		return false, err
	}
	if body.Enabled == nil {
		return false, unprocessable("Enabled must be a boolean")
	}
	return *body.Enabled, nil
}

func (s *Server) setSpaceSSH(c *call) error {
	enabled, err := decodeEnabled(c)
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		sp := st.Spaces[c.r.PathValue("guid")]
		if sp == nil {
			return nil, notFound("Space")
		}
		sp.SSHDisabled, sp.Updated = !enabled, time.Now().UTC()
		return spaceSSH(sp), nil
	})
}

// deleteSpace deletes a space and, as CC does, its apps, service instances and routes.
func (s *Server) deleteSpace(c *call) error {
	guid := c.r.PathValue("guid")
	var found bool
	s.st.read(func(st *State) { found = st.Spaces[guid] != nil })
	if !found {
		return notFound("Space")
	}
	return c.job("space.delete", s.removeSpace(c.r.Context(), guid))
}

// removeSpace deletes the space guid with its apps, service instances and routes. On an
// error the space is kept with what was not deleted yet.
func (s *Server) removeSpace(ctx context.Context, guid string) error {
	var apps, instances []string
	s.st.read(func(st *State) {
		for _, a := range st.Apps {
			if a.SpaceGUID == guid {
				apps = append(apps, a.GUID)
			}
		}
		for _, si := range st.ServiceInstances {
			if si.SpaceGUID == guid {
				instances = append(instances, si.GUID)
			}
		}
	})
	for _, a := range apps {
		jobErr, err := s.removeApp(ctx, a)
		if err = cmp.Or(err, jobErr); err != nil {
			return err
		}
	}
	for _, si := range instances {
		_, jobErr, err := s.removeServiceInstance(ctx, si)
		if err = cmp.Or(err, jobErr); err != nil {
			return err
		}
	}
	return s.st.update(func(st *State) error {
		for g, r := range st.Routes {
			if r.SpaceGUID == guid {
				delete(st.Routes, g)
			}
		}
		for _, g := range st.SecurityGroups {
			for _, l := range []string{"running", "staging"} {
				*g.lifecycleSpaces(l) = slices.DeleteFunc(slices.Clone(*g.lifecycleSpaces(l)), func(x string) bool { return x == guid })
			}
		}
		delete(st.Spaces, guid)
		return nil
	})
}

func (s *Server) deleteSegment(c *call) error {
	guid := c.r.PathValue("guid")
	err := s.st.update(func(st *State) error {
		seg := st.IsolationSegments[guid]
		if seg == nil {
			return notFound("Isolation segment")
		}
		if guid == sharedSegmentGUID {
			return unprocessable("Cannot delete the shared isolation segment")
		}
		if len(seg.Orgs) > 0 {
			return unprocessable("Revoke all entitlements to isolation segment '%s' before deleting it.", seg.Name)
		}
		delete(st.IsolationSegments, guid)
		return nil
	})
	if err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) revokeOrg(c *call) error {
	guid, org := c.r.PathValue("guid"), c.r.PathValue("org")
	err := s.st.update(func(st *State) error {
		seg := st.IsolationSegments[guid]
		if seg == nil {
			return notFound("Isolation segment")
		}
		for _, sp := range st.Spaces {
			if sp.OrgGUID == org && sp.IsolationSegment == guid {
				return unprocessable("Cannot remove the entitlement while this organization has spaces assigned to the isolation segment (space '%s').", sp.Name)
			}
		}
		// As CC's IsolationSegmentUnassign: the org's default, if this, is unset.
		if o := st.Orgs[org]; o != nil && o.DefaultIsolationSegment == guid {
			o.DefaultIsolationSegment = ""
		}
		seg.Orgs = slices.DeleteFunc(slices.Clone(seg.Orgs), func(g string) bool { return g == org })
		seg.Updated = time.Now().UTC()
		return nil
	})
	if err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}
