package platform

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/internal/wait"
)

// CF is a Cloud Foundry reached through the CC v3 API. Its methods may be called
// concurrently; each blocks until its API calls (and the waits it documents) are done
// or ctx ends.
type CF struct {
	cl *client.Client

	tokens  *Tokens      // nil when go-cfclient holds the token (New)
	limiter *RateLimiter // nil when New
	auth    *AuthClient  // nil when New

	rootMu  sync.Mutex
	rootDoc *rootInfo // nil until read

	zipMu sync.Mutex
	zips  map[binaryKey][]byte // binaryBits' packages
}

// New wraps a logged-in go-cfclient, which keeps and renews its token itself; the run
// uses Connect.
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

// Login is how Connect reaches a Cloud Foundry: its API and the user's tokens as the cf
// CLI holds them.
type Login struct {
	API   string
	Token Token
	// Fresh, when set, is asked first for a renewed access token: the cf CLI's plugin
	// RPC AccessToken, which renews a token under a minute from its expiry and saves
	// it in the cf CLI's config as the cf CLI does. When it gives back the token being
	// renewed (one rejected before its expiry), UAA's refresh grant follows.
	Fresh func(ctx context.Context) (string, error)
	// UAA is UAA's base URL; default the API root's links.uaa.
	UAA string
	// ClientID and ClientSecret are the OAuth client the tokens were issued to; default
	// the cf CLI's, "cf" with an empty secret.
	ClientID, ClientSecret string
	// ClientCredentials renews with the client_credentials grant (a client logged in
	// with cf auth --client-credentials) rather than the refresh token.
	ClientCredentials bool
	SkipTLS           bool
	Logger            *slog.Logger
	// Clock and Sleep default to time.Now and a wait ending with its context; tests
	// set them.
	Clock func() time.Time
	Sleep func(ctx context.Context, d time.Duration) bool
}

// Connect returns a CF for l whose every request carries one shared access token,
// renewed before it expires (under a minute left, as the cf CLI) and when the CC
// rejects it (401, then the request is sent once more); whose CC requests are counted
// and kept under the CC's rate limit (RateLimiter); and whose AuthClient sends other
// requests (Log Cache's) with the same token. Renewed tokens stay in memory: the cf
// CLI's config is left as it is, or renewed by the cf CLI itself through l.Fresh.
func Connect(ctx context.Context, l Login) (*CF, error) {
	api := strings.TrimRight(l.API, "/")
	u, err := url.Parse(api)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("the API %q is not a URL", l.API)
	}
	log := l.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{InsecureSkipVerify: l.SkipTLS} //nolint:gosec // the user's cf CLI setting (cf api --skip-ssl-validation)
	plain := &http.Client{Transport: base, Timeout: config.DefaultRequestTimeout}
	uaa := strings.TrimRight(l.UAA, "/")
	login := uaa
	if uaa == "" {
		if uaa, login, err = authLinks(ctx, plain, api); err != nil {
			return nil, err
		}
	}
	clientID := cmpOr(l.ClientID, config.DefaultClientID)
	renew := UAARefresh(plain, uaa+"/oauth/token", clientID, l.ClientSecret)
	if l.ClientCredentials {
		renew = UAAClientCredentials(plain, uaa+"/oauth/token", clientID, l.ClientSecret)
	}
	if l.Fresh != nil {
		viaUAA := renew
		renew = func(ctx context.Context, cur Token) (Token, error) {
			tok, err := l.Fresh(ctx)
			if tok = bareToken(tok); err == nil && tok != "" && tok != cur.Access {
				return Token{Access: tok}, nil
			}
			if err != nil {
				log.Warn("the cf CLI did not renew the access token; renewing it with UAA", "err", err)
			}
			return viaUAA(ctx, cur)
		}
	}
	tokens, err := NewTokens(l.Token, renew, l.Clock, log)
	if err != nil {
		return nil, fmt.Errorf("the cf CLI's token: %w. Try: cf login", err)
	}
	// The limiter under the token: it counts a request sent again after a 401 too, and
	// a request that waited out a 429 past its token's expiry is renewed on its 401.
	limiter := NewRateLimiter(RateLimiterConfig{
		Base:  base,
		Match: func(r *http.Request) bool { return r.URL.Host == u.Host },
		Clock: l.Clock, Sleep: l.Sleep, Logger: log,
	})
	cfg, err := config.New(api, config.Token(placeholderToken, ""), config.AuthTokenURL(login, uaa),
		config.HttpClient(&http.Client{Transport: &authTransport{tokens: tokens, base: limiter}}))
	if err != nil {
		return nil, fmt.Errorf("cf client: %w", err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("cf client: %w", err)
	}
	// go-cfclient bounds a request, waits included, by its 30 s timeout: a 429's wait
	// for the CC's reset (up to its interval, an hour) would always exceed it. The
	// limiter bounds each attempt instead.
	cfg.HTTPClient().Timeout, cfg.HTTPAuthClient().Timeout = 0, 0
	auth := &AuthClient{Client: &http.Client{Transport: &authTransport{tokens: tokens, base: base, addMissing: true}}, tokens: tokens}
	return &CF{cl: cl, tokens: tokens, limiter: limiter, auth: auth}, nil
}

// authLinks reads UAA's and the login server's URLs from the API's root document.
func authLinks(ctx context.Context, hc *http.Client, api string) (uaa, login string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/", nil)
	if err != nil {
		return "", "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("read the API root: %w", err)
	}
	defer resp.Body.Close()
	var root struct {
		Links struct {
			UAA, Login *struct {
				Href string `json:"href"`
			}
		} `json:"links"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("read the API root: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&root); err != nil {
		return "", "", fmt.Errorf("read the API root: %w", err)
	}
	if root.Links.UAA == nil || root.Links.UAA.Href == "" {
		return "", "", errors.New("the API root links no UAA")
	}
	uaa = strings.TrimRight(root.Links.UAA.Href, "/")
	login = uaa
	if root.Links.Login != nil && root.Links.Login.Href != "" {
		login = strings.TrimRight(root.Links.Login.Href, "/")
	}
	return uaa, login, nil
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Requests is what the run asked of the CC so far: zero for a CF made by New.
func (c *CF) Requests() RequestStats {
	if c.limiter == nil {
		return RequestStats{}
	}
	return c.limiter.Stats()
}

// TokenRenewals is how often the access token was renewed: 0 for a CF made by New.
func (c *CF) TokenRenewals() int {
	if c.tokens == nil {
		return 0
	}
	return c.tokens.Renewals()
}

// AuthClient sends requests with the CF's access token, for APIs beside the CC that
// take it (Log Cache).
func (c *CF) AuthClient() *AuthClient {
	if c.auth == nil {
		return &AuthClient{Client: c.cl.HTTPAuthClient()} // New: go-cfclient's own token
	}
	return c.auth
}

// AuthClient is an http.Client that sends the run's access token (renewed as Connect
// says). Its methods are safe for concurrent use.
type AuthClient struct {
	*http.Client
	tokens *Tokens // nil: the token is go-cfclient's, not renewable from outside
}

// RenewToken renews the token after a server rejected one in a way only the caller can
// tell (Log Cache answers an expired token with a bare 404): sent is when the rejected
// request was sent, so that concurrent rejections renew once. It returns
// ErrTokenRejected when the token cannot be renewed.
func (a *AuthClient) RenewToken(ctx context.Context, sent time.Time) error {
	if a.tokens == nil {
		return ErrTokenRejected
	}
	if err := a.tokens.Renew(ctx, sent); err != nil {
		return fmt.Errorf("%w: %w", ErrTokenRejected, err)
	}
	return nil
}
