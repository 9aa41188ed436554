package command

import (
	"flag"

	"github.com/cf-benchmark/cf-benchmark/engine"
)

// tunnelFlags are the flags that reach the results database through the tunnel app
// (cmd/cfbench: cfbench tunnel, package tunnel) instead of directly.
type tunnelFlags struct {
	url, auth, fingerprint, host string
}

func (t *tunnelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.url, "tunnel", "", "URL of the tunnel app (manifests/tunnel.yml): reach the results DB through it; --db is then the DB's URL as the app's binding gives it. "+
		"Example: CFBENCH_TUNNEL_AUTH=user:pass cf-benchmark export RUN_ID --db postgres://u:p@10.0.4.2:5432/results --tunnel https://cfbench-tunnel.apps.example.com --tunnel-fingerprint FP")
	fs.StringVar(&t.auth, "tunnel-auth", "", "user:password of the tunnel (default $CFBENCH_TUNNEL_AUTH; prefer the variable: flags show in ps)")
	fs.StringVar(&t.fingerprint, "tunnel-fingerprint", "", "fingerprint of the tunnel app's key, as its log prints it (default $CFBENCH_TUNNEL_FINGERPRINT)")
	fs.StringVar(&t.host, "tunnel-host", "", "Host header for the tunnel, to reach it through a router by its route (e.g. cfbench-tunnel.apps.localhost)")
}

// server is the tunnel app the flags name, nil without --tunnel; its user:password and
// fingerprint default to the environment's.
func (t *tunnelFlags) server(env *Env) (*engine.TunnelServer, error) {
	if t.url == "" {
		if t.host != "" || t.auth != "" || t.fingerprint != "" {
			return nil, usagef("--tunnel-auth, --tunnel-fingerprint and --tunnel-host go with --tunnel URL")
		}
		return nil, nil
	}
	s := &engine.TunnelServer{URL: t.url, Host: t.host, Auth: t.auth, Fingerprint: t.fingerprint}
	if s.Auth == "" {
		s.Auth = env.Getenv("CFBENCH_TUNNEL_AUTH")
	}
	if s.Fingerprint == "" {
		s.Fingerprint = env.Getenv("CFBENCH_TUNNEL_FINGERPRINT")
	}
	return s, nil
}
