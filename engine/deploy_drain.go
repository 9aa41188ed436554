package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/routerlogs/drain"
	"github.com/cf-benchmark/cf-benchmark/dbaccess/tunnel"
	"github.com/cf-benchmark/cf-benchmark/internal/wait"
	"github.com/cf-benchmark/cf-benchmark/platform"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Drain app environment (cfbench drain): the run's credentials, the run, and its
// apps (the run's variants are recorded only as each starts).
const (
	envDrainAuth = "CFBENCH_DRAIN_AUTH"
	envDrainRun  = "CFBENCH_DRAIN_RUN"
	envDrainApps = "CFBENCH_DRAIN_APPS"
)

// DrainApp is the name of the spec's drain app (generators space) and of the
// user-provided service (apps space) whose syslog drain URL points at it.
func DrainApp(sp *spec.Spec) string { return sp.Name + "-drain" }

// usesDrain tells that sp's router logs come from a drain the run owns.
func usesDrain(sp *spec.Spec) bool {
	rl := sp.Collectors.RouterLogs
	return rl != nil && rl.Source == spec.SourceDrain
}

// drainTimings bound the waits of a run's drain.
var drainTimings = struct {
	// live bounds the wait for the drain to get a router line of every app before the
	// first step: CF's syslog agents learn of a new binding through the binding cache,
	// about a minute on a real foundation.
	live time.Duration
	// quiet ends the wait for the last lines after the run when none came for it.
	quiet time.Duration
	// poll is how often the drain's progress is read.
	poll time.Duration
	// cleanup bounds removing the drain, also after an interrupt.
	cleanup time.Duration
}{live: 3 * time.Minute, quiet: 5 * time.Second, poll: 500 * time.Millisecond, cleanup: 2 * time.Minute}

// runDrain is a run's drain on Cloud Foundry: the receiver app and the user-provided
// service bound to the variants' apps. Its zero fields are what was not made.
type runDrain struct {
	cf          *platform.CF
	store       *resultsdb.Store
	runID       string
	name        string
	app         *platform.App
	serviceGUID string
	log         *slog.Logger
}

// startDrain pushes the run's drain app (bound to the results database, with new
// credentials), creates the user-provided service with its URL as syslog drain in the
// apps space, binds it to every variant's app and waits until the drain gets a router
// line of each. On an error what was made is removed again.
func (d *Deployment) startDrain(ctx context.Context, sp *spec.Spec, runID string, note func(string)) (_ *runDrain, err error) {
	apps := map[string]string{}
	var targets []platform.Target
	var guids []string
	for _, name := range d.order {
		if a := d.variants[name].app; a != nil {
			apps[a.GUID] = a.Name
			targets, guids = append(targets, d.variants[name].target), append(guids, a.GUID)
		}
	}
	appsJSON, err := json.Marshal(apps)
	if err != nil {
		return nil, err
	}
	auth, err := tunnel.NewAuth()
	if err != nil {
		return nil, err
	}
	rd := &runDrain{cf: d.cf, store: d.Store, runID: runID, name: DrainApp(sp), log: d.log}
	defer func() {
		if err != nil {
			err = errors.Join(err, rd.remove(ctx))
		}
	}()
	note("pushing the drain app " + rd.name)
	rd.app, err = pushBound(ctx, d.cf, sp, d.Landscape, rd.name, d.pushed, "drain", fmt.Sprintf("%dM", drainMemoryMB), "256M", d.startTimeout,
		map[string]string{envDrainAuth: auth, envDrainRun: runID, envDrainApps: string(appsJSON), "GOMEMLIMIT": "200MiB"})
	if err != nil {
		return rd, fmt.Errorf("drain app: %w", err)
	}
	target, err := d.cf.RouteTarget(ctx, rd.app.GUID)
	if err != nil {
		return rd, fmt.Errorf("drain app: %w", err)
	}
	drainURL, err := withUserInfo(target.URL, auth)
	if err != nil {
		return rd, fmt.Errorf("drain app: %w", err)
	}
	var removed bool
	rd.serviceGUID, removed, err = d.cf.CreateDrainService(ctx, d.Landscape.Apps.GUID, rd.name, drainURL)
	if err != nil {
		return rd, err
	}
	if removed {
		note("removed the drain service " + rd.name + " an earlier run left behind")
	}
	for _, guid := range guids {
		if _, err := d.cf.Bind(ctx, guid, rd.serviceGUID); err != nil {
			return rd, fmt.Errorf("drain: %w", err)
		}
	}
	note(fmt.Sprintf("router logs: every router line of %d app(s) goes to the drain app %s (user-provided service %s)", len(guids), rd.name, rd.name))
	return rd, rd.waitLive(ctx, guids, targets)
}

