// Isolation segments, the orgs entitled to them and an org's default segment.

package cc

import (
	"net/http"
	"slices"
	"time"
)

// segmentRoutes registers the endpoints of isolation segments and the orgs entitled to them.
func (s *Server) segmentRoutes() {
	s.handle("PATCH /v3/organizations/{guid}/relationships/default_isolation_segment", s.setOrgSegment)
	s.handle("GET /v3/isolation_segments", s.listSegments)
	s.handle("POST /v3/isolation_segments", s.createSegment)
	s.handle("GET /v3/isolation_segments/{guid}", s.getSegment)
	s.handle("GET /v3/isolation_segments/{guid}/organizations", s.segmentOrgs)
	s.handle("GET /v3/isolation_segments/{guid}/relationships/organizations", s.segmentOrgRelationships)
	s.handle("POST /v3/isolation_segments/{guid}/relationships/organizations", s.entitleOrgs)
	s.handle("GET /v3/organizations/{guid}/relationships/default_isolation_segment", s.getOrgSegment)
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
			if q.match("names", i.Name) && q.match("guids", i.GUID) && orgOK && q.labels(i.Metadata) {
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
		if st.segmentByName(body.Name) != nil {
			return nil, unprocessable("Name must be unique")
		}
		now := time.Now().UTC()
		seg := &IsolationSegment{GUID: newGUID(), Name: body.Name, Orgs: []string{}, Created: now, Updated: now}
		seg.Metadata.apply(body.Metadata)
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

func (s *Server) getOrgSegment(c *call) error {
	var o *Org
	s.st.read(func(st *State) { o = st.Orgs[c.r.PathValue("guid")] })
	if o == nil {
		return notFound("Organization")
	}
	return c.json(http.StatusOK, obj{"data": relData(o.DefaultIsolationSegment),
		"links": obj{"self": link(s, "/v3/organizations/"+o.GUID+"/relationships/default_isolation_segment")}})
}
