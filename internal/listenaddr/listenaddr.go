// Package listenaddr reads the address a user gives a server the run serves on this
// machine (--dashboard ADDR, --metrics prometheus:ADDR): this machine only unless
// another interface is named.
package listenaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Default is where such a server listens unless told: this machine only, a free port.
const Default = "127.0.0.1:0"

// Parse returns the address v asks for: Default for "", a port alone ("8080") or
// without a host (":8080") on 127.0.0.1; another interface, 0.0.0.0 included, only when
// named.
func Parse(v string) (string, error) {
	if v == "" {
		return Default, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		if _, perr := net.LookupPort("tcp", v); perr == nil {
			return net.JoinHostPort("127.0.0.1", v), nil
		}
		return "", fmt.Errorf("address %q: want HOST:PORT, :PORT or PORT", v)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return "", fmt.Errorf("address %q: bad port %q", v, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// SelfOnly wraps h, served on ln, so that on loopback it answers only requests whose
// Host names this machine (an IP address or localhost): a site whose name a browser
// resolves to 127.0.0.1 (DNS rebinding) could otherwise read the run's figures with
// the browser's help. On another interface, named by the user, h is returned as is.
func SelfOnly(ln net.Listener, h http.Handler) http.Handler {
	ap, err := netip.ParseAddrPort(ln.Addr().String())
	if err != nil || !ap.Addr().IsLoopback() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !selfHost(r.Host) {
			http.Error(w, "this server answers only to 127.0.0.1, [::1] or localhost", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// selfHost reports whether a Host header names this machine without a DNS name of
// someone else's: an IP address or localhost, with or without a port.
func selfHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return strings.EqualFold(host, "localhost")
}
