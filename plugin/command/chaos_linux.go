package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
)

// chaosUsage is how `foundation chaos` is called.
const chaosUsage = "give one of: chaos crash APP [INDEX], chaos oom APP INDEX, chaos evacuate CELL, chaos restart-router, chaos expire-tokens"

// foundationChaos applies a fault to the foundation running from dir (args after
// "chaos": the action and its operands) through its API's chaos endpoint, as the admin
// whose credentials the state dir's settings hold.
func foundationChaos(ctx context.Context, env *Env, dir string, args []string) error {
	if len(args) == 0 {
		return usagef("%s", chaosUsage)
	}
	action, ops := args[0], args[1:]
	body := map[string]any{"action": action}
	var app string
	switch action {
	case "crash", "oom":
		if len(ops) < 1 || len(ops) > 2 || action == "oom" && len(ops) != 2 {
			if action == "oom" {
				return usagef("chaos oom takes an app (name or guid) and an instance index: chaos oom APP INDEX")
			}
			return usagef("chaos crash takes an app (name or guid) and an optional instance index: chaos crash APP [INDEX]")
		}
		app, body["index"] = ops[0], 0
		if len(ops) == 2 {
			i, err := strconv.Atoi(ops[1])
			if err != nil || i < 0 {
				return usagef("instance index %q: want 0 or more", ops[1])
			}
			body["index"] = i
		}
	case "evacuate":
		if len(ops) != 1 {
			return usagef("chaos evacuate takes a cell (isolation segment) name: chaos evacuate CELL")
		}
		body["cell"] = ops[0]
	case "restart-router", "expire-tokens":
		if len(ops) != 0 {
			return usagef("chaos %s takes no operands", action)
		}
	default:
		return usagef("unknown chaos action %q: %s", action, chaosUsage)
	}

	st, err := foundation.ReadStatus(ctx, dir)
	if errors.Is(err, foundation.ErrNotRunning) {
		// Exit 3, as foundation status; that exit prints nothing of its own.
		fmt.Fprintf(env.Stderr, "error: no foundation is running from %s; start one with: cf-benchmark foundation start --detach --state-dir %s\n", dir, dir)
		return err
	}
	if err != nil {
		return err
	}
	if !st.Answering {
		return fmt.Errorf("the foundation running from %s (pid %d) does not answer: see %s", dir, st.PID, foundation.LogFile(dir))
	}
	c, err := chaosLogin(ctx, st.Info)
	if err != nil {
		return err
	}
	href, err := c.chaosHref(ctx)
	if err != nil {
		return err
	}
	if app != "" {
		if body["app_guid"], err = c.resolveApp(ctx, app); err != nil {
			return err
		}
	}
	var out struct {
		At        string `json:"at"`
		Instances []struct {
			AppGUID      string `json:"app_guid"`
			ProcessType  string `json:"process_type"`
			Index        int    `json:"index"`
			InstanceGUID string `json:"instance_guid"`
			Cell         string `json:"cell"`
		} `json:"instances"`
	}
	if err := c.call(ctx, "POST", href, body, &out); err != nil {
		return err
	}
	switch action {
	case "crash", "oom":
		in := out.Instances[0]
		what := "Crashed"
		if action == "oom" {
			what = "OOM-killed"
		}
		fmt.Fprintf(env.Stdout, "%s %s instance %d of %s (instance %s, cell %s) at %s; the cell restarts it.\n",
			what, in.ProcessType, in.Index, app, in.InstanceGUID, in.Cell, out.At)
	case "evacuate":
		fmt.Fprintf(env.Stdout, "Evacuating cell %s at %s: %d instances move (each keeps serving until its replacement runs).\n",
			ops[0], out.At, len(out.Instances))
		for _, in := range out.Instances {
			fmt.Fprintf(env.Stdout, "  app %s %s/%d instance %s\n", in.AppGUID, in.ProcessType, in.Index, in.InstanceGUID)
		}
	case "restart-router":
		fmt.Fprintf(env.Stdout, "Router draining since %s: it serves for its drain wait, then closes its connections and starts again on %s.\n",
			out.At, st.Info.RouterAddr)
	case "expire-tokens":
		fmt.Fprintf(env.Stdout, "Access tokens issued before %s are expired: clients must refresh theirs.\n", out.At)
	}
	return nil
}

