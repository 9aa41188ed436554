package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/backoff"
)

// CF is a Cloud Foundry reached through the CC v3 API. Its methods may be called
// concurrently; each blocks until its API calls (and the waits it documents) are done
// or ctx ends.
type CF struct {
	cl *client.Client

	rootMu sync.Mutex
	router *string // the local router's host:port ("" on a real CF); nil until read
}

// New wraps a logged-in go-cfclient.
func New(cl *client.Client) *CF { return &CF{cl: cl} }

// Client is the go-cfclient the CF uses, for calls this package does not wrap.
func (c *CF) Client() *client.Client { return c.cl }

// Polling: quick at first, since the local foundation answers in milliseconds, then
// no more often than a real CC wants to be asked.
const (
	pollFirst = 50 * time.Millisecond
	pollMax   = 2 * time.Second
)

// poll calls check until it reports done or fails, or ctx ends (its error wraps
// ctx.Err()).
func poll(ctx context.Context, check func() (done bool, err error)) error {
	b := backoff.Backoff{First: pollFirst, Max: pollMax}
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		if !b.Wait(ctx) {
			return ctx.Err()
		}
	}
}

// waitJob waits for an asynchronous CC job; a FAILED job's errors are the error.
func (c *CF) waitJob(ctx context.Context, guid string) error {
	if guid == "" {
		return nil // the API finished synchronously
	}
	return poll(ctx, func() (bool, error) {
		j, err := c.cl.Jobs.Get(ctx, guid)
		if err != nil {
			return false, fmt.Errorf("read job %s: %w", guid, err)
		}
		switch resource.JobState(j.State) {
		case resource.JobStateComplete:
			return true, nil
		case resource.JobStateFailed:
			errs := make([]error, 0, len(j.Errors))
			for _, e := range j.Errors {
				errs = append(errs, e)
			}
			if len(errs) == 0 {
				errs = append(errs, errors.New("no error given"))
			}
			return false, fmt.Errorf("job %s failed: %w", j.Operation, errors.Join(errs...))
		}
		return false, nil
	})
}

// org finds an org by name.
func (c *CF) org(ctx context.Context, name string) (string, error) {
	opts := client.NewOrganizationListOptions()
	opts.Names.EqualTo(name)
	o, err := c.cl.Organizations.Single(ctx, opts)
	if errors.Is(err, client.ErrExactlyOneResultNotReturned) {
		return "", fmt.Errorf("org %q not found among the orgs you can see. Try: cf orgs", name)
	}
	if err != nil {
		return "", fmt.Errorf("look up org %s: %w", name, err)
	}
	return o.GUID, nil
}

// space finds a space by org and space name.
func (c *CF) space(ctx context.Context, org, space string) (orgGUID, spaceGUID string, err error) {
	if orgGUID, err = c.org(ctx, org); err != nil {
		return "", "", err
	}
	opts := client.NewSpaceListOptions()
	opts.Names.EqualTo(space)
	opts.OrganizationGUIDs.EqualTo(orgGUID)
	s, err := c.cl.Spaces.Single(ctx, opts)
	if errors.Is(err, client.ErrExactlyOneResultNotReturned) {
		return "", "", fmt.Errorf("space %q not found in org %s. Try: cf spaces, or cf create-space %s -o %s", space, org, space, org)
	}
	if err != nil {
		return "", "", fmt.Errorf("look up space %s: %w", space, err)
	}
	return orgGUID, s.GUID, nil
}

// routerAddr reads the local foundation's router (host:port) from the API's root
// document, once; "" on a real CF, whose root has no cfbench_router link.
func (c *CF) routerAddr(ctx context.Context) (string, error) {
	c.rootMu.Lock()
	defer c.rootMu.Unlock()
	if c.router != nil {
		return *c.router, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cl.ApiURL("/"), nil)
	if err != nil {
		return "", fmt.Errorf("read the API root: %w", err)
	}
	resp, err := c.cl.ExecuteRequest(req) // the root needs no token
	if err != nil {
		return "", fmt.Errorf("read the API root: %w", err)
	}
	defer resp.Body.Close()
	var root struct {
		Links struct {
			Router *struct {
				Href string `json:"href"`
			} `json:"cfbench_router"`
		} `json:"links"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil {
		return "", fmt.Errorf("read the API root: %w", err)
	}
	addr := ""
	if r := root.Links.Router; r != nil && r.Href != "" {
		u, err := url.Parse(r.Href)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("the API root's cfbench_router link %q is not a URL", r.Href)
		}
		addr = u.Host
	}
	c.router = &addr
	return addr, nil
}
