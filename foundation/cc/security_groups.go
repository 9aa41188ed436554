package cc

import (
	"net/http"
	"slices"
	"time"
)

// SecurityGroup is an application security group (resources/security_groups). The
// local foundation records it and its space bindings, as terraform/ makes them; its
// containers' egress is not filtered by it.
type SecurityGroup struct {
	GUID          string    `json:"guid"`
	Name          string    `json:"name"`
	Rules         []SGRule  `json:"rules"`
	GlobalRunning bool      `json:"globally_enabled_running,omitempty"`
	GlobalStaging bool      `json:"globally_enabled_staging,omitempty"`
	RunningSpaces []string  `json:"running_spaces"`
	StagingSpaces []string  `json:"staging_spaces"`
	Created       time.Time `json:"created_at"`
	Updated       time.Time `json:"updated_at"`
}

// SGRule is one egress rule.
type SGRule struct {
	Protocol    string  `json:"protocol"`
	Destination string  `json:"destination"`
	Ports       *string `json:"ports,omitempty"`
	Type        *int    `json:"type,omitempty"`
	Code        *int    `json:"code,omitempty"`
	Description *string `json:"description,omitempty"`
	Log         *bool   `json:"log,omitempty"`
}

func (s *Server) securityGroupRoutes() {
	s.handle("POST /v3/security_groups", s.createSecurityGroup)
	s.handle("GET /v3/security_groups", s.listSecurityGroups)
	s.handle("GET /v3/security_groups/{guid}", s.getSecurityGroup)
	s.handle("DELETE /v3/security_groups/{guid}", s.deleteSecurityGroup)
	s.handle("POST /v3/security_groups/{guid}/relationships/running_spaces", s.bindSecurityGroup("running"))
	s.handle("POST /v3/security_groups/{guid}/relationships/staging_spaces", s.bindSecurityGroup("staging"))
	s.handle("DELETE /v3/security_groups/{guid}/relationships/running_spaces/{space}", s.unbindSecurityGroup("running"))
	s.handle("DELETE /v3/security_groups/{guid}/relationships/staging_spaces/{space}", s.unbindSecurityGroup("staging"))
	s.handle("GET /v3/spaces/{guid}/running_security_groups", s.spaceSecurityGroups("running"))
	s.handle("GET /v3/spaces/{guid}/staging_security_groups", s.spaceSecurityGroups("staging"))
}

// spaceSecurityGroups lists the groups that apply to a space's lifecycle: bound to it
// or enabled globally.
func (s *Server) spaceSecurityGroups(lifecycle string) handlerFunc {
	return func(c *call) error {
		q, err := c.query()
		if err != nil {
			return err
		}
		var (
			out   []*SecurityGroup
			found bool
		)
		space := c.r.PathValue("guid")
		s.st.read(func(st *State) {
			found = st.Spaces[space] != nil
			for _, g := range sorted(st.SecurityGroups, func(g *SecurityGroup) time.Time { return g.Created }, func(g *SecurityGroup) string { return g.GUID }) {
				global := g.GlobalRunning
				if lifecycle == "staging" {
					global = g.GlobalStaging
				}
				if (global || slices.Contains(*g.lifecycleSpaces(lifecycle), space)) && q.match("names", g.Name) && q.match("guids", g.GUID) {
					out = append(out, clone(g))
				}
			}
		})
		if !found {
			return notFound("Space")
		}
		return paginate(c, q, out, func(g *SecurityGroup) string { return g.Name }, func(g *SecurityGroup) time.Time { return g.Created }, s.renderSecurityGroup, nil)
	}
}

func (s *Server) renderSecurityGroup(g *SecurityGroup) any {
	spaces := func(guids []string) obj {
		data := []obj{}
		for _, x := range guids {
			data = append(data, obj{"guid": x})
		}
		return obj{"data": data}
	}
	rules := []obj{}
	for _, r := range g.Rules {
		o := obj{"protocol": r.Protocol, "destination": r.Destination}
		for k, v := range map[string]any{"ports": r.Ports, "type": r.Type, "code": r.Code, "description": r.Description, "log": r.Log} {
			switch v := v.(type) {
			case *string:
				if v != nil {
					o[k] = *v
				}
			case *int:
				if v != nil {
					o[k] = *v
				}
			case *bool:
				if v != nil {
					o[k] = *v
				}
			}
		}
		rules = append(rules, o)
	}
	return obj{
		"guid": g.GUID, "name": g.Name, "created_at": ts(g.Created), "updated_at": ts(g.Updated),
		"globally_enabled": obj{"running": g.GlobalRunning, "staging": g.GlobalStaging},
		"rules":            rules,
		"relationships":    obj{"running_spaces": spaces(g.RunningSpaces), "staging_spaces": spaces(g.StagingSpaces)},
		"links":            obj{"self": link(s, "/v3/security_groups/"+g.GUID)},
	}
}

