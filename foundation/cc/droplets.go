// Droplets: an app's current droplet and the droplets of packages and apps.

package cc

import (
	"net/http"
	"path/filepath"
	"time"
)

// dropletRoutes registers the endpoints of droplets.
func (s *Server) dropletRoutes() {
	s.handle("GET /v3/apps/{guid}/droplets/current", s.currentDroplet)
	s.handle("GET /v3/apps/{guid}/relationships/current_droplet", s.currentDropletRelationship)
	s.handle("PATCH /v3/apps/{guid}/relationships/current_droplet", s.setCurrentDroplet)
	s.handle("GET /v3/packages/{guid}/droplets", s.packageDroplets)
	s.handle("GET /v3/apps/{guid}/droplets", s.appDroplets)
	s.handle("GET /v3/droplets", s.listDroplets)
	s.handle("GET /v3/droplets/{guid}", s.getDroplet)
}

func (s *Server) dropletDir(guid string) string {
	return filepath.Join(s.cfg.DataDir, "droplets", guid)
}

func (s *Server) currentDroplet(c *call) error {
	var (
		d     *Droplet
		found bool
	)
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			found = true
			d = st.Droplets[a.DropletGUID]
		}
	})
	switch {
	case !found:
		return notFound("App")
	case d == nil:
		return notFound("Droplet") // the cf CLI tolerates exactly this detail
	}
	return c.json(http.StatusOK, s.renderDroplet(d))
}

func (s *Server) currentDropletRelationship(c *call) error {
	var (
		guid  string
		found bool
	)
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			found, guid = true, a.DropletGUID
		}
	})
	if !found {
		return notFound("App")
	}
	if guid == "" {
		return notFound("Droplet")
	}
	return c.json(http.StatusOK, s.dropletRelationship(c.r.PathValue("guid"), guid))
}

func (s *Server) dropletRelationship(app, droplet string) any {
	return obj{"data": obj{"guid": droplet}, "links": obj{
		"self":    link(s, "/v3/apps/"+app+"/relationships/current_droplet"),
		"related": link(s, "/v3/apps/"+app+"/droplets/current")}}
}

func (s *Server) setCurrentDroplet(c *call) error {
	var body toOneBody
	if err := c.decode(&body); err != nil {
		return err
	}
	guid := body.guid()
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		d := st.Droplets[guid]
		if d == nil || d.AppGUID != a.GUID || d.State != BuildStaged {
			return nil, unprocessable("Unable to assign current droplet. Ensure the droplet exists and belongs to this app.")
		}
		a.DropletGUID, a.Updated = guid, time.Now().UTC()
		// As CC does, the droplet's process types the app lacks become processes of
		// it, with no instances (web has one from the app's creation).
		for typ := range d.ProcessTypes {
			if st.process(a.GUID, typ) == nil {
				p := &Process{GUID: newGUID(), AppGUID: a.GUID, SpaceGUID: a.SpaceGUID, Type: typ, MemoryMB: s.cfg.DefaultAppMemoryMB,
					DiskMB: defaultDiskMB, HealthCheck: "process", Created: a.Updated, Updated: a.Updated}
				st.Processes[p.GUID] = p
			}
		}
		st.audit("audit.app.droplet.mapped", a, map[string]any{"request": map[string]any{"droplet_guid": guid}})
		return s.dropletRelationship(a.GUID, guid), nil
	})
}

func (s *Server) getDroplet(c *call) error {
	var d *Droplet
	s.st.read(func(st *State) { d = st.Droplets[c.r.PathValue("guid")] })
	if d == nil {
		return notFound("Droplet")
	}
	return c.json(http.StatusOK, s.renderDroplet(d))
}

func (s *Server) packageDroplets(c *call) error {
	pkg := c.r.PathValue("guid")
	return s.dropletList(c, func(st *State) error {
		if st.Packages[pkg] == nil {
			return notFound("Package")
		}
		return nil
	}, func(_ *State, d *Droplet) bool { return d.PackageGUID == pkg })
}

func (s *Server) appDroplets(c *call) error {
	app := c.r.PathValue("guid")
	return s.dropletList(c, func(st *State) error {
		if st.Apps[app] == nil {
			return notFound("App")
		}
		return nil
	}, func(_ *State, d *Droplet) bool { return d.AppGUID == app })
}

func (s *Server) listDroplets(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.dropletList(c, func(*State) error { return nil }, func(st *State, d *Droplet) bool {
		a := st.Apps[d.AppGUID]
		return q.match("app_guids", d.AppGUID) && q.match("package_guids", d.PackageGUID) && (q.list("space_guids") == nil || a != nil && q.match("space_guids", a.SpaceGUID))
	})
}

// dropletList answers a droplet list: those keep takes, filtered by states and guids
// as every droplet list is; check says whether the parent exists.
func (s *Server) dropletList(c *call, check func(*State) error, keep func(*State, *Droplet) bool) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*Droplet
	s.st.read(func(st *State) {
		if err = check(st); err != nil {
			return
		}
		for _, d := range sorted(st.Droplets, func(d *Droplet) time.Time { return d.Created }, func(d *Droplet) string { return d.GUID }) {
			if keep(st, d) && q.match("states", d.State) && q.match("guids", d.GUID) {
				cp := *d
				out = append(out, &cp)
			}
		}
	})
	if err != nil {
		return err
	}
	return paginate(c, q, out, func(d *Droplet) string { return d.GUID }, func(d *Droplet) time.Time { return d.Created }, s.renderDroplet, nil)
}
