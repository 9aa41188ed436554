package cc

import (
	"net/http"
	"time"
)

// orgRoutes registers the endpoints of organizations.
func (s *Server) orgRoutes() {
	s.handleMember("GET /v3/organizations", s.listOrgs)
	s.handleMember("GET /v3/organizations/{guid}", s.getOrg)
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

func (b toOneBody) guid() string {
	if b.Data == nil || b.Data.GUID == nil {
		return ""
	}
	return *b.Data.GUID
}
