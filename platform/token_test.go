package platform

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
)

// jwtAt is an unsigned JWT issued at iat expiring at exp, told apart by id.
func jwtAt(id string, iat, exp time.Time) string {
	claims := fmt.Sprintf(`{"jti":%q,"iat":%d,"exp":%d}`, id, iat.Unix(), exp.Unix())
	return "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".sig"
}

// stubCF is a CC and UAA in one: GET / links UAA to itself; POST /oauth/token answers
// the refresh grant (client cf, empty secret) with a new access token of ttl and the
// same refresh token, as UAA (which does not rotate them); every other path answers
// 200 {} to a token it issued and has not revoked, else 401 as CC.
type stubCF struct {
	*httptest.Server
	ttl time.Duration

	mu      sync.Mutex
	valid   map[string]bool
	grants  []string // refresh tokens presented
	seen    []string // the access token of each API request, in order
	n       int
	refresh string

	attempts atomic.Int32 // token grants asked, refused ones too
}

func newStubCF(t *testing.T, ttl time.Duration) *stubCF {
	s := &stubCF{ttl: ttl, valid: map[string]bool{}, refresh: "the-refresh-token"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"links":{"self":{"href":%q},"uaa":{"href":%q},"login":{"href":%q}}}`, s.URL, s.URL, s.URL)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		s.attempts.Add(1)
		user, pass, _ := r.BasicAuth()
		if r.ParseForm() != nil || user != "cf" || pass != "" || r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != s.refresh {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_token","error_description":"Invalid refresh token"}`)
			return
		}
		s.mu.Lock()
		s.grants = append(s.grants, r.PostForm.Get("refresh_token"))
		tok := s.issueLocked()
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		fmt.Fprintf(w, `{"access_token":%q,"refresh_token":%q,"token_type":"bearer","expires_in":%d}`, tok, s.refresh, int(ttl.Seconds())-1)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		tok := bareToken(r.Header.Get("Authorization"))
		s.mu.Lock()
		s.seen = append(s.seen, tok)
		ok := s.valid[tok]
		s.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"detail":"Invalid Auth Token","title":"CF-InvalidAuthToken","code":1000}]}`)
			return
		}
		fmt.Fprint(w, `{"guid":"x","name":"x"}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// issue is a new valid access token.
func (s *stubCF) issue() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueLocked()
}

func (s *stubCF) issueLocked() string {
	s.n++
	now := time.Now()
	tok := jwtAt(fmt.Sprintf("t%d", s.n), now, now.Add(s.ttl))
	s.valid[tok] = true
	return tok
}

// revokeAll makes every token issued so far invalid, as the foundation's expire-tokens.
func (s *stubCF) revokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.valid)
}

func (s *stubCF) counts() (grants, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.grants), len(s.seen)
}

func TestRenewMarginIsTheCFCLIsMinuteOrAQuarterOfAShortLife(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		life time.Duration
		want time.Duration
	}{
		{20 * time.Minute, time.Minute},
		{4 * time.Minute, time.Minute},
		{20 * time.Second, 5 * time.Second},
		{3 * time.Second, 750 * time.Millisecond},
	} {
		if got := renewMargin(at, at.Add(c.life)); got != c.want {
			t.Errorf("life %s: margin %s, want %s", c.life, got, c.want)
		}
	}
	if got := renewMargin(time.Time{}, at); got != time.Minute {
		t.Errorf("no iat: margin %s, want a minute", got)
	}
}