func (s *Server) createSecurityGroup(c *call) error {
	type spaces struct {
		Data []struct {
			GUID string `json:"guid"`
		} `json:"data"`
	}
	var body struct {
		Name            string   `json:"name"`
		Rules           []SGRule `json:"rules"`
		GloballyEnabled struct {
			Running bool `json:"running"`
			Staging bool `json:"staging"`
		} `json:"globally_enabled"`
		Relationships struct {
			Running spaces `json:"running_spaces"`
			Staging spaces `json:"staging_spaces"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if body.Name == "" {
		return unprocessable("Name can't be blank")
	}
	for _, r := range body.Rules {
		if !slices.Contains([]string{"tcp", "udp", "icmp", "all"}, r.Protocol) || r.Destination == "" {
			return unprocessable("Rules[0]: protocol must be 'tcp', 'udp', 'icmp', or 'all' and destination must be set")
		}
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		for _, g := range st.SecurityGroups {
			if g.Name == body.Name {
				return nil, unprocessable("Security group with name '%s' already exists.", body.Name)
			}
		}
		now := time.Now().UTC()
		g := &SecurityGroup{GUID: newGUID(), Name: body.Name, Rules: body.Rules, GlobalRunning: body.GloballyEnabled.Running,
			GlobalStaging: body.GloballyEnabled.Staging, RunningSpaces: []string{}, StagingSpaces: []string{}, Created: now, Updated: now}
		for _, d := range body.Relationships.Running.Data {
			g.RunningSpaces = append(g.RunningSpaces, d.GUID)
		}
		for _, d := range body.Relationships.Staging.Data {
			g.StagingSpaces = append(g.StagingSpaces, d.GUID)
		}
		st.SecurityGroups[g.GUID] = g
		return s.renderSecurityGroup(g), nil
	})
}

func (s *Server) listSecurityGroups(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*SecurityGroup
	s.st.read(func(st *State) {
		for _, g := range sorted(st.SecurityGroups, func(g *SecurityGroup) time.Time { return g.Created }, func(g *SecurityGroup) string { return g.GUID }) {
			if q.match("names", g.Name) && q.match("guids", g.GUID) {
				out = append(out, clone(g))
			}
		}
	})
	return paginate(c, q, out, func(g *SecurityGroup) string { return g.Name }, func(g *SecurityGroup) time.Time { return g.Created }, s.renderSecurityGroup, nil)
}

func (s *Server) getSecurityGroup(c *call) error {
	var g *SecurityGroup
	s.st.read(func(st *State) {
		if x := st.SecurityGroups[c.r.PathValue("guid")]; x != nil {
			g = clone(x)
		}
	})
	if g == nil {
		return notFound("Security group")
	}
	return c.json(http.StatusOK, s.renderSecurityGroup(g))
}

func (s *Server) deleteSecurityGroup(c *call) error {
	guid := c.r.PathValue("guid")
	if err := s.st.update(func(st *State) error {
		if st.SecurityGroups[guid] == nil {
			return notFound("Security group")
		}
		delete(st.SecurityGroups, guid)
		return nil
	}); err != nil {
		return err
	}
	return c.job("security_group.delete", nil)
}

// lifecycleSpaces returns the running or the staging spaces of g.
func (g *SecurityGroup) lifecycleSpaces(lifecycle string) *[]string {
	if lifecycle == "running" {
		return &g.RunningSpaces
	}
	return &g.StagingSpaces
}

func (s *Server) bindSecurityGroup(lifecycle string) handlerFunc {
	return func(c *call) error {
		var body struct {
			Data []struct {
				GUID string `json:"guid"`
			} `json:"data"`
		}
		if err := c.decode(&body); err != nil {
			return err
		}
		return c.change(http.StatusOK, func(st *State) (any, error) {
			g := st.SecurityGroups[c.r.PathValue("guid")]
			if g == nil {
				return nil, notFound("Security group")
			}
			spaces := slices.Clone(*g.lifecycleSpaces(lifecycle))
			for _, d := range body.Data {
				if st.Spaces[d.GUID] == nil {
					return nil, unprocessable("Spaces with guids [\"%s\"] do not exist, or you do not have access to them.", d.GUID)
				}
				if !slices.Contains(spaces, d.GUID) {
					spaces = append(spaces, d.GUID)
				}
			}
			*g.lifecycleSpaces(lifecycle), g.Updated = spaces, time.Now().UTC()
			data := []obj{}
			for _, x := range spaces {
				data = append(data, obj{"guid": x})
			}
			return obj{"data": data, "links": obj{"self": link(s, "/v3/security_groups/"+g.GUID+"/relationships/"+lifecycle+"_spaces")}}, nil
		})
	}
}

func (s *Server) unbindSecurityGroup(lifecycle string) handlerFunc {
	return func(c *call) error {
		err := s.st.update(func(st *State) error {
			g := st.SecurityGroups[c.r.PathValue("guid")]
			if g == nil {
				return notFound("Security group")
			}
			space := c.r.PathValue("space")
			spaces := *g.lifecycleSpaces(lifecycle)
			if !slices.Contains(spaces, space) {
				return unprocessable("Unable to unbind security group from space with guid '%s'. Ensure the space is bound to this security group.", space)
			}
			*g.lifecycleSpaces(lifecycle) = slices.DeleteFunc(slices.Clone(spaces), func(x string) bool { return x == space })
			g.Updated = time.Now().UTC()
			return nil
		})
		if err != nil {
			return err
		}
		c.w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
