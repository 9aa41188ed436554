//go:build linux

package foundation_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/foundation"
	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// TestTokenLifetimeAndRateLimitSettings: the foundation's Config reaches the API and
// the Log Cache on its address: a token past AccessTokenTTL gets CC's 401 from the API
// and a bare 404 from the Log Cache; with RateLimit and RateLimitAdmins the admin's
// requests are counted and the one over the limit is CC's 429.
func TestTokenLifetimeAndRateLimitSettings(t *testing.T) {
	// 3 s: a token's exp is whole seconds, so a fresh one has 2 s to 3 s left, time
	// enough for the requests before its expiry.
	const ttl = 3 * time.Second
	f, _ := testfoundation.Start(t, func(c *foundation.Config) {
		c.AccessTokenTTL = ttl
		c.RateLimit, c.RateLimitInterval, c.RateLimitAdmins = 3, time.Hour, true
	})
	info := f.Info()
	call := func(path, token string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", info.APIURL+path, nil)
		req.Header.Set("Authorization", "bearer "+token)
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	token := func() (string, time.Time) {
		t.Helper()
		form := url.Values{"grant_type": {"password"}, "username": {info.User}, "password": {info.Password}}
		req, _ := http.NewRequest("POST", info.APIURL+"/oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("cf", "")
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
			t.Fatalf("password grant: %d %v", resp.StatusCode, err)
		}
		return tok.AccessToken, time.Now().Add(ttl)
	}

	tok, expires := token()
	if code, body, h := call("/api/v1/meta", tok); code != http.StatusOK || h.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("Log Cache meta with a fresh token: %d %s, headers %v (Log Cache is not CC: no rate limit)", code, body, h)
	}
	for i := range 3 {
		if code, body, h := call("/v3/spaces", tok); code != http.StatusOK || h.Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("request %d: %d %s, headers %v", i+1, code, body, h)
		}
	}
	code, body, h := call("/v3/spaces", tok)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" ||
		body != `{"errors":[{"detail":"Rate Limit Exceeded","title":"CF-RateLimitExceeded","code":10013}]}` {
		t.Errorf("the 4th request: %d %s, headers %v; want CC's 429", code, body, h)
	}

	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	if code, body, _ := call("/api/v1/meta", tok); code != http.StatusNotFound || body != "" {
		t.Errorf("Log Cache meta with an expired token: %d %q, want 404 and no body", code, body)
	}
	want := `{"errors":[{"detail":"Invalid Auth Token","title":"CF-InvalidAuthToken","code":1000}]}`
	if code, body, _ := call("/v3/apps", tok); code != http.StatusUnauthorized || strings.TrimSpace(body) != want {
		t.Errorf("the API with an expired token: %d %s, want 401 %s", code, body, want)
	}
}