// TestTokensRenewUnderAMinuteLeft: a 20-minute token is used as is until under a
// minute is left, then renewed once, and the renewed one is used.
func TestTokensRenewUnderAMinuteLeft(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := start
	var renewals int
	renew := func(_ context.Context, cur Token) (Token, error) {
		renewals++
		if cur.Refresh != "rt" {
			t.Errorf("renewed with refresh token %q", cur.Refresh)
		}
		return Token{Access: jwtAt("next", now, now.Add(20*time.Minute))}, nil
	}
	first := jwtAt("first", start, start.Add(20*time.Minute))
	tokens, err := NewTokens(Token{Access: "bearer " + first, Refresh: "rt"}, renew, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now = start.Add(19*time.Minute - time.Second)
	if tok, _ := tokens.Token(ctx); tok != first || renewals != 0 {
		t.Fatalf("61 s left: token %q after %d renewals, want the first as is", tok, renewals)
	}
	now = start.Add(19*time.Minute + time.Second)
	tok, err := tokens.Token(ctx)
	if err != nil || tok == first || renewals != 1 {
		t.Fatalf("59 s left: token %q, %v after %d renewals, want one renewal", tok, err, renewals)
	}
	if again, _ := tokens.Token(ctx); again != tok || renewals != 1 {
		t.Errorf("the renewed token was renewed again")
	}
	if tokens.Current() != tok {
		t.Errorf("Current is not the renewed token")
	}
}

// TestConnectRenewsARejectedTokenOnceForConcurrentRequests: a token the CC rejects
// before its exp (the foundation's expire-tokens) is renewed with the refresh grant
// once, however many requests met the 401, and each is sent again and succeeds; Log
// Cache's client sends the renewed token too.
func TestConnectRenewsARejectedTokenOnceForConcurrentRequests(t *testing.T) {
	s := newStubCF(t, 20*time.Minute)
	cf, err := Connect(context.Background(), Login{API: s.URL, Token: Token{Access: s.issue(), Refresh: s.refresh}})
	if err != nil {
		t.Fatal(err)
	}
	s.revokeAll()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cf.Client().Organizations.Get(context.Background(), "x")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a request failed: %v", err)
		}
	}
	if grants, _ := s.counts(); grants != 1 {
		t.Errorf("%d refresh grants, want 1", grants)
	}
	if cf.TokenRenewals() != 1 {
		t.Errorf("TokenRenewals %d, want 1", cf.TokenRenewals())
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/read/x", nil)
	resp, err := cf.AuthClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("log cache client: %s, want the renewed token accepted", resp.Status)
	}
	if got := cf.Requests().Requests; got < 9 {
		t.Errorf("%d CC requests counted, want the 8 and their retries", got)
	}
}

