// App features (resources/app_features): ssh, as the Terraform provider's
// cloudfoundry_app reads and sets it (enable_ssh). The local foundation serves no SSH:
// the flag is recorded and rendered, as the space's is (landscape.go).

package cc

import (
	"net/http"
	"time"
)

func (s *Server) appFeatureRoutes() {
	s.handle("GET /v3/apps/{guid}/features", s.listAppFeatures)
	s.handle("GET /v3/apps/{guid}/features/{name}", s.getAppFeature)
	s.handle("PATCH /v3/apps/{guid}/features/{name}", s.setAppFeature)
}

// appSSH is the app feature object of ssh; enabled by default, as CC's
// default_app_ssh_access.
func appSSH(a *App) obj {
	return obj{"name": "ssh", "description": "Enable SSHing into the app.", "enabled": !a.SSHDisabled}
}

// app returns a copy of the app the path's guid names, or nil.
func (s *Server) app(c *call) *App {
	var a *App
	s.st.read(func(st *State) {
		if x := st.Apps[c.r.PathValue("guid")]; x != nil {
			a = clone(x)
		}
	})
	return a
}

func (s *Server) listAppFeatures(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	a := s.app(c)
	if a == nil {
		return notFound("App")
	}
	return paginate(c, q, []obj{appSSH(a)}, func(f obj) string { return f["name"].(string) },
		func(obj) time.Time { return a.Created }, func(f obj) any { return f }, nil)
}

func (s *Server) getAppFeature(c *call) error {
	a := s.app(c)
	if a == nil {
		return notFound("App")
	}
	if c.r.PathValue("name") != "ssh" {
		return notFound("Feature")
	}
	return c.json(http.StatusOK, appSSH(a))
}

func (s *Server) setAppFeature(c *call) error {
	enabled, err := decodeEnabled(c)
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		if c.r.PathValue("name") != "ssh" {
			return nil, notFound("Feature")
		}
		a.SSHDisabled, a.Updated = !enabled, time.Now().UTC()
		return appSSH(a), nil
	})
}
