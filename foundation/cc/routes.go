package cc

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Routes and their destinations (cf create-route, map-route, unmap-route,
// delete-route, delete -r, routes) and the domains they live in. Every destination is
// an app's web process on port 8080 (the one port instances listen on, $PORT); a
// destination's guid is derived from its route and app, so that it needs no storage.

func (s *Server) routesRoutes() {
	s.handle("GET /v3/apps/{guid}/routes", s.listAppRoutes)
	s.handle("GET /v3/routes", s.listRoutes)
	s.handle("POST /v3/routes", s.createRoute)
	s.handle("GET /v3/routes/{guid}", s.getRoute)
	s.handle("DELETE /v3/routes/{guid}", s.deleteRoute)
	s.handle("GET /v3/routes/{guid}/destinations", s.routeDestinations)
	s.handle("POST /v3/routes/{guid}/destinations", s.addDestinations)
	s.handle("DELETE /v3/routes/{guid}/destinations/{dest}", s.removeDestination)
	s.handle("GET /v3/service_route_bindings", s.listRouteBindings)
}

func destinationGUID(route, app string) string { return stableGUID("destination", route, app) }

// errSharedDomainHost is CC's answer to a route without a host in a shared domain:
// the domain itself is not for one space's apps.
func errSharedDomainHost() error {
	return unprocessable("Missing host. Routes in shared domains must have a host defined.")
}

// maxRoutePath is CC's limit on a route's path.
const maxRoutePath = 128

// hostRE is what CC accepts as a route's host: up to 63 letters, digits, "-" and "_",
// or "*" for a wildcard.
var hostRE = regexp.MustCompile(`^(\*|[A-Za-z0-9_-]{1,63})$`)

func (s *Server) createRoute(c *call) error {
	var body struct {
		Host          string `json:"host"`
		Path          string `json:"path"`
		Port          *int   `json:"port"`
		Relationships struct {
			Space  toOneBody `json:"space"`
			Domain toOneBody `json:"domain"`
		} `json:"relationships"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	host := body.Host // CC keeps its case; the router matches any
	switch {
	case host != "" && !hostRE.MatchString(host):
		return unprocessable("Host must be either \"*\" or contain only alphanumeric characters, \"_\", or \"-\"")
	case body.Path != "" && !strings.HasPrefix(body.Path, "/"):
		return unprocessable("Path must begin with /")
	case body.Path == "/":
		return unprocessable("Path cannot be exactly /")
	case strings.Contains(body.Path, "?"):
		return unprocessable("Path cannot contain ?")
	case len(body.Path) > maxRoutePath:
		return unprocessable("Path is too long (maximum is %d characters)", maxRoutePath)
	case body.Port != nil:
		return unprocessable("Port is not supported here: the local foundation has no TCP routing")
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		sp := st.Spaces[body.Relationships.Space.guid()]
		if sp == nil {
			return nil, unprocessable("Invalid space. Ensure that the space exists and you have access to it.")
		}
		d := st.Domains[body.Relationships.Domain.guid()]
		if d == nil {
			return nil, unprocessable("Invalid domain. Ensure that the domain exists and you have access to it.")
		}
		if host == "" && d.OrgGUID == "" {
			return nil, errSharedDomainHost()
		}
		if st.findRoute(host, d.GUID, body.Path) != nil {
			if body.Path != "" {
				return nil, unprocessable("Route already exists with host '%s' and path '%s' for domain '%s'.", host, body.Path, d.Name)
			}
			return nil, unprocessable("Route already exists with host '%s' for domain '%s'.", host, d.Name)
		}
		now := time.Now().UTC()
		r := &Route{GUID: newGUID(), Host: host, Path: body.Path, DomainGUID: d.GUID, SpaceGUID: sp.GUID, Apps: []string{}, Created: now, Updated: now}
		st.Routes[r.GUID] = r
		return s.renderRoute(r, st.routeURL(r)), nil
	})
}

func (s *Server) getRoute(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		if r := st.Routes[c.r.PathValue("guid")]; r != nil {
			resp = s.renderRoute(clone(r), st.routeURL(r))
		}
	})
	if resp == nil {
		return notFound("Route")
	}
	return c.json(http.StatusOK, resp)
}

// deleteRoute removes a route and its destinations; the apps stop being reachable at
// it at once.
func (s *Server) deleteRoute(c *call) error {
	err := s.st.update(func(st *State) error {
		r := st.Routes[c.r.PathValue("guid")]
		if r == nil {
			return notFound("Route")
		}
		for _, app := range r.Apps {
			if a := st.Apps[app]; a != nil {
				st.audit("audit.app.unmap-route", a, map[string]any{"route_guid": r.GUID})
			}
		}
		delete(st.Routes, r.GUID)
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("route.delete", nil)
}

func (s *Server) renderDestinations(r *Route) any {
	dests := s.renderRoute(r, "").(obj)["destinations"]
	return obj{"destinations": dests, "links": obj{"self": link(s, "/v3/routes/"+r.GUID+"/destinations"), "route": link(s, "/v3/routes/"+r.GUID)}}
}

func (s *Server) routeDestinations(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		if r := st.Routes[c.r.PathValue("guid")]; r != nil {
			resp = s.renderDestinations(clone(r))
		}
	})
	if resp == nil {
		return notFound("Route")
	}
	return c.json(http.StatusOK, resp)
}

// addDestinations maps apps (their web process) to a route, keeping the ones mapped.
func (s *Server) addDestinations(c *call) error {
	var body struct {
		Destinations []struct {
			App struct {
				GUID    string `json:"guid"`
				Process *struct {
					Type string `json:"type"`
				} `json:"process"`
			} `json:"app"`
			Port     *int   `json:"port"`
			Protocol string `json:"protocol"`
		} `json:"destinations"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	for _, d := range body.Destinations {
		switch {
		case d.App.Process != nil && d.App.Process.Type != "" && d.App.Process.Type != "web":
			return unprocessable("Process type '%s' cannot be routed to here: only web processes listen", d.App.Process.Type)
		case d.Port != nil && *d.Port != 8080:
			return unprocessable("Port %d is not served here: instances listen on 8080 ($PORT) only", *d.Port)
		case d.Protocol != "" && d.Protocol != "http1" && d.Protocol != "http2":
			return unprocessable("Destination protocol must be 'http1' or 'http2' here: the local foundation has no TCP routing")
		}
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		r := st.Routes[c.r.PathValue("guid")]
		if r == nil {
			return nil, notFound("Route")
		}
		for _, d := range body.Destinations {
			a := st.Apps[d.App.GUID]
			if a == nil {
				return nil, unprocessable("App(s) with guid(s) \"%s\" do not exist or you do not have access.", d.App.GUID)
			}
			if a.SpaceGUID != r.SpaceGUID {
				return nil, unprocessable("Routes destinations must be in either the same space or a space that the route is shared with.")
			}
			if !slices.Contains(r.Apps, a.GUID) {
				r.Apps = append(slices.Clone(r.Apps), a.GUID) // a new slice: rendered copies share the old one
				if d.Protocol == "http2" {
					r.HTTP2Apps = append(slices.Clone(r.HTTP2Apps), a.GUID)
				}
				st.audit("audit.app.map-route", a, map[string]any{"route_guid": r.GUID, "app_port": 8080, "process_type": "web"})
			}
		}
		r.Updated = time.Now().UTC()
		return s.renderDestinations(clone(r)), nil
	})
}

func (s *Server) removeDestination(c *call) error {
	err := s.st.update(func(st *State) error {
		r := st.Routes[c.r.PathValue("guid")]
		if r == nil {
			return notFound("Route")
		}
		i := slices.IndexFunc(r.Apps, func(app string) bool { return destinationGUID(r.GUID, app) == c.r.PathValue("dest") })
		if i < 0 {
			return unprocessable("Unable to unmap route from destination. Ensure the route has a destination with this guid.")
		}
		if a := st.Apps[r.Apps[i]]; a != nil {
			st.audit("audit.app.unmap-route", a, map[string]any{"route_guid": r.GUID})
		}
		r.unmap(r.Apps[i])
		r.Updated = time.Now().UTC()
		return nil
	})
	if err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// listRouteBindings answers the list of route service bindings: there are none, as
// the local router forwards to no route service.
func (s *Server) listRouteBindings(c *call) error { return s.emptyList(c) }

func (s *Server) listAppRoutes(c *call) error {
	var found bool
	s.st.read(func(st *State) { found = st.Apps[c.r.PathValue("guid")] != nil })
	if !found {
		return notFound("App")
	}
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.routeList(c, q, c.r.PathValue("guid"))
}

func (s *Server) listRoutes(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return s.routeList(c, q, "")
}

func (s *Server) routeList(c *call, q *query, app string) error {
	var (
		out    []*Route
		render func(*Route) any
	)
	s.st.read(func(st *State) {
		for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
			appOK := q.list("app_guids") == nil
			for _, g := range q.list("app_guids") {
				appOK = appOK || slices.Contains(r.Apps, g)
			}
			if (app == "" || slices.Contains(r.Apps, app)) && appOK && q.match("space_guids", r.SpaceGUID) && q.match("hosts", r.Host) &&
				q.match("domain_guids", r.DomainGUID) && q.match("guids", r.GUID) && q.match("paths", r.Path) && q.labels(r.Metadata) {
				cp := *r
				out = append(out, &cp)
			}
		}
		urls := map[string]string{}
		for _, r := range out {
			urls[r.GUID] = st.routeURL(r)
		}
		render = func(r *Route) any { return s.renderRoute(r, urls[r.GUID]) }
	})
	return paginate(c, q, out, func(r *Route) string { return r.Host }, func(r *Route) time.Time { return r.Created }, render, nil)
}