// TestConnectRenewsBeforeExpiry: with 3-second tokens the requests of a run spanning
// several lifetimes never meet a 401: each token is renewed before it expires.
func TestConnectRenewsBeforeExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits through two token lifetimes")
	}
	s := newStubCF(t, 3*time.Second)
	cf, err := Connect(context.Background(), Login{API: s.URL, Token: Token{Access: s.issue(), Refresh: s.refresh}})
	if err != nil {
		t.Fatal(err)
	}
	var rejected atomic.Int32
	deadline := time.Now().Add(7 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := cf.Client().Organizations.Get(context.Background(), "x"); err != nil {
			t.Fatalf("request: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.mu.Lock()
	for _, tok := range s.seen {
		if !s.valid[tok] {
			rejected.Add(1)
		}
	}
	s.mu.Unlock()
	if grants, _ := s.counts(); grants < 2 {
		t.Errorf("%d renewals in 7 s of 3-s tokens, want at least 2", grants)
	}
	if rejected.Load() != 0 {
		t.Errorf("%d requests sent an expired token", rejected.Load())
	}
}

// TestConnectAsksTheCFCLIFirst: as a plugin the cf CLI renews the token (and saves it
// as it does); UAA is asked only when the cf CLI gives back the rejected token.
func TestConnectAsksTheCFCLIFirst(t *testing.T) {
	s := newStubCF(t, 20*time.Minute)
	first := s.issue()
	var fromCLI atomic.Value
	fromCLI.Store("bearer " + first)
	cf, err := Connect(context.Background(), Login{API: s.URL, Token: Token{Access: first, Refresh: s.refresh},
		Fresh: func(context.Context) (string, error) { return fromCLI.Load().(string), nil }})
	if err != nil {
		t.Fatal(err)
	}
	s.revokeAll()
	fromCLI.Store("bearer " + s.issue())
	if _, err := cf.Client().Organizations.Get(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if grants, _ := s.counts(); grants != 0 {
		t.Errorf("%d UAA grants, want the cf CLI's token used", grants)
	}
	s.revokeAll() // the cf CLI's token too, which it would not renew before its exp
	if _, err := cf.Client().Organizations.Get(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if grants, _ := s.counts(); grants != 1 {
		t.Errorf("%d UAA grants, want 1 when the cf CLI gives the rejected token back", grants)
	}
}

// TestConnectSaysWhenTheTokenCannotBeRenewed: a refresh token UAA refuses leaves the
// request with CC's 401, and the Log Cache client's RenewToken names the rejection.
func TestConnectSaysWhenTheTokenCannotBeRenewed(t *testing.T) {
	s := newStubCF(t, 20*time.Minute)
	cf, err := Connect(context.Background(), Login{API: s.URL, Token: Token{Access: s.issue(), Refresh: "unknown"}})
	if err != nil {
		t.Fatal(err)
	}
	s.revokeAll()
	_, err = cf.Client().Organizations.Get(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "Invalid Auth Token") {
		t.Errorf("request: %v, want CC's Invalid Auth Token", err)
	}
	err = cf.AuthClient().RenewToken(context.Background(), time.Now())
	if !errors.Is(err, ErrTokenRejected) || !strings.Contains(err.Error(), "Invalid refresh token") {
		t.Errorf("RenewToken: %v, want ErrTokenRejected with UAA's reason", err)
	}
	// go-cfclient sent the rejected request once more; neither that nor the Log Cache
	// client asked UAA again right after it refused.
	if n := s.attempts.Load(); n != 1 {
		t.Errorf("%d refresh grants asked, want 1 within renewRetry", n)
	}
}

// TestGoCFClientAloneDoesNotRecoverARevokedToken records why Connect holds the token
// itself: go-cfclient v3 (alpha.20) given the cf CLI's tokens renews only by the JWT's
// exp (10 s before it, oauth2's expiryDelta, not the cf CLI's minute: a token 30 s from
// its exp is sent as is, one 5 s from it renewed), and on a 401 rebuilds its token
// source from the token it was configured with, so a token the server stopped
// accepting before its exp is sent again and the request fails.
func TestGoCFClientAloneDoesNotRecoverARevokedToken(t *testing.T) {
	s := newStubCF(t, 20*time.Minute)
	first := s.issue()
	cfg, err := config.New(s.URL, config.Token(first, s.refresh))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.revokeAll()
	if _, err := cl.Organizations.Get(context.Background(), "x"); err == nil {
		t.Fatal("go-cfclient recovered a revoked token; Connect's own renewal may be unneeded")
	}
	grants, requests := s.counts()
	if grants != 0 || requests != 2 {
		t.Errorf("%d grants, %d requests; want none and the request sent twice with the same token", grants, requests)
	}
	// A token 30 s from its exp is not renewed either (the cf CLI would: under a minute).
	now := time.Now()
	near := jwtAt("near", now, now.Add(30*time.Second))
	s.mu.Lock()
	s.valid[near] = true
	s.mu.Unlock()
	cfg, _ = config.New(s.URL, config.Token(near, s.refresh))
	cl, _ = client.New(cfg)
	if _, err := cl.Organizations.Get(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if grants, _ := s.counts(); grants != 0 {
		t.Errorf("go-cfclient renewed a token 30 s from expiry (%d grants)", grants)
	}
	// One 5 s from its exp is: oauth2 renews 10 s before.
	soon := jwtAt("soon", now, now.Add(5*time.Second))
	s.mu.Lock()
	s.valid[soon] = true
	s.mu.Unlock()
	cfg, _ = config.New(s.URL, config.Token(soon, s.refresh))
	cl, _ = client.New(cfg)
	if _, err := cl.Organizations.Get(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if grants, _ := s.counts(); grants != 1 {
		t.Errorf("go-cfclient did not renew a token 5 s from expiry (%d grants)", grants)
	}
}

// TestUAAGrantsAsTheCFCLI: the refresh grant sends the refresh token with the client in
// Basic auth, and keeps the refresh token when UAA sends none; the client_credentials
// grant (cf auth --client-credentials) sends the client alone.
func TestUAAGrantsAsTheCFCLI(t *testing.T) {
	var got []string
	now := time.Now()
	uaa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		r.ParseForm()
		got = append(got, fmt.Sprintf("%s:%s %s %s", user, pass, r.PostForm.Get("grant_type"), r.PostForm.Get("refresh_token")))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer"}`, jwtAt("new", now, now.Add(time.Hour)))
	}))
	defer uaa.Close()
	ctx := context.Background()
	tok, err := UAARefresh(nil, uaa.URL+"/oauth/token", "cf", "")(ctx, Token{Access: "old", Refresh: "rt"})
	if err != nil || tok.Access == "" || tok.Refresh != "" {
		t.Errorf("refresh grant: %+v, %v; want a new access token and the refresh token kept (empty: keep)", tok, err)
	}
	if _, err := UAARefresh(nil, uaa.URL+"/oauth/token", "cf", "")(ctx, Token{Access: "old"}); err == nil || !strings.Contains(err.Error(), "cf login") {
		t.Errorf("refresh grant without a refresh token: %v, want a hint to log in", err)
	}
	if _, err := UAAClientCredentials(nil, uaa.URL+"/oauth/token", "ci-client", "s3cret")(ctx, Token{Access: "old"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"cf: refresh_token rt", "ci-client:s3cret client_credentials "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("UAA saw %q, want %q", got, want)
	}
}
