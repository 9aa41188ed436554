package cc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"

	"github.com/cf-benchmark/cf-benchmark/foundation/logcache"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// fakeClock is a settable clock for the server (Server.clock).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newEnvWith is newEnv with the server's configuration changed by mod and its clock
// clock (nil: the real one), before the admin logs in.
func newEnvWith(t *testing.T, clock *fakeClock, mod func(*Config)) *env {
	t.Helper()
	rt := &fakeRuntime{specs: map[string]RunSpec{}}
	cfg := Config{DataDir: t.TempDir(), Runtime: rt, Broker: fakeBroker{}, User: "admin", Password: "pw", Secret: []byte("secret"),
		Segments: []string{"apps-cell", "loadgen-cell"}}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		srv.clock = clock.now
	}
	hs := httptest.NewServer(srv.Handler())
	srv.SetBaseURL(hs.URL)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	e := &env{t: t, srv: srv, http: hs, rt: rt, dir: cfg.DataDir}
	e.token = e.login("admin", "pw")
	return e
}

// raw sends a GET with the bearer token and returns the status and the body.
func (e *env) raw(path, token string) (int, string, http.Header) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.http.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "bearer "+token)
	}
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// ccInvalidAuthToken is Cloud Controller's answer to an expired token, byte for byte.
const ccInvalidAuthToken = `{"errors":[{"detail":"Invalid Auth Token","title":"CF-InvalidAuthToken","code":1000}]}`

// TestExpiredAccessTokenIsAnsweredAsCC: an access token lives AccessTokenTTL (the token
// answer's expires_in a second less, as UAA's); past it the API answers as CC does,
// the refresh token still gets a new access token, and UAA hands back the same
// refresh token (it does not rotate them).
func TestExpiredAccessTokenIsAnsweredAsCC(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	e := newEnvWith(t, clock, func(c *Config) { c.AccessTokenTTL = 20 * time.Second; c.RefreshTokenTTL = time.Hour })
	code, tok := e.postToken(url.Values{"grant_type": {"password"}, "username": {"admin"}, "password": {"pw"}})
	if code != 200 || tok["expires_in"] != float64(19) {
		t.Fatalf("password grant: %d %v, want expires_in 19", code, tok)
	}
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	clock.advance(19 * time.Second)
	if code, body, _ := e.raw("/v3/apps", access); code != 200 {
		t.Fatalf("a token a second before its expiry: %d %s", code, body)
	}
	clock.advance(time.Second)
	code, body, _ := e.raw("/v3/apps", access)
	if code != http.StatusUnauthorized || strings.TrimSpace(body) != ccInvalidAuthToken {
		t.Fatalf("an expired token: %d %s, want 401 %s", code, body, ccInvalidAuthToken)
	}
	if e.srv.Authenticated("bearer " + access) {
		t.Error("the Log Cache's check accepts an expired token")
	}
	code, tok = e.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	if code != 200 || tok["refresh_token"] != refresh {
		t.Fatalf("refresh grant after the access token expired: %d %v, want a token and the same refresh token", code, tok)
	}
	if code, body, _ := e.raw("/v3/apps", tok["access_token"].(string)); code != 200 {
		t.Fatalf("the refreshed token: %d %s", code, body)
	}
	clock.advance(time.Hour)
	if code, _ := e.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); code != http.StatusUnauthorized {
		t.Errorf("an expired refresh token: %d, want 401", code)
	}
}

