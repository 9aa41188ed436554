// Package listenaddr reads the address a user gives a server the run serves on this
// machine (--dashboard ADDR, --metrics prometheus:ADDR): this machine only unless
// another interface is named.
package listenaddr

import (
	"fmt"
	"net"
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