// chaosClient calls a foundation's API as its admin.
type chaosClient struct {
	api   string
	token string
	http  *http.Client
}

// chaosLogin gets the admin a token, as the cf CLI logs in (password grant, client cf).
func chaosLogin(ctx context.Context, info foundation.Info) (*chaosClient, error) {
	c := &chaosClient{api: info.APIURL, http: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	form := url.Values{"grant_type": {"password"}, "username": {info.User}, "password": {info.Password}}
	req, err := http.NewRequestWithContext(ctx, "POST", c.api+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := c.do(req, &tok); err != nil {
		return nil, fmt.Errorf("log in to the foundation's API: %w", err)
	}
	c.token = tok.AccessToken
	return c, nil
}

// chaosHref is the API's chaos endpoint, from its root document.
func (c *chaosClient) chaosHref(ctx context.Context) (string, error) {
	var root struct {
		Links map[string]*struct {
			Href string `json:"href"`
		} `json:"links"`
	}
	if err := c.call(ctx, "GET", c.api+"/", nil, &root); err != nil {
		return "", err
	}
	if l := root.Links["cfbench_chaos"]; l != nil && l.Href != "" {
		return l.Href, nil
	}
	return "", errors.New("the running foundation has no chaos endpoint (links.cfbench_chaos): restart it with this cf-benchmark")
}

var guidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// resolveApp finds the guid of the app named app (or with guid app), in whatever space;
// a name in more than one space must be given as a guid.
func (c *chaosClient) resolveApp(ctx context.Context, app string) (string, error) {
	if guidPattern.MatchString(app) {
		var a struct {
			GUID string `json:"guid"`
		}
		err := c.call(ctx, "GET", c.api+"/v3/apps/"+app, nil, &a)
		if err == nil {
			return a.GUID, nil
		}
		var ce *ccError
		if !errors.As(err, &ce) || ce.status != http.StatusNotFound {
			return "", err
		}
	}
	var list struct {
		Resources []struct {
			GUID          string `json:"guid"`
			Relationships struct {
				Space struct {
					Data struct {
						GUID string `json:"guid"`
					} `json:"data"`
				} `json:"space"`
			} `json:"relationships"`
		} `json:"resources"`
	}
	if err := c.call(ctx, "GET", c.api+"/v3/apps?per_page=5000&names="+url.QueryEscape(app), nil, &list); err != nil {
		return "", err
	}
	switch len(list.Resources) {
	case 0:
		return "", fmt.Errorf("no app named %q on the foundation (cf apps lists them)", app)
	case 1:
		return list.Resources[0].GUID, nil
	}
	var spaces []string
	for _, a := range list.Resources {
		name := a.Relationships.Space.Data.GUID
		var sp struct {
			Name string `json:"name"`
		}
		if c.call(ctx, "GET", c.api+"/v3/spaces/"+name, nil, &sp) == nil {
			name = sp.Name
		}
		spaces = append(spaces, fmt.Sprintf("%s (guid %s)", name, a.GUID))
	}
	slices.Sort(spaces)
	return "", fmt.Errorf("apps named %q are in more than one space: %s; give the app's guid", app, strings.Join(spaces, ", "))
}

// ccError is an error answer of the API, CC-shaped.
type ccError struct {
	status int
	detail string
}

func (e *ccError) Error() string { return e.detail }

func (c *chaosClient) call(ctx context.Context, method, u string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.do(req, out)
}

func (c *chaosClient) do(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("the foundation's API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("the foundation's API: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Errors []struct {
				Detail string `json:"detail"`
			} `json:"errors"`
			Description string `json:"error_description"`
		}
		detail := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil {
			switch {
			case len(e.Errors) > 0:
				detail = e.Errors[0].Detail
			case e.Description != "":
				detail = e.Description
			}
		}
		return &ccError{status: resp.StatusCode, detail: fmt.Sprintf("%s %s: %d: %s", req.Method, req.URL.Path, resp.StatusCode, detail)}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
		}
	}
	return nil
}
