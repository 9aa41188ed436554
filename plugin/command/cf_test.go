package command

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/collectors/logcache"
	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
	"github.com/cf-benchmark/cf-benchmark/resultsdb"
)

// loginAsTheCFCLI logs in to f's UAA with the password grant as `cf login` does and
// writes the cf CLI's config.json in home, as cf CLI v8 writes it.
func loginAsTheCFCLI(t *testing.T, info foundation.Info, home string) []byte {
	t.Helper()
	resp, err := testhttp.Client.Get(info.APIURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Links map[string]struct{ Href string }
	}
	err = json.NewDecoder(resp.Body).Decode(&root)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	uaa := root.Links["uaa"].Href
	form := url.Values{"grant_type": {"password"}, "username": {info.User}, "password": {info.Password}}
	req, _ := http.NewRequest(http.MethodPost, uaa+"/oauth/token", bytes.NewBufferString(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	resp, err = testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Access  string `json:"access_token"`
		Refresh string `json:"refresh_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.Access == "" {
		t.Fatalf("password grant: %s, %v", resp.Status, err)
	}
	cfg := map[string]any{"ConfigVersion": 3, "Target": info.APIURL, "APIVersion": "3.180.0",
		"AuthorizationEndpoint": root.Links["login"].Href, "DopplerEndPoint": "", "UaaEndpoint": uaa, "RoutingAPIEndpoint": "",
		"AccessToken": "bearer " + tok.Access, "SSHOAuthClient": "ssh-proxy", "UAAOAuthClient": "cf", "UAAOAuthClientSecret": "",
		"UAAGrantType": "", "RefreshToken": tok.Refresh, "OrganizationFields": map[string]any{"GUID": "", "Name": ""},
		"SpaceFields": map[string]any{"GUID": "", "Name": "", "AllowSSH": false}, "SSLDisabled": false, "AsyncTimeout": 0,
		"Trace": "", "ColorEnabled": "", "Locale": "", "PluginRepos": []any{}, "MinCLIVersion": "", "MinRecommendedCLIVersion": ""}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".cf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".cf", "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

type noRows struct{}

func (noRows) InsertContainerMetrics(context.Context, []resultsdb.ContainerMetric) error { return nil }

// TestARunOutlivesItsAccessToken: on the local foundation with 3-second access tokens,
// a standalone run's client (from the cf CLI's config) keeps working through several
// lifetimes, CC and Log Cache alike, without one rejected request; when the foundation
// expires every token at once (its expire-tokens), the CC's 401 and Log Cache's bare
// 404 each lead to one renewal and the reads go on. The cf CLI's config is left as it
// was: renewed tokens stay in memory.
func TestARunOutlivesItsAccessToken(t *testing.T) {
	f, _ := testfoundation.Start(t, func(c *foundation.Config) { c.AccessTokenTTL = 3 * time.Second })
	home := t.TempDir()
	written := loginAsTheCFCLI(t, f.Info(), home)
	var stderr bytes.Buffer
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(string) string { return "" }, Now: time.Now}
	cff := cfFlags{cfHome: home}
	cf, api, err := cff.connect(env)
	if err != nil {
		t.Fatal(err)
	}
	if api != f.Info().APIURL {
		t.Errorf("api %q, want %q", api, f.Info().APIURL)
	}
	ctx := context.Background()
	lc, err := cf.LogCacheURL(ctx)
	if err != nil || lc == "" {
		t.Fatalf("LogCacheURL %q, %v", lc, err)
	}
	meta := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, lc+"/api/v1/meta", nil)
		resp, err := cf.AuthClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Through two and a half lifetimes: every request goes with a live token.
	for end := time.Now().Add(7500 * time.Millisecond); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if _, err := cf.Client().Organizations.ListAll(ctx, nil); err != nil {
			t.Fatalf("list orgs at %s: %v", time.Now().Format(time.StampMilli), err)
		}
		if code := meta(); code != http.StatusOK {
			t.Fatalf("log cache meta: %d at %s, want 200", code, time.Now().Format(time.StampMilli))
		}
	}
	renewed := cf.TokenRenewals()
	if renewed < 2 {
		t.Errorf("%d renewals in 7.5 s of 3-s tokens, want at least 2", renewed)
	}

	// Every token expires before its exp: Log Cache first (a bare 404), then the CC (401).
	poller, err := logcache.New(logcache.Config{URL: lc, Client: cf.AuthClient(), Sink: noRows{}, RunID: "r",
		Targets: []logcache.Target{{AppName: "none", AppGUID: "no-such-app"}}})
	if err != nil {
		t.Fatal(err)
	}
	// A fresh token first, so that what renews it next is the rejection, not its age.
	fresh := func() {
		if err := cf.AuthClient().RenewToken(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		renewed = cf.TokenRenewals()
	}
	fresh()
	f.ExpireTokens(time.Now())
	if err := poller.Poll(ctx); err != nil {
		t.Fatalf("log cache poll after expire-tokens: %v", err)
	}
	if got := cf.TokenRenewals(); got != renewed+1 {
		t.Errorf("%d renewals after Log Cache's 404, want %d", got, renewed+1)
	}
	fresh()
	f.ExpireTokens(time.Now())
	if _, err := cf.Client().Organizations.ListAll(ctx, nil); err != nil {
		t.Fatalf("list orgs after expire-tokens: %v", err)
	}
	if got := cf.TokenRenewals(); got != renewed+1 {
		t.Errorf("%d renewals after CC's 401, want %d", got, renewed+1)
	}

	after, err := os.ReadFile(filepath.Join(home, ".cf", "config.json"))
	if err != nil || !bytes.Equal(after, written) {
		t.Errorf("the cf CLI's config changed (%v):\n%s", err, after)
	}
	if st := cf.Requests(); st.Requests == 0 || st.Limit != 0 {
		t.Errorf("requests %+v: want some counted, no budget (the rate limiter is off)", st)
	}
	if bytes.Contains(stderr.Bytes(), []byte("level=WARN")) {
		t.Errorf("warnings:\n%s", stderr.String())
	}
}

// TestARunKeepsUnderTheCCRateLimit: on the local foundation with CC's rate limiter on
// for its admin (30 requests per 3 s), a burst of 70 requests at once meets 429s, waits
// them out and every request succeeds, sent again once the window reset; then requests
// one after another are paced by X-RateLimit-Remaining and meet no 429 at all.
func TestARunKeepsUnderTheCCRateLimit(t *testing.T) {
	f, _ := testfoundation.Start(t, func(c *foundation.Config) {
		c.RateLimit, c.RateLimitInterval, c.RateLimitAdmins = 30, 3*time.Second, true
	})
	home := t.TempDir()
	loginAsTheCFCLI(t, f.Info(), home)
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }, Now: time.Now}
	cff := cfFlags{cfHome: home}
	cf, _, err := cff.connect(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := make(chan error, 70)
	for range 70 {
		go func() {
			_, err := cf.Client().Organizations.ListAll(ctx, nil)
			errs <- err
		}()
	}
	for range 70 {
		if err := <-errs; err != nil {
			t.Fatalf("a request of the burst: %v", err)
		}
	}
	burst := cf.Requests()
	if burst.Throttled == 0 || burst.Requests-burst.Throttled < 70 || burst.Limit != 30 {
		t.Fatalf("after the burst %+v: want 429s waited out, 70 answered, limit 30", burst)
	}
	for range 40 {
		if _, err := cf.Client().Organizations.ListAll(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	st := cf.Requests()
	if st.Throttled != burst.Throttled {
		t.Errorf("%d 429s one request at a time, want none: the budget's Remaining should pace them", st.Throttled-burst.Throttled)
	}
	if st.Waited <= burst.Waited {
		t.Errorf("waited %s, no more than in the burst: 40 requests over a budget of 30 should wait for a reset", st.Waited)
	}
	line := st.String()
	if !strings.Contains(line, "budget: 30 per user per interval from X-RateLimit-Limit") {
		t.Errorf("line %q", line)
	}
	t.Log(line)
}