// TestExpireTokens: every access token issued before the instant stops working as an
// expired one does, in the API and the Log Cache; refresh tokens keep working, and
// tokens issued after it (even within the same second) work.
func TestExpireTokens(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 100)}
	e := newEnvWith(t, clock, nil)
	_, tok := e.postToken(url.Values{"grant_type": {"password"}, "username": {"admin"}, "password": {"pw"}})
	access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)
	logs := httptest.NewServer(logcache.Handler(logcache.APIConfig{Store: logcache.NewStore(0), Auth: adminLogReader{e.srv}}))
	defer logs.Close()
	logRead := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", logs.URL+"/api/v1/read/"+userGUID, nil)
		req.Header.Set("Authorization", "bearer "+token)
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := logRead(access); code != 200 {
		t.Fatalf("Log Cache read with a valid token: %d %s", code, body)
	}

	clock.advance(time.Millisecond)
	e.srv.ExpireTokens(clock.now())
	e.srv.ExpireTokens(clock.now().Add(-time.Hour)) // an earlier instant changes nothing
	if code, body, _ := e.raw("/v3/apps", access); code != http.StatusUnauthorized || strings.TrimSpace(body) != ccInvalidAuthToken {
		t.Fatalf("a token issued before ExpireTokens: %d %s", code, body)
	}
	if code, body := logRead(access); code != http.StatusNotFound || body != "" {
		t.Fatalf("Log Cache read with an expired token: %d %q, want 404 and no body", code, body)
	}
	clock.advance(time.Millisecond) // the same second
	code, tok := e.postToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	if code != 200 {
		t.Fatalf("the refresh token after ExpireTokens: %d %v", code, tok)
	}
	if code, body, _ := e.raw("/v3/apps", tok["access_token"].(string)); code != 200 {
		t.Fatalf("a token issued after ExpireTokens: %d %s", code, body)
	}
	if code, _ := logRead(tok["access_token"].(string)); code != 200 {
		t.Fatalf("Log Cache read with a token issued after ExpireTokens: %d", code)
	}
}

// adminLogReader lets the admin read any source, as the foundation's logReaders lets
// it read its apps: enough to see the Log Cache's answer to a token.
type adminLogReader struct{ s *Server }

func (a adminLogReader) Authenticated(auth string) bool { return a.s.Authenticated(auth) }
func (a adminLogReader) CanRead(auth, _ string) bool    { return a.s.Authenticated(auth) }

var _ logcache.Authorizer = adminLogReader{}

// TestGoCFClientRefreshesShortLivedTokens: go-cfclient, configured as the run engine
// configures it (the cf CLI's access and refresh tokens), goes on past its access
// token's expiry: it refreshes by the token's exp.
func TestGoCFClientRefreshesShortLivedTokens(t *testing.T) {
	t.Parallel()
	var refreshes atomic.Int32
	e := newEnvWith(t, nil, func(c *Config) { c.AccessTokenTTL = time.Second })
	counting := e.http.Config.Handler
	e.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" && r.ParseForm() == nil && r.PostForm.Get("grant_type") == "refresh_token" {
			refreshes.Add(1)
		}
		counting.ServeHTTP(w, r)
	})
	_, tok := e.postToken(url.Values{"grant_type": {"password"}, "username": {"admin"}, "password": {"pw"}})
	cl := cfClient(t, e, config.Token(tok["access_token"].(string), tok["refresh_token"].(string)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		if _, err := cl.Organizations.ListAll(ctx, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if refreshes.Load() == 0 {
		t.Error("go-cfclient never refreshed a 1 s access token")
	}
}

// TestGoCFClientSurvivesExpireTokens: a token that expires while go-cfclient still
// thinks it valid (ExpireTokens) gets a 401, on which go-cfclient logs in again and
// retries, when it has the user's password (testfoundation's client).
func TestGoCFClientSurvivesExpireTokens(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, nil, nil)
	cl := cfClient(t, e, config.UserPassword("admin", "pw"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Organizations.ListAll(ctx, nil); err != nil {
		t.Fatal(err)
	}
	e.srv.ExpireTokens(time.Now())
	if _, err := cl.Organizations.ListAll(ctx, nil); err != nil {
		t.Fatalf("after ExpireTokens: %v", err)
	}
}

func cfClient(t *testing.T, e *env, opt config.Option) *client.Client {
	t.Helper()
	cfg, err := config.New(e.http.URL, opt)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
