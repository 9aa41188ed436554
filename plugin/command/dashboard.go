package command

import (
	"flag"
	"fmt"
	"net/netip"
	neturl "net/url"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/engine"
)

// dashboardFlag is --dashboard [ADDR]: a flag without a value (a free port on
// 127.0.0.1), --dashboard=ADDR, or --dashboard followed by ADDR as the next argument.
type dashboardFlag struct {
	given bool
	addr  string
}

func (d *dashboardFlag) register(fs *flag.FlagSet) {
	fs.Var(d, "dashboard", "serve a live page of the run at ADDR (--dashboard [ADDR]; default 127.0.0.1 and a free port, printed): "+
		"its charts every second, then its report; another interface (0.0.0.0) only when named")
}

func (d *dashboardFlag) String() string { return d.addr }

func (d *dashboardFlag) Set(v string) error {
	d.given = true
	if v == "true" { // given without a value
		return nil
	}
	if v == "false" {
		d.given = false
		return nil
	}
	d.addr = v
	return nil
}

// IsBoolFlag lets --dashboard stand without a value.
func (d *dashboardFlag) IsBoolFlag() bool { return true }

// take returns args without the address when it was given as the argument after a
// bare --dashboard: the first of args that isRunID (nil: none) does not claim.
// engine.NewWatch checks the address.
func (d *dashboardFlag) take(args []string, isRunID func(string) bool) []string {
	if !d.given || d.addr != "" {
		return args
	}
	for i, a := range args {
		if isRunID == nil || !isRunID(a) {
			d.addr = a
			return append(args[:i:i], args[i+1:]...)
		}
	}
	return args
}

// watch is the dashboard asked for, and the metrics (--metrics, "" for none).
func (d *dashboardFlag) watch(metrics string) (*engine.Watch, error) {
	w, err := engine.NewWatch(engine.WatchOptions{Dashboard: d.given, DashboardAddr: d.addr, Metrics: metrics})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return w, nil
}

// printDashboard says where the dashboard at url is, for people (JSON carries it in
// the started event).
func printDashboard(env *Env, url string) {
	hint := ""
	if u, err := neturl.Parse(url); err == nil {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && ip.IsUnspecified() {
			hint = ", on every interface: open it with this machine's address"
		}
	}
	fmt.Fprintf(env.Stdout, "dashboard: %s (live until the run ends, then its report%s)\n", url, hint)
}

// printMetrics says where the metrics go, for people (JSON carries it in the started
// event).
func printMetrics(env *Env, where, kind string) {
	if kind == "prometheus" {
		fmt.Fprintf(env.Stdout, "metrics: %s (Prometheus; live until the run ends, then its report's figures)\n", where)
		return
	}
	fmt.Fprintf(env.Stdout, "metrics: pushed to %s (OTLP; live until the run ends, then its report's figures)\n", where)
}
