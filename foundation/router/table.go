package router

// Table resolves requests to backends. Implementations are safe for
// concurrent use and fast: the router calls them on every request, so they
// must not block on I/O.
type Table interface {
	// Route returns the route for a request host (lowercased, port
	// stripped) and path (escaped, as received): the route of the host whose
	// path is the longest prefix of the request's, as gorouter matches; ok is
	// false when no route exists.
	Route(host, path string) (Route, bool)
	// Instance returns one instance of an app, for the X-Cf-App-Instance
	// header (APP_GUID:INDEX); ok is false when the app or index is unknown
	// or the instance is not running.
	Instance(appGUID string, index int) (Backend, bool)
}

// Route is what a host (and path) maps to: one app and its running instances.
type Route struct {
	AppGUID string
	// HTTP2: the app's destination protocol is http2, so the router speaks
	// HTTP/2 without TLS (h2c) to its instances, as gorouter does for such
	// destinations; HTTP/1.1 otherwise.
	HTTP2 bool
	// Backends holds the running instances only. It may be empty, which
	// the router answers with 503 and X-Cf-Routererror: no_endpoints. The
	// router reads it after Route has returned and never modifies it, so
	// a Table replaces the slice on change rather than editing it.
	Backends []Backend
}

// Backend is one app instance the router can forward to.
type Backend struct {
	Addr         string // host:port, e.g. 127.0.0.1:61001
	Index        int
	InstanceGUID string
}
