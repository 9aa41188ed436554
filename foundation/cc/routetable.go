// The router's view of routes: a request's host and path resolved to the app that
// serves it, from an index rebuilt whenever the routes change.

package cc

import (
	"slices"
	"strings"
	"time"
)

// pathRoute is one route of a host: its path (lowercase, "" for none), its app, and
// whether that app's destination protocol is http2.
type pathRoute struct {
	path, app string
	http2     bool
}

// Lookup resolves a request's host (host.domain, no port, any case) and path to the app
// whose web process serves it (its guid is the app's) and whether the router speaks
// HTTP/2 to it (its destination protocol is http2), as gorouter does: the route of
// the host whose path is the longest prefix of the request's path, compared
// case-insensitively and on whole segments (/foo matches /foo and /foo/bar, not
// /foobar). It takes no lock: the router calls it on every request.
func (s *Server) Lookup(host, path string) (appGUID string, http2, ok bool) {
	m := s.hosts.Load()
	if m == nil {
		return "", false, false
	}
	for _, r := range (*m)[strings.ToLower(host)] { // longest path first
		if r.path == "" || prefixSegments(path, r.path) {
			return r.app, r.http2, true
		}
	}
	return "", false, false
}

// prefixSegments reports whether path (any case) begins with the whole segments of
// prefix (lowercase, no trailing slash).
func prefixSegments(path, prefix string) bool {
	if len(path) < len(prefix) || !strings.EqualFold(path[:len(prefix)], prefix) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/'
}

func (s *Server) indexRoutes(st *State) {
	m := make(map[string][]pathRoute, len(st.Routes))
	for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
		if len(r.Apps) > 0 {
			host := strings.ToLower(st.routeHost(r))
			m[host] = append(m[host], pathRoute{path: strings.TrimSuffix(strings.ToLower(r.Path), "/"), app: r.Apps[0], http2: r.protocol(r.Apps[0]) == "http2"})
		}
	}
	for _, routes := range m {
		slices.SortStableFunc(routes, func(a, b pathRoute) int { return len(b.path) - len(a.path) })
	}
	s.hosts.Store(&m)
}
