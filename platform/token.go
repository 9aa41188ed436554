package platform

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Token is an OAuth access token (without its "bearer " prefix) and the refresh token
// that renews it ("" when there is none).
type Token struct {
	Access, Refresh string
}

// Renewer returns a new token for cur, which is near its expiry or was rejected. It
// may keep cur.Refresh (a Token whose Refresh is "" keeps the old one). Tokens calls it
// from one goroutine at a time.
type Renewer func(ctx context.Context, cur Token) (Token, error)

// ErrTokenRejected is what a request fails with when its token was refused (CC's 401,
// Log Cache's bare 404) and renewing it did not help.
var ErrTokenRejected = errors.New("the access token was rejected (expired or invalid)")

// renewMargin is how much of an access token's life must be left for it to be used as
// is: the cf CLI renews under a minute left (cf/api/authentication's
// accessTokenExpirationMargin). A token that lives under four minutes is renewed at a
// quarter of its life instead, so that a short-lived one is not renewed at every
// request.
func renewMargin(issued, expires time.Time) time.Duration {
	if life := expires.Sub(issued); !issued.IsZero() && life > 0 && life < 4*time.Minute {
		return life / 4
	}
	return time.Minute
}

// Tokens is a run's access token, shared by every client the run makes requests with
// (go-cfclient's CC calls, Log Cache, the process stats), renewed before it expires and
// when a server rejects it. Its methods may be called concurrently; one renewal runs at
// a time and the others wait for it.
type Tokens struct {
	renew Renewer
	clock func() time.Time
	log   *slog.Logger

	sem chan struct{} // held while renewing

	mu       sync.Mutex
	cur      Token
	issued   time.Time // the access token's iat; zero when it has none
	expires  time.Time // its exp; zero when it has none (then it is used until rejected)
	renewed  time.Time // when the last renewal finished
	renewals int

	// failed is when the latest renewal failed, with failErr; guarded by sem.
	failed  time.Time
	failErr error
}

// renewRetry is how long after a failed renewal the next is tried: requests rejected
// meanwhile (go-cfclient sends a rejected one once more itself) fail with its error
// rather than each asking UAA again.
const renewRetry = time.Second

// NewTokens holds tok, renewed by renew (nil: never renewed, a rejected token stays
// rejected). clock defaults to time.Now, log to discarding.
func NewTokens(tok Token, renew Renewer, clock func() time.Time, log *slog.Logger) (*Tokens, error) {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tokens{renew: renew, clock: clock, log: log, sem: make(chan struct{}, 1)}
	if err := t.set(tok); err != nil {
		return nil, err
	}
	return t, nil
}

// bareToken strips the "bearer " the cf CLI puts before a token.
func bareToken(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 7 && strings.EqualFold(s[:7], "bearer ") {
		return strings.TrimSpace(s[7:])
	}
	return s
}

func (t *Tokens) set(tok Token) error {
	tok.Access = bareToken(tok.Access)
	if tok.Access == "" {
		return errors.New("no access token")
	}
	iat, exp, err := tokenTimes(tok.Access)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok.Refresh == "" {
		tok.Refresh = t.cur.Refresh
	}
	t.cur, t.issued, t.expires = tok, iat, exp
	return nil
}

// tokenTimes reads a JWT's iat and exp (either zero when absent). The signature is not
// checked: the servers do that; the client only needs to know when to renew.
func tokenTimes(jwt string) (iat, exp time.Time, err error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return iat, exp, errors.New("the access token is not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return iat, exp, errors.New("the access token's claims are not base64url")
	}
	var c struct {
		Iat, Exp float64
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return iat, exp, errors.New("the access token's claims are not JSON")
	}
	if c.Iat > 0 {
		iat = time.Unix(int64(c.Iat), 0)
	}
	if c.Exp > 0 {
		exp = time.Unix(int64(c.Exp), 0)
	}
	return iat, exp, nil
}

// Token is the access token to send now: the current one, renewed first when under
// renewMargin of its life is left. A failed renewal is returned only when the current
// token has expired; until then the current one is still worth sending.
func (t *Tokens) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	cur, iat, exp := t.cur, t.issued, t.expires
	t.mu.Unlock()
	now := t.clock()
	if exp.IsZero() || exp.Sub(now) >= renewMargin(iat, exp) || t.renew == nil {
		return cur.Access, nil
	}
	if err := t.Renew(ctx, time.Time{}); err != nil {
		if now.Before(exp) {
			return cur.Access, nil // Renew logged it
		}
		return "", err
	}
	return t.Current(), nil
}

// Current is the access token held now, whatever its age.
func (t *Tokens) Current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur.Access
}

// Renew renews the token unless a renewal finished after sent (the time a rejected
// request was sent: then that request's token is already replaced, and this one was
// a concurrent request with the same old token). Zero sent renews unless the current
// token is fresh (more than renewMargin left).
func (t *Tokens) Renew(ctx context.Context, sent time.Time) error {
	return t.renewIf(ctx, func(_ string, iat, exp, renewed, now time.Time) bool {
		if sent.IsZero() {
			return exp.IsZero() || exp.Sub(now) < renewMargin(iat, exp) // else another caller renewed it meanwhile
		}
		return !renewed.After(sent)
	})
}

// Rejected renews the token after a server rejected tok, unless the current token is
// another already.
func (t *Tokens) Rejected(ctx context.Context, tok string) error {
	return t.renewIf(ctx, func(cur string, _, _, _, _ time.Time) bool { return cur == tok })
}

