package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/dbaccess/testpg"
	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testtier"
)

// TestFoundationChaos: the chaos actions against a running foundation, found from its
// state dir, an app named by its name or its guid; what it cannot find is an error
// that says so, never a stack trace.
func TestFoundationChaos(t *testing.T) {
	// Served as `foundation start` serves it, so that the state dir names this process.
	testtier.External(t, "the local foundation (a real PostgreSQL server)")
	dir := testpg.Dir(t)
	ctx, cancel := context.WithCancel(context.Background())
	served, ready := make(chan error, 1), make(chan foundation.Info, 1)
	go func() {
		served <- foundation.Serve(ctx, foundation.Config{StateDir: dir, StatsInterval: 200 * time.Millisecond, StopGrace: 2 * time.Second,
			Throwaway: true, RouterDrainWait: 100 * time.Millisecond}, func(i foundation.Info) { ready <- i })
	}()
	t.Cleanup(func() { cancel(); <-served })
	var info foundation.Info
	select {
	case info = <-ready:
	case err := <-served:
		t.Fatal(err)
	}
	cfg, err := config.New(info.APIURL, config.UserPassword(info.User, info.Password))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bits := testfoundation.StubZip(t)
	app := testfoundation.PushStub(t, cl, bits, "apps", "chaos-cli", 1)
	testfoundation.PushStub(t, cl, bits, "apps", "twin", 1)
	// Its twin in the other space needs no bits.
	loadgen, err := cl.Spaces.Single(ctx, &client.SpaceListOptions{Names: client.Filter{Values: []string{"loadgen"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Applications.Create(ctx, resource.NewAppCreate("twin", loadgen.GUID)); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now}
		code := Main(context.Background(), env, append(append([]string{"foundation", "chaos"}, args...), "--state-dir", dir))
		return code, out.String(), errb.String()
	}
	// Crashing needs a running instance.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, out, errb := run("crash", "chaos-cli")
		if code == ExitOK {
			if !strings.Contains(out, "Crashed web instance 0 of chaos-cli") || !strings.Contains(out, "cell apps") {
				t.Errorf("crash: %s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash: exit %d: %s%s", code, out, errb)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"restart-router"}, ExitOK, "Router draining since"},
		{[]string{"expire-tokens"}, ExitOK, "Access tokens issued before"},
		{[]string{"crash", "nope"}, ExitFailure, `no app named "nope"`},
		{[]string{"crash", "twin"}, ExitFailure, "apps named \"twin\" are in more than one space: apps (guid"},
		{[]string{"oom", app, "7"}, ExitFailure, "chaos oom: CF-ResourceNotFound: no such instance"},
		{[]string{"evacuate", "nowhere"}, ExitFailure, `chaos evacuate: CF-ResourceNotFound: no such cell "nowhere" (cells: "apps", "loadgen")`},
		{[]string{"oom", "chaos-cli"}, ExitUsage, "chaos oom APP INDEX"},
		{[]string{"crash", "chaos-cli", "x"}, ExitUsage, "want 0 or more"},
		{[]string{"dance"}, ExitUsage, `unknown chaos action "dance"`},
	} {
		code, out, errb := run(c.args...)
		if code != c.code || !strings.Contains(out+errb, c.want) || strings.Contains(errb, "goroutine") {
			t.Errorf("%v: exit %d, %s%s; want exit %d and %q", c.args, code, out, errb, c.code, c.want)
		}
	}
}
