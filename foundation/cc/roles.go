package cc

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// Roles (cf create-space, set-org-role, set-space-role, space-users) and /v3/info.
// Roles are recorded and listed as CC does; for users other than the admin they decide
// which orgs and spaces the user sees (users.go).

// Role is a user's role in an org or a space.
type Role struct {
	GUID      string    `json:"guid"`
	Type      string    `json:"type"`
	UserGUID  string    `json:"user_guid"`
	OrgGUID   string    `json:"org_guid,omitempty"`
	SpaceGUID string    `json:"space_guid,omitempty"`
	Created   time.Time `json:"created_at"`
}

var (
	orgRoleTypes   = map[string]bool{"organization_user": true, "organization_auditor": true, "organization_manager": true, "organization_billing_manager": true}
	spaceRoleTypes = map[string]bool{"space_auditor": true, "space_developer": true, "space_manager": true, "space_supporter": true}
)

func (s *Server) roleRoutes() {
	s.handle("POST /v3/roles", s.createRole)
	s.handle("GET /v3/roles", s.listRoles)
	s.handle("GET /v3/roles/{guid}", s.getRole)
	s.handle("DELETE /v3/roles/{guid}", s.deleteRole)
	s.handleMember("GET /v3/info", s.info)
	s.userRoutes()
}

func (s *Server) renderRole(r *Role) any {
	links := obj{"self": link(s, "/v3/roles/"+r.GUID), "user": link(s, "/v3/users/"+r.UserGUID)}
	if r.OrgGUID != "" {
		links["organization"] = link(s, "/v3/organizations/"+r.OrgGUID)
	} else {
		links["space"] = link(s, "/v3/spaces/"+r.SpaceGUID)
	}
	return obj{"guid": r.GUID, "type": r.Type, "created_at": ts(r.Created), "updated_at": ts(r.Created),
		"relationships": obj{"user": rel(r.UserGUID), "organization": rel(r.OrgGUID), "space": rel(r.SpaceGUID)}, "links": links}
}

func (s *Server) createRole(c *call) error {
	var body struct {
		Type          string `json:"type"`
		Relationships struct {
			User struct {
				Data struct {
					GUID     string `json:"guid"`
					Username string `json:"username"`
					Origin   string `json:"origin"`
				} `json:"data"`
			} `json:"user"`
			Organization toOneBody `json:"organization"`
			Space        toOneBody `json:"space"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	u := body.Relationships.User.Data
	if !orgRoleTypes[body.Type] && !spaceRoleTypes[body.Type] {
		return unprocessable("Type must be one of the allowed types")
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		var user ccUser
		if u.GUID != "" {
			found, ok := s.findCCUser(st, u.GUID)
			if !ok {
				return nil, unprocessable("Invalid user. Ensure that the user exists and you have access to it.")
			}
			user = found
		} else {
			found := false
			for _, x := range s.ccUsers(st) {
				if strings.EqualFold(x.name, u.Username) && (u.Origin == "" || u.Origin == x.origin) {
					user, found = x, true
				}
			}
			if !found {
				return nil, unprocessable("No user exists with the username '%s' and origin '%s'.", u.Username, cmpOr(u.Origin, "uaa"))
			}
		}
		r := &Role{GUID: newGUID(), Type: body.Type, UserGUID: user.guid, Created: time.Now().UTC()}
		where, name := "", ""
		if orgRoleTypes[body.Type] {
			o := st.Orgs[body.Relationships.Organization.guid()]
			if o == nil {
				return nil, unprocessable("Invalid organization. Ensure that the organization exists and you have access to it.")
			}
			r.OrgGUID, where, name = o.GUID, "organization", o.Name
		} else {
			sp := st.Spaces[body.Relationships.Space.guid()]
			if sp == nil {
				return nil, unprocessable("Invalid space. Ensure that the space exists and you have access to it.")
			}
			if user.guid != userGUID && !st.hasOrgRole(user.guid, sp.OrgGUID) {
				return nil, unprocessable("Users cannot be assigned roles in a space if they do not have a role in that space's organization.")
			}
			r.SpaceGUID, where, name = sp.GUID, "space", sp.Name
		}
		for _, x := range st.Roles {
			if x.UserGUID == r.UserGUID && x.Type == r.Type && x.OrgGUID == r.OrgGUID && x.SpaceGUID == r.SpaceGUID {
				return nil, unprocessable("User '%s' already has '%s' role in %s '%s'.", user.name, r.Type, where, name)
			}
		}
		st.Roles[r.GUID] = r
		return s.renderRole(r), nil
	})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (s *Server) listRoles(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Role
	s.st.read(func(st *State) {
		for _, r := range sorted(st.Roles, func(r *Role) time.Time { return r.Created }, func(r *Role) string { return r.GUID }) {
			if q.match("types", r.Type) && q.match("guids", r.GUID) && q.match("user_guids", r.UserGUID) &&
				(q.list("organization_guids") == nil || r.OrgGUID != "" && q.match("organization_guids", r.OrgGUID)) &&
				(q.list("space_guids") == nil || r.SpaceGUID != "" && q.match("space_guids", r.SpaceGUID)) {
				out = append(out, clone(r))
			}
		}
	})
	var included obj
	if strings.Contains(q.v.Get("include"), "user") {
		users := []any{}
		s.st.read(func(st *State) {
			for _, u := range s.ccUsers(st) {
				if slices.ContainsFunc(out, func(r *Role) bool { return r.UserGUID == u.guid }) {
					users = append(users, s.renderUser(u))
				}
			}
		})
		included = obj{"users": users}
	}
	return paginate(c, q, out, func(r *Role) string { return r.Type }, func(r *Role) time.Time { return r.Created }, s.renderRole, included)
}

// hasOrgRole reports whether user has any role in org.
func (st *State) hasOrgRole(user, org string) bool {
	for _, r := range st.Roles {
		if r.UserGUID == user && r.OrgGUID == org {
			return true
		}
	}
	return false
}

func (s *Server) getRole(c *call) error {
	var r *Role
	s.st.read(func(st *State) { r = st.Roles[c.r.PathValue("guid")] })
	if r == nil {
		return notFound("Role")
	}
	return c.json(http.StatusOK, s.renderRole(r))
}

func (s *Server) deleteRole(c *call) error {
	err := s.st.update(func(st *State) error {
		if st.Roles[c.r.PathValue("guid")] == nil {
			return notFound("Role")
		}
		delete(st.Roles, c.r.PathValue("guid"))
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("role.delete", nil)
}

// info answers GET /v3/info: the platform's name and version as cf curl /v3/info and
// the cf CLI's `cf api` show them.
func (s *Server) info(c *call) error {
	return c.json(http.StatusOK, obj{"build": "", "cli_version": obj{"minimum": "", "recommended": ""}, "custom": obj{},
		"description": "cf-benchmark local foundation", "name": "cf-benchmark", "version": 0,
		"osbapi_version": "2.15", "rate_limits": obj{"enabled": false, "general_limit": nil, "reset_interval_in_minutes": nil},
		"links": obj{"self": link(s, "/v3/info"), "support": nil}})
}
