// Spaces and the isolation segment a space's apps run in.

package cc

import (
	"net/http"
	"slices"
	"time"
)

// spaceRoutes registers the endpoints of spaces.
func (s *Server) spaceRoutes() {
	s.handleMember("GET /v3/spaces", s.listSpaces)
	s.handle("POST /v3/spaces", s.createSpace)
	s.handleMember("GET /v3/spaces/{guid}", s.getSpace)
	s.handle("GET /v3/spaces/{guid}/relationships/isolation_segment", s.getSpaceSegment)
	s.handle("PATCH /v3/spaces/{guid}/relationships/isolation_segment", s.setSpaceSegment)
}

func (s *Server) listSpaces(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var (
		out      []*Space
		included obj
	)
	s.st.read(func(st *State) {
		for _, sp := range sorted(st.Spaces, func(s *Space) time.Time { return s.Created }, func(s *Space) string { return s.GUID }) {
			if q.match("names", sp.Name) && q.match("guids", sp.GUID) && q.match("organization_guids", sp.OrgGUID) && q.labels(sp.Metadata) && c.seesSpace(st, sp) {
				out = append(out, clone(sp))
			}
		}
		included = s.includeOrgs(st, q, out)
	})
	return paginate(c, q, out, func(s *Space) string { return s.Name }, func(s *Space) time.Time { return s.Created }, s.renderSpace, included)
}

// includeOrgs answers include=organization of spaces: their orgs, each once.
func (s *Server) includeOrgs(st *State, q *query, spaces []*Space) obj {
	if !slices.Contains(q.list("include"), "organization") {
		return nil
	}
	orgs := []any{}
	seen := map[string]bool{}
	for _, sp := range spaces {
		if o := st.Orgs[sp.OrgGUID]; o != nil && !seen[o.GUID] {
			seen[o.GUID] = true
			orgs = append(orgs, s.renderOrg(o))
		}
	}
	return obj{"organizations": orgs}
}

func (s *Server) getSpace(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var (
		sp       *Space
		included obj
	)
	s.st.read(func(st *State) {
		if sp = st.Spaces[c.r.PathValue("guid")]; sp != nil && !c.seesSpace(st, sp) {
			sp = nil
		}
		if sp != nil {
			sp = clone(sp)
			included = s.includeOrgs(st, q, []*Space{sp})
		}
	})
	if sp == nil {
		return notFound("Space")
	}
	out := s.renderSpace(sp)
	if included != nil {
		out.(obj)["included"] = included
	}
	return c.json(http.StatusOK, out)
}

func (s *Server) createSpace(c *call) error {
	var body struct {
		Name          string         `json:"name"`
		Metadata      *metadataPatch `json:"metadata"`
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
	if err := body.Metadata.validate(); err != nil {
		return err
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
		sp.Metadata.apply(body.Metadata)
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
