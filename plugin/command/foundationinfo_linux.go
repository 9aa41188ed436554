package command

import (
	"fmt"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/foundation"
)

// printFoundation prints how to reach a running foundation and log in to it.
func printFoundation(env *Env, in foundation.Info, headline string) {
	w := env.Stdout
	fmt.Fprintf(w, "%s\n", headline)
	fmt.Fprintf(w, "  API:        %s\n", in.APIURL)
	fmt.Fprintf(w, "  Router:     http://%s  (routes are *.%s: send the Host header, e.g. curl -H 'Host: myapp.%s' http://%s/)\n", in.RouterAddr, in.AppsDomain, in.AppsDomain, in.RouterAddr)
	fmt.Fprintf(w, "  User:       %s\n", in.User)
	fmt.Fprintf(w, "  Password:   %s\n", in.Password)
	fmt.Fprintf(w, "  State:      %s (access log: %s)\n", in.StateDir, in.AccessLog)
	if in.LogStore != "" {
		fmt.Fprintf(w, "  Log store:  %s (the router lines the log quota kept; collectors.router_logs source: file)\n", in.LogStore)
	}
	if in.Isolation != "" {
		fmt.Fprintf(w, "  Isolation:  %s\n", in.Isolation)
		if strings.HasPrefix(in.Isolation, "NONE") {
			fmt.Fprintf(w, "Warning: without isolation, CPU figures of apps and generators taint each other.\n")
		}
	}
	fmt.Fprintf(w, "Log in with the cf CLI:\n")
	fmt.Fprintf(w, "  cf api %s\n", in.APIURL)
	fmt.Fprintf(w, "  cf auth %s %s\n", in.User, in.Password)
	fmt.Fprintf(w, "  cf target -o cfbench -s apps\n")
}
