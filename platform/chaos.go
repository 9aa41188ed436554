package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// ChaosRequest is a fault for the local foundation's chaos API (its API root's
// non-standard cfbench_chaos link): crash and oom hit one instance of AppGUID
// (ProcessType default web, Index default 0), evacuate empties Cell, restart-router and
// expire-tokens take nothing.
type ChaosRequest struct {
	Action      string `json:"action"`
	AppGUID     string `json:"app_guid,omitempty"`
	ProcessType string `json:"process_type,omitempty"`
	Index       int    `json:"index"`
	Cell        string `json:"cell,omitempty"`
}

// ChaosInstance is an instance a fault hit: the guid it had then, and its cell.
type ChaosInstance struct {
	AppGUID      string `json:"app_guid"`
	ProcessType  string `json:"process_type"`
	Index        int    `json:"index"`
	InstanceGUID string `json:"instance_guid"`
	Cell         string `json:"cell"`
}

// ChaosResult is the chaos API's answer: when the fault was applied (a kill sent, an
// evacuation or a router drain begun, not a recovery) and the instances it hit (none
// for restart-router and expire-tokens).
type ChaosResult struct {
	Action    string          `json:"action"`
	At        time.Time       `json:"at"`
	Instances []ChaosInstance `json:"instances"`
}

// ErrNoChaos is returned by Chaos on a foundation without a chaos API: any real Cloud
// Foundry. Only restart-instance (RestartInstance) works there.
var ErrNoChaos = errors.New("the foundation has no chaos API (the local foundation's cfbench_chaos link): only restart-instance works on it")

// ChaosSupported says whether the foundation has the local foundation's chaos API; false
// also when its API root cannot be read.
func (c *CF) ChaosSupported(ctx context.Context) bool {
	r, err := c.root(ctx)
	return err == nil && r.chaos != ""
}

// Chaos applies a fault through the local foundation's chaos API and returns once it is
// applied, not recovered. A foundation without one gives ErrNoChaos; the API's refusals
// (403 for a user who is no admin, 404 for an unknown app, cell or instance, 422 for a
// bad action or a missing field) come as the CC errors they are.
func (c *CF) Chaos(ctx context.Context, req ChaosRequest) (ChaosResult, error) {
	r, err := c.root(ctx)
	if err != nil {
		return ChaosResult{}, err
	}
	if r.chaos == "" {
		return ChaosResult{}, ErrNoChaos
	}
	body, err := json.Marshal(req)
	if err != nil {
		return ChaosResult{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, r.chaos, bytes.NewReader(body))
	if err != nil {
		return ChaosResult{}, fmt.Errorf("chaos %s: %w", req.Action, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.cl.ExecuteAuthRequest(hr) // a status other than 2xx is the CC error it carries
	if err != nil {
		return ChaosResult{}, fmt.Errorf("chaos %s: %w", req.Action, ccError{err})
	}
	defer resp.Body.Close()
	var out ChaosResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return ChaosResult{}, fmt.Errorf("chaos %s: read the answer: %w", req.Action, err)
	}
	return out, nil
}

// ccError says a CC error as the CC names it ("CF-ResourceNotFound: no such cell …"),
// not in go-cfclient's wording; errors.As still finds the CloudFoundryError.
type ccError struct{ err error }

func (e ccError) Error() string {
	var ce resource.CloudFoundryError
	if errors.As(e.err, &ce) {
		return ce.Title + ": " + ce.Detail
	}
	return e.err.Error()
}

func (e ccError) Unwrap() error { return e.err }

var guidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// AppGUID is the guid of the app that app names: the app with that guid, else the one
// app of that name in whatever space the user sees. No such app, or apps of that name
// in more than one space (which must then be told apart by guid), is an error that says
// what to give instead.
func (c *CF) AppGUID(ctx context.Context, app string) (string, error) {
	if guidPattern.MatchString(app) {
		a, err := c.cl.Applications.Get(ctx, app)
		if err == nil {
			return a.GUID, nil
		}
		if !notFound(err) {
			return "", fmt.Errorf("app %s: %w", app, ccError{err})
		}
	}
	opts := client.NewAppListOptions()
	opts.Names.EqualTo(app)
	apps, err := c.cl.Applications.ListAll(ctx, opts)
	if err != nil {
		return "", fmt.Errorf("apps named %q: %w", app, ccError{err})
	}
	switch len(apps) {
	case 0:
		return "", fmt.Errorf("no app named %q on the foundation (cf apps lists them)", app)
	case 1:
		return apps[0].GUID, nil
	}
	var spaces []string
	for _, a := range apps {
		name := ""
		if d := a.Relationships.Space.Data; d != nil {
			name = d.GUID
		}
		if sp, err := c.cl.Spaces.Get(ctx, name); err == nil {
			name = sp.Name
		}
		spaces = append(spaces, fmt.Sprintf("%s (guid %s)", name, a.GUID))
	}
	slices.Sort(spaces)
	return "", fmt.Errorf("apps named %q are in more than one space: %s; give the app's guid", app, strings.Join(spaces, ", "))
}

// notFound reports whether err is the CC's 404.
func notFound(err error) bool {
	var he resource.CloudFoundryHTTPError
	return resource.IsResourceNotFoundError(err) || errors.As(err, &he) && he.StatusCode == http.StatusNotFound
}

// RestartInstance stops instance index of the app's process of processType ("" = web)
// through the Cloud Controller (DELETE /v3/processes/:guid/instances/:index), which
// works on any Cloud Foundry; Diego starts it again. It returns once the CC accepted.
func (c *CF) RestartInstance(ctx context.Context, appGUID, processType string, index int) error {
	if processType == "" {
		processType = "web"
	}
	opts := client.NewProcessOptions()
	opts.Types.EqualTo(processType)
	p, err := c.cl.Processes.SingleForApp(ctx, appGUID, opts)
	if err != nil {
		return fmt.Errorf("restart instance %d of app %s: find its %s process: %w", index, appGUID, processType, err)
	}
	if err := c.cl.Processes.Terminate(ctx, p.GUID, index); err != nil {
		return fmt.Errorf("restart instance %d of app %s: %w", index, appGUID, err)
	}
	return nil
}
