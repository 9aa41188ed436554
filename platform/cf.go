package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// CF is a Cloud Foundry reached through the CC v3 API. Its methods may be called
// concurrently; each blocks until its API calls (and the waits it documents) are done
// or ctx ends.
type CF struct {
	cl *client.Client

	rootMu  sync.Mutex
	rootDoc *rootInfo // nil until read

	zipMu sync.Mutex
	zips  map[binaryKey][]byte // binaryBits' packages
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

// pollWait is how long poll waits before its next look, after elapsed: a quarter of
// it, within pollFirst and pollMax. What is ready is seen within about a quarter of
// the time it took (doubling steps see it up to twice as late: a start that took
// 1.6 s seen at 3.1 s), at the cost of a few more looks (about 16 up to 2 s).
func pollWait(elapsed time.Duration) time.Duration {
	return min(pollMax, max(pollFirst, elapsed/4))
}

// poll calls check until it reports done or fails, or ctx ends (its error wraps
// ctx.Err()).
func poll(ctx context.Context, check func() (done bool, err error)) error {
	start := time.Now()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		if !wait.For(ctx, pollWait(time.Since(start))) {
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

// rootInfo is what the API's root document says beyond CC's own links.
type rootInfo struct {
	router    string             // the local router's host:port; "" on a real CF
	logCache  string             // Log Cache's URL; "" when the foundation has none
	cellCores map[string]float64 // the local foundation's cores per segment; empty on a real CF
	hostCores map[string]float64 // the same per host its cells' instances report; empty on a real CF
	chaos     string             // the local foundation's chaos API (chaos.go); "" on a real CF
}

// root reads the API's root document, once.
func (c *CF) root(ctx context.Context) (*rootInfo, error) {
	c.rootMu.Lock()
	defer c.rootMu.Unlock()
	if c.rootDoc != nil {
		return c.rootDoc, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cl.ApiURL("/"), nil)
	if err != nil {
		return nil, fmt.Errorf("read the API root: %w", err)
	}
	resp, err := c.cl.ExecuteRequest(req) // the root needs no token
	if err != nil {
		return nil, fmt.Errorf("read the API root: %w", err)
	}
	defer resp.Body.Close()
	type link struct {
		Href string `json:"href"`
	}
	var root struct {
		Links struct {
			Router   *link `json:"cfbench_router"`
			Chaos    *link `json:"cfbench_chaos"`
			LogCache *link `json:"log_cache"`
			Cells    map[string]struct {
				Cores float64  `json:"cores"`
				Hosts []string `json:"hosts"`
			} `json:"cfbench_cells"`
		} `json:"links"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil {
		return nil, fmt.Errorf("read the API root: %w", err)
	}
	info := &rootInfo{cellCores: map[string]float64{}, hostCores: map[string]float64{}}
	if r := root.Links.Router; r != nil && r.Href != "" {
		u, err := url.Parse(r.Href)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("the API root's cfbench_router link %q is not a URL", r.Href)
		}
		info.router = u.Host
	}
	if l := root.Links.LogCache; l != nil && l.Href != "" {
		u, err := url.Parse(l.Href)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("the API root's log_cache link %q is not a URL", l.Href)
		}
		info.logCache = strings.TrimRight(l.Href, "/")
	}
	if l := root.Links.Chaos; l != nil {
		info.chaos = l.Href
	}
	for name, cell := range root.Links.Cells {
		if cell.Cores > 0 {
			info.cellCores[name] = cell.Cores
			for _, h := range cell.Hosts {
				info.hostCores[h] = cell.Cores
			}
		}
	}
	c.rootDoc = info
	return info, nil
}

// routerAddr is the local foundation's router (host:port) from the API's root
// document; "" on a real CF, whose root has no cfbench_router link.
func (c *CF) routerAddr(ctx context.Context) (string, error) {
	r, err := c.root(ctx)
	if err != nil {
		return "", err
	}
	return r.router, nil
}

// LogCacheURL is the Log Cache the API's root document links (links.log_cache), or ""
// when it links none.
func (c *CF) LogCacheURL(ctx context.Context) (string, error) {
	r, err := c.root(ctx)
	if err != nil {
		return "", err
	}
	return r.logCache, nil
}

// CellCores is, per isolation segment, how many CPU cores an instance there may use,
// as the local foundation advertises it (its root's non-standard cfbench_cells); empty
// on a real Cloud Foundry, which does not say. The map is the caller's.
func (c *CF) CellCores(ctx context.Context) (map[string]float64, error) {
	r, err := c.root(ctx)
	if err != nil {
		return nil, err
	}
	return maps.Clone(r.cellCores), nil
}

// HostCores is, per host that process stats report, how many CPU cores the instances on
// it may use, as the local foundation advertises it (the hosts of each segment in its
// root's non-standard cfbench_cells); empty on a real Cloud Foundry, whose cells' cores
// the API does not say. The map is the caller's.
func (c *CF) HostCores(ctx context.Context) (map[string]float64, error) {
	r, err := c.root(ctx)
	if err != nil {
		return nil, err
	}
	return maps.Clone(r.hostCores), nil
}