// renewIf renews the token when stale says, as of now, that it must be, one renewal
// at a time.
func (t *Tokens) renewIf(ctx context.Context, stale func(cur string, iat, exp, renewed, now time.Time) bool) error {
	if t.renew == nil {
		return ErrTokenRejected
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.sem }()
	t.mu.Lock()
	cur, iat, exp, renewed := t.cur, t.issued, t.expires, t.renewed
	t.mu.Unlock()
	now := t.clock()
	if !stale(cur.Access, iat, exp, renewed, now) {
		return nil
	}
	if !t.failed.IsZero() && now.Sub(t.failed) < renewRetry {
		return t.failErr // a renewal just failed: the requests rejected meanwhile fail with it
	}
	next, err := t.renew(ctx, cur)
	if err != nil {
		t.failed, t.failErr = t.clock(), fmt.Errorf("renew the access token: %w", err)
		if ctx.Err() == nil {
			t.log.Warn("renew the access token", "err", err, "expires", exp)
		}
		return t.failErr
	}
	t.failed, t.failErr = time.Time{}, nil
	if err := t.set(next); err != nil {
		return fmt.Errorf("renew the access token: %w", err)
	}
	t.mu.Lock()
	t.renewed = t.clock()
	t.renewals++
	newExp := t.expires
	t.mu.Unlock()
	t.log.Debug("renewed the access token", "expired", !exp.IsZero() && !now.Before(exp), "expires", newExp)
	return nil
}

// Renewals is how many times the token was renewed.
func (t *Tokens) Renewals() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.renewals
}

// UAARefresh renews a token with UAA's refresh grant at tokenURL (UAA's /oauth/token),
// as the cf CLI does: POST grant_type=refresh_token with the client's id and secret in
// Basic auth (the cf CLI's client is "cf" with an empty secret). The new refresh token
// UAA may send is kept in memory only.
func UAARefresh(hc *http.Client, tokenURL, clientID, clientSecret string) Renewer {
	return uaaGrant(hc, tokenURL, clientID, clientSecret, func(cur Token) (url.Values, error) {
		if cur.Refresh == "" {
			return nil, errors.New("no refresh token: log in again. Try: cf login")
		}
		return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cur.Refresh}, "scope": {""}}, nil
	})
}

// UAAClientCredentials renews a token with UAA's client_credentials grant, as the cf
// CLI does for a client logged in with `cf auth --client-credentials`.
func UAAClientCredentials(hc *http.Client, tokenURL, clientID, clientSecret string) Renewer {
	return uaaGrant(hc, tokenURL, clientID, clientSecret, func(Token) (url.Values, error) {
		return url.Values{"grant_type": {"client_credentials"}}, nil
	})
}

func uaaGrant(hc *http.Client, tokenURL, clientID, clientSecret string, grant func(Token) (url.Values, error)) Renewer {
	if hc == nil {
		hc = http.DefaultClient
	}
	return func(ctx context.Context, cur Token) (Token, error) {
		form, err := grant(cur)
		if err != nil {
			return Token{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
		if err != nil {
			return Token{}, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		req.SetBasicAuth(clientID, clientSecret)
		resp, err := hc.Do(req)
		if err != nil {
			return Token{}, fmt.Errorf("UAA: %w", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var r struct {
			Access  string `json:"access_token"`
			Refresh string `json:"refresh_token"`
			Error   string `json:"error"`
			Desc    string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &r)
		if resp.StatusCode != http.StatusOK || r.Access == "" {
			if r.Error != "" {
				return Token{}, fmt.Errorf("UAA: %s: %s: %s. Try: cf login", resp.Status, r.Error, r.Desc)
			}
			return Token{}, fmt.Errorf("UAA: %s: %s", resp.Status, bytes.TrimSpace(body[:min(len(body), 200)]))
		}
		return Token{Access: r.Access, Refresh: r.Refresh}, nil
	}
}

// authTransport sends requests with the Tokens' current access token, and when the
// server rejects it (401) renews it and sends the request once more. It replaces a
// bearer token (go-cfclient's placeholder, or any stale one a caller set) and, when
// addMissing, adds one to a request without Authorization; Basic (UAA's token grant)
// and unauthenticated requests of go-cfclient pass untouched.
type authTransport struct {
	tokens     *Tokens
	base       http.RoundTripper
	addMissing bool
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := req.Header.Get("Authorization")
	bearer := len(h) > 7 && strings.EqualFold(h[:7], "bearer ")
	if !bearer && !(h == "" && a.addMissing) {
		return a.base.RoundTrip(req)
	}
	ctx := req.Context()
	tok, err := a.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := a.base.RoundTrip(withToken(req, tok))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // the body is spent; the caller sees the 401
	}
	if rerr := a.tokens.Rejected(ctx, tok); rerr != nil {
		return resp, nil // the caller sees the 401; Renew logged why
	}
	retry := withToken(req, a.tokens.Current())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	drain(resp)
	return a.base.RoundTrip(retry)
}

// withToken is a shallow copy of req with tok as its bearer token (a RoundTripper
// must not change the request it was given).
func withToken(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "bearer "+tok)
	return r
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// placeholderToken is the access token go-cfclient is given when Tokens hold the
// real one: a JWT expiring in 9999, so that go-cfclient never renews it itself; the
// authTransport beneath go-cfclient replaces it in every request. (go-cfclient renews
// 10 s before exp, not a minute as the cf CLI; on a 401 it rebuilds its token source
// from the token it was configured with, so a token revoked before its exp is sent
// again; and it swaps that source without a lock while other requests read it.)
var placeholderToken = "cfbench." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":253402300799}`)) + ".placeholder"
