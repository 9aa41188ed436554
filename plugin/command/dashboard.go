package command

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"

	"github.com/cf-benchmark/cf-benchmark/report/dashboard"
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

// take checks the address asked for and returns args without it when it was given as
// the argument after a bare --dashboard: the first of args that isRunID (nil: none)
// does not claim.
func (d *dashboardFlag) take(args []string, isRunID func(string) bool) ([]string, error) {
	if !d.given {
		return args, nil
	}
	if d.addr == "" {
		for i, a := range args {
			if isRunID == nil || !isRunID(a) {
				d.addr = a
				args = append(args[:i:i], args[i+1:]...)
				break
			}
		}
	}
	addr, err := dashboard.ListenAddr(d.addr)
	if err != nil {
		return nil, usagef("--dashboard: %v", err)
	}
	d.addr = addr
	return args, nil
}

// start starts the dashboard when asked for (after take); nil when not.
func (d *dashboardFlag) start(ctx context.Context, log *slog.Logger) (*dashboard.Server, error) {
	if !d.given {
		return nil, nil
	}
	srv := dashboard.New(dashboard.Config{Addr: d.addr, Logger: log})
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	return srv, nil
}

// printDashboard says where the dashboard is, for people (JSON carries it in the
// started event).
func printDashboard(env *Env, srv *dashboard.Server) {
	hint := ""
	if u, err := url.Parse(srv.URL()); err == nil {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && ip.IsUnspecified() {
			hint = ", on every interface: open it with this machine's address"
		}
	}
	fmt.Fprintf(env.Stdout, "dashboard: %s (live until the run ends, then its report%s)\n", srv.URL(), hint)
}
