package platform

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// Scale sets the process's instance count, as `cf scale -i` does (POST
// /v3/processes/:guid/actions/scale); other figures stay. CF starts or stops instances
// afterwards: see WaitRunning.
func (c *CF) Scale(ctx context.Context, processGUID string, instances int) error {
	if instances < 0 {
		return fmt.Errorf("scale process %s to %d instances: want at least 0", processGUID, instances)
	}
	if _, err := c.cl.Processes.Scale(ctx, processGUID, &resource.ProcessScale{Instances: &instances}); err != nil {
		return fmt.Errorf("scale process %s to %d instances: %w", processGUID, instances, err)
	}
	return nil
}

// ScaleDown scales the web process of the app name in the space to 0 instances (the
// generators of a run whose process died); an app that is not there is nothing to do.
func (c *CF) ScaleDown(ctx context.Context, spaceGUID, name string) error {
	app, err := c.FindApp(ctx, spaceGUID, name)
	if err != nil || app == nil {
		return err
	}
	return c.Scale(ctx, app.ProcessGUID, 0)
}

// Instances returns the process's desired instance count and the stats of its
// instances (GET /v3/processes/:guid and its /stats): one entry per desired instance,
// in CF's order, with their states (RUNNING, STARTING, CRASHED, DOWN) and usage.
func (c *CF) Instances(ctx context.Context, processGUID string) (desired int, stats []resource.ProcessStat, err error) {
	p, err := c.cl.Processes.Get(ctx, processGUID)
	if err != nil {
		return 0, nil, fmt.Errorf("read process %s: %w", processGUID, err)
	}
	st, err := c.cl.Processes.GetStats(ctx, processGUID)
	if err != nil {
		return 0, nil, fmt.Errorf("read the stats of process %s: %w", processGUID, err)
	}
	return p.Instances, st.Stats, nil
}

// ErrNotRunning marks instances that did not come up in time.
var ErrNotRunning = errors.New("instances not running")

// WaitRunning polls the process's stats until at least n instances are RUNNING. It
// fails at once when fewer than n are desired; after timeout (or when ctx ends) with
// how many run and the state of the others, with CF's details (why an instance
// crashed or could not be placed). Crashed instances are not a failure before the
// timeout: CF restarts them.
func (c *CF) WaitRunning(ctx context.Context, processGUID string, n int, timeout time.Duration) error {
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		desired int
		stats   []resource.ProcessStat
	)
	err := poll(wait, func() (bool, error) {
		var err error
		desired, stats, err = c.Instances(wait, processGUID)
		if err != nil {
			return false, err
		}
		if desired < n {
			return false, fmt.Errorf("process %s has %d desired instances, fewer than the %d awaited. Try: cf scale %s -i %d",
				processGUID, desired, n, c.appName(ctx, processGUID), n)
		}
		return running(stats) >= n, nil
	})
	switch {
	case err == nil:
		return nil
	case wait.Err() == nil: // a failed call, not the time
		return fmt.Errorf("wait for process %s: %w", processGUID, err)
	case ctx.Err() != nil:
		return fmt.Errorf("wait for process %s (%d of %d running): %w", processGUID, running(stats), n, ctx.Err())
	}
	if len(stats) == 0 {
		// The time ran out before a poll came back (a short timeout, a slow API): one
		// more read, so that the error says what the instances are doing.
		read, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, stats, _ = c.Instances(read, processGUID)
		cancel()
	}
	app := c.appName(ctx, processGUID)
	return fmt.Errorf("%w: %d of %d awaited instances of app %s running after %s; %s. Try: cf app %s; cf logs %s --recent",
		ErrNotRunning, running(stats), n, app, timeout, others(stats), app, app)
}

// appName names the app of a process for a hint, or returns the process guid.
func (c *CF) appName(ctx context.Context, processGUID string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	p, err := c.cl.Processes.Get(ctx, processGUID)
	if err != nil || p.Relationships.App.Data == nil {
		return processGUID
	}
	a, err := c.cl.Applications.Get(ctx, p.Relationships.App.Data.GUID)
	if err != nil {
		return processGUID
	}
	return a.Name
}

func running(stats []resource.ProcessStat) int {
	n := 0
	for _, s := range stats {
		if s.State == "RUNNING" {
			n++
		}
	}
	return n
}

// others describes the instances that do not run: "#1 CRASHED (exited with status 1), #2 STARTING".
func others(stats []resource.ProcessStat) string {
	var out []string
	sorted := append([]resource.ProcessStat(nil), stats...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Index < sorted[j].Index })
	for _, s := range sorted {
		if s.State == "RUNNING" {
			continue
		}
		d := fmt.Sprintf("#%d %s", s.Index, s.State)
		if s.Details != nil && *s.Details != "" {
			d += " (" + *s.Details + exitHint(*s.Details) + ")"
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return "no instance reported"
	}
	return strings.Join(out, ", ")
}

// AppEnv returns the app's user-provided environment variables (GET
// /v3/apps/:guid/environment_variables), without what CF adds (VCAP_*, bindings).
func (c *CF) AppEnv(ctx context.Context, appGUID string) (map[string]string, error) {
	vars, err := c.cl.Applications.GetEnvironmentVariables(ctx, appGUID)
	if err != nil {
		return nil, fmt.Errorf("read the environment of app %s: %w", appGUID, err)
	}
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		if v != nil {
			out[k] = *v
		}
	}
	return out, nil
}

// SetAppEnv merges env into the app's user-provided environment variables (others
// stay). Running instances see the change only after Restart, as on CF. Names CF
// reserves (VCAP_*, PORT) are refused by CC.
func (c *CF) SetAppEnv(ctx context.Context, appGUID string, env map[string]string) error {
	req := make(map[string]*string, len(env))
	for k, v := range env {
		req[k] = &v
	}
	if _, err := c.cl.Applications.SetEnvironmentVariables(ctx, appGUID, req); err != nil {
		return fmt.Errorf("set the environment of app %s: %w", appGUID, err)
	}
	return nil
}

// UnsetAppEnv removes names from the app's user-provided environment variables (a
// PATCH with null values); names it does not have are no error.
func (c *CF) UnsetAppEnv(ctx context.Context, appGUID string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	req := make(map[string]*string, len(names))
	for _, n := range names {
		req[n] = nil
	}
	if _, err := c.cl.Applications.SetEnvironmentVariables(ctx, appGUID, req); err != nil {
		return fmt.Errorf("unset the environment of app %s: %w", appGUID, err)
	}
	return nil
}

// Restart stops and starts the app, so that its instances get its current env,
// bindings and scale (POST /v3/apps/:guid/actions/restart). It returns before the
// instances run: see WaitRunning.
func (c *CF) Restart(ctx context.Context, appGUID string) error {
	if _, err := c.cl.Applications.Restart(ctx, appGUID); err != nil {
		return fmt.Errorf("restart app %s: %w", appGUID, err)
	}
	return nil
}

// StopApp stops the app's instances; the app and its scale stay.
func (c *CF) StopApp(ctx context.Context, appGUID string) error {
	if _, err := c.cl.Applications.Stop(ctx, appGUID); err != nil {
		return fmt.Errorf("stop app %s: %w", appGUID, err)
	}
	return nil
}

// exitHint explains the shell's exit statuses that a start command meets before the
// app runs at all, from an instance's crash details.
func exitHint(details string) string {
	switch {
	case strings.HasSuffix(details, "status 126"):
		return ": the start command's program is not executable; give it the execute bit (chmod +x) before pushing"
	case strings.HasSuffix(details, "status 127"):
		return ": the start command's program was not found in the app"
	}
	return ""
}