// withUserInfo is rawURL with user:password as its user info and "/" as its path.
func withUserInfo(rawURL, auth string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	user, pass, _ := strings.Cut(auth, ":")
	u.User, u.Path = url.UserPassword(user, pass), "/"
	return u.String(), nil
}

// counters reads what the drain stored and counted so far (zero before it wrote).
func (rd *runDrain) counters(ctx context.Context) (stored int64, c drain.Counters, err error) {
	p, err := rd.store.LogPull(ctx, rd.runID, drain.Source)
	if err != nil || p == nil {
		return 0, c, err
	}
	if len(p.Counters) > 0 {
		if err := json.Unmarshal(p.Counters, &c); err != nil {
			return 0, c, fmt.Errorf("the drain's counters: %w", err)
		}
	}
	return p.Stored, c, nil
}

// waitLive sends a request to each app (apps[i] at targets[i]) through the router until
// the drain has a router line of it: CF's syslog agents start sending a new binding's
// lines after a while, and the run's first step must not start before.
func (rd *runDrain) waitLive(ctx context.Context, apps []string, targets []platform.Target) error {
	deadline := time.Now().Add(drainTimings.live)
	for i, guid := range apps {
		client := targetClient(targets[i])
		for {
			if resp, err := client.Get(targets[i].URL + "/"); err == nil {
				resp.Body.Close()
			}
			if !wait.For(ctx, drainTimings.poll) {
				return ctx.Err()
			}
			_, c, err := rd.counters(ctx)
			if err != nil {
				return err
			}
			if c.RouterByApp[guid] > 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the drain app %s got no router line of app %s within %s of binding it; no load was sent. Try: cf logs %s --recent",
					rd.name, guid, drainTimings.live, rd.name)
			}
		}
	}
	return nil
}

// targetClient reaches t: through t.ConnectTo when set (the local foundation's router).
func targetClient(t platform.Target) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	if t.ConnectTo != "" {
		d := &net.Dialer{Timeout: 5 * time.Second}
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, t.ConnectTo)
		}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: tr}
}

// settle waits, after the run's last step, for the last router lines to reach the
// drain: until it stored a line of every answered request, or none came for
// drainTimings.quiet, or max passed. It says how far it got.
func (rd *runDrain) settle(ctx context.Context, max time.Duration, note func(string)) {
	start := time.Now()
	last, lastChange := int64(-1), start
	for {
		stored, _, err := rd.counters(ctx)
		if err != nil {
			rd.log.Warn("read the drain's progress", "err", err)
		}
		answered, aerr := rd.store.AnsweredSamples(ctx, rd.runID)
		if aerr != nil {
			rd.log.Warn("count the answered requests", "err", aerr)
		}
		now := time.Now()
		if stored != last {
			last, lastChange = stored, now
		}
		switch {
		case err == nil && aerr == nil && stored >= answered:
			note(fmt.Sprintf("router logs: the drain has stored a line of every one of the %d answered requests", answered))
			return
		case now.Sub(lastChange) >= drainTimings.quiet || now.Sub(start) >= max:
			note(fmt.Sprintf("router logs: the drain has stored lines of %d of %d answered requests; no more came within %s",
				stored, answered, now.Sub(lastChange).Round(time.Second)))
			return
		}
		if !wait.For(ctx, drainTimings.poll) {
			return
		}
	}
}

// remove unbinds and deletes the drain service, then deletes the drain app (which
// stores what it buffered on its way down). It runs to its end when ctx was
// cancelled (an interrupted run), within drainTimings.cleanup.
func (rd *runDrain) remove(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimings.cleanup)
	defer cancel()
	var errs []error
	if rd.serviceGUID != "" {
		if err := rd.cf.DeleteServiceInstance(ctx, rd.serviceGUID); err != nil {
			errs = append(errs, fmt.Errorf("%w. Try: cf unbind-service APP %s; cf delete-service %s -f", err, rd.name, rd.name))
		} else {
			rd.serviceGUID = ""
		}
	}
	if rd.app != nil {
		if err := rd.cf.DeleteApp(ctx, rd.app.GUID); err != nil {
			errs = append(errs, fmt.Errorf("%w. Try: cf delete %s -f", err, rd.name))
		} else {
			rd.app = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the run's drain: %w", err)
	}
	return nil
}
