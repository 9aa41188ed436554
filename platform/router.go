package platform

import (
	"context"
	"fmt"

	"github.com/cloudfoundry/go-cfclient/v3/client"
)

// Target is how a client outside CF (or a generator on it) reaches a route.
type Target struct {
	// URL is the route's URL: "https://host[/path]" on a real CF, "http://host[/path]"
	// on the local foundation.
	URL string
	// ConnectTo is the host:port to dial instead of URL's host, with URL's host as the
	// Host header: the local foundation's router, since its apps domain does not
	// resolve. "" on a real CF.
	ConnectTo string
}

// RouteTarget returns the app's first HTTP route as a Target. A foundation that
// advertises a router in its root document (the local foundation's non-standard
// cfbench_router link) is reached there over plain HTTP; any other CF over HTTPS at
// the route's own host.
func (c *CF) RouteTarget(ctx context.Context, appGUID string) (Target, error) {
	routes, err := c.cl.Routes.ListForAppAll(ctx, appGUID, client.NewRouteListOptions())
	if err != nil {
		return Target{}, fmt.Errorf("read the routes of app %s: %w", appGUID, err)
	}
	url := ""
	for _, r := range routes {
		if r.Protocol == "http" || r.Protocol == "" {
			url = r.URL
			break
		}
	}
	if url == "" {
		return Target{}, fmt.Errorf("app %s has no HTTP route. Try: cf map-route APP DOMAIN --hostname HOST", appGUID)
	}
	router, err := c.routerAddr(ctx)
	if err != nil {
		return Target{}, err
	}
	if router != "" {
		return Target{URL: "http://" + url, ConnectTo: router}, nil
	}
	return Target{URL: "https://" + url}, nil
}
