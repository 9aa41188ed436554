package cc

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Token lifetimes when Config leaves them 0: those of cf-deployment's cf client
// (access_token_validity 1200, refresh_token_validity 2592000). The cf CLI refreshes
// when less than 60 s are left; go-cfclient by the token's expiry, and on any 401.
const (
	DefaultAccessTokenTTL  = 20 * time.Minute
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
)

// accessTTL and refreshTTL are the lifetimes of the tokens issued, whole seconds
// (a JWT's exp is), at least one.
func (s *Server) accessTTL() time.Duration {
	return ttl(s.cfg.AccessTokenTTL, DefaultAccessTokenTTL)
}

func (s *Server) refreshTTL() time.Duration {
	return ttl(s.cfg.RefreshTokenTTL, DefaultRefreshTokenTTL)
}

func ttl(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return max(d.Truncate(time.Second), time.Second)
}

// now is the server's clock: time.Now but in tests.
func (s *Server) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// ExpireTokens makes every access token issued before at invalid, as if it had
// expired: the API answers it 401 CF-InvalidAuthToken (as for an expired token) and
// the Log Cache 404. Refresh tokens stay valid, so a client that refreshes goes on;
// this is a token's expiry that the client could not see coming (its exp is still
// ahead), not a revocation of the user's session. An earlier at than a previous
// call's changes nothing. It lasts until the server stops (a restarted foundation
// accepts those tokens again until they expire). Safe for concurrent use.
func (s *Server) ExpireTokens(at time.Time) {
	ns := at.UnixNano()
	for {
		old := s.expiredBefore.Load()
		if ns <= old || s.expiredBefore.CompareAndSwap(old, ns) {
			return
		}
	}
}

// issuedAt is when a token was issued, to the nanosecond when it says (tokens of this
// server do), else to the second.
func (c *claims) issuedAt() int64 {
	if c.IssuedAtNano != 0 {
		return c.IssuedAtNano
	}
	return c.IssuedAt * int64(time.Second)
}

// The one user's fixed id.
const userGUID = "6d3c1b6e-0000-4000-8000-cf0bec0000a1"

// claims are the JWT claims the cf CLI and go-cfclient read.
type claims struct {
	JTI       string   `json:"jti"`
	Sub       string   `json:"sub"`
	UserID    string   `json:"user_id"`
	UserName  string   `json:"user_name"`
	Origin    string   `json:"origin"`
	ClientID  string   `json:"client_id"`
	CID       string   `json:"cid"`
	GrantType string   `json:"grant_type"`
	Scope     []string `json:"scope"`
	Issuer    string   `json:"iss"`
	Audience  []string `json:"aud"`
	IssuedAt  int64    `json:"iat"`
	Expires   int64    `json:"exp"`
	Refresh   bool     `json:"cfbench_refresh,omitempty"`
	// IssuedAtNano is IssuedAt to the nanosecond, for ExpireTokens: a token issued
	// just after an expiry, in the same second, stays valid. A real UAA has no such
	// claim.
	IssuedAtNano int64 `json:"cfbench_iat_ns,omitempty"`
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))

func (s *Server) sign(c claims) string {
	body, _ := json.Marshal(c)
	unsigned := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	mac := hmac.New(sha256.New, s.cfg.Secret)
	mac.Write([]byte(unsigned))
	return unsigned + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verify checks a token's signature and expiry (an access token's also against
// ExpireTokens) and returns its claims.
func (s *Server) verify(token string) (*claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errInvalidToken
	}
	mac := hmac.New(sha256.New, s.cfg.Secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return nil, errInvalidToken
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, errInvalidToken
	}
	var c claims
	if err := json.Unmarshal(body, &c); err != nil || s.now().Unix() >= c.Expires {
		return nil, errInvalidToken
	}
	if !c.Refresh && c.issuedAt() < s.expiredBefore.Load() {
		return nil, errInvalidToken
	}
	return &c, nil
}

// authenticate returns the claims of a request's valid access token that its scopes
// allow the request; a user's token stops working once the user is deleted.
func (s *Server) authenticate(r *http.Request) (*claims, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, errNotAuthenticated
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return nil, errInvalidToken
	}
	c, err := s.verify(strings.TrimSpace(token))
	if err != nil || c.Refresh {
		return nil, errInvalidToken
	}
	if !c.admin() {
		var exists bool
		s.st.read(func(st *State) { exists = st.Users[c.UserID] != nil })
		if !exists {
			return nil, errInvalidToken
		}
	}
	if !allowed(r.Method, c.Scope) {
		return nil, errNotAuthorized
	}
	return c, nil
}

// userScopes are the admin's scopes (CC's and UAA's user management). A token may
// carry fewer (the password grant's scope parameter, as UAA narrows a token).
var userScopes = []string{"openid", "cloud_controller.admin", "cloud_controller.read", "cloud_controller.write", "scim.read", "scim.write"}

// allowed applies Cloud Controller's scope rules: reading needs a read, admin,
// admin_read_only or global_auditor scope; anything else needs write or admin (a
// write-only token cannot read).
func allowed(method string, scopes []string) bool {
	ok := []string{"cloud_controller.admin", "cloud_controller.write"}
	if method == "" || method == http.MethodGet || method == http.MethodHead {
		ok = []string{"cloud_controller.admin", "cloud_controller.read", "cloud_controller.admin_read_only", "cloud_controller.global_auditor"}
	}
	for _, s := range scopes {
		if slices.Contains(ok, s) {
			return true
		}
	}
	return false
}

// narrow is the token's scopes when the client asked for requested (space-separated;
// "" asks for all it may have), or the scope the client may not have.
func narrow(have []string, requested string) ([]string, string) {
	if strings.TrimSpace(requested) == "" {
		return have, ""
	}
	var out []string
	for _, s := range strings.Fields(requested) {
		if !slices.Contains(have, s) {
			return nil, s
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, ""
}

// tokens answers the UAA token endpoint: the password grant for the one user and the
// refresh grant, for client "cf" with an empty secret, as the cf CLI and go-cfclient
// call it.
func (s *Server) tokens(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	client, _, _ := r.BasicAuth()
	if client == "" {
		client = r.PostForm.Get("client_id")
	}
	if client != "cf" {
		fail(http.StatusUnauthorized, "invalid_client", "Bad client credentials: use client cf with an empty secret")
		return
	}
	scopes := userScopes
	id, name := userGUID, s.cfg.User
	var keep string // the refresh token presented, which UAA does not rotate by default
	switch r.PostForm.Get("grant_type") {
	case "password":
		user, pw := r.PostForm.Get("username"), r.PostForm.Get("password")
		if subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.User)) != 1 || subtle.ConstantTimeCompare([]byte(pw), []byte(s.cfg.Password)) != 1 {
			m, ok := s.member(user, pw)
			if !ok {
				fail(http.StatusUnauthorized, "unauthorized", "Bad credentials")
				return
			}
			scopes, id, name = memberScopes, m.GUID, m.Name
		}
	case "refresh_token":
		c, err := s.verify(r.PostForm.Get("refresh_token"))
		if err == nil && !c.admin() {
			s.st.read(func(st *State) {
				if st.Users[c.UserID] == nil { // deleted since
					err = errInvalidToken
				}
			})
		}
		if err != nil || !c.Refresh {
			fail(http.StatusUnauthorized, "invalid_token", "Invalid refresh token")
			return
		}
		scopes, id, name, keep = c.Scope, c.UserID, c.UserName, r.PostForm.Get("refresh_token")
	default:
		fail(http.StatusBadRequest, "unsupported_grant_type", "Only the password and refresh_token grants are supported")
		return
	}
	scopes, bad := narrow(scopes, r.PostForm.Get("scope"))
	if bad != "" {
		fail(http.StatusBadRequest, "invalid_scope", "Invalid scope: "+bad)
		return
	}
	now := s.now()
	base := claims{Sub: id, UserID: id, UserName: name, Origin: "uaa", ClientID: "cf", CID: "cf",
		GrantType: "password", Issuer: s.url("/oauth/token"), Audience: []string{"cloud_controller", "openid", "cf"},
		Scope: scopes, IssuedAt: now.Unix(), IssuedAtNano: now.UnixNano()}
	access, refresh := base, base
	access.JTI, access.Expires = newGUID(), now.Add(s.accessTTL()).Unix()
	refresh.JTI, refresh.Expires, refresh.Refresh = newGUID(), now.Add(s.refreshTTL()).Unix(), true
	refreshToken := keep
	if refreshToken == "" {
		refreshToken = s.sign(refresh)
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{
		"access_token": s.sign(access), "refresh_token": refreshToken, "token_type": "bearer",
		// As UAA, a second short of the lifetime; never 0, which OAuth2 clients read as
		// "does not expire".
		"expires_in": max(int(s.accessTTL().Seconds())-1, 1), "scope": strings.Join(access.Scope, " "), "jti": access.JTI,
	})
}

// loginInfo answers the UAA's GET /login (and GET /info, its older name) as JSON:
// the prompts `cf login` asks for, then sends to the password grant.
func (s *Server) loginInfo(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]any{
		"app":            map[string]string{"version": uaaVersion},
		"zone_name":      "uaa",
		"entityID":       "cloud_controller",
		"commit_id":      "cfbench",
		"idpDefinitions": map[string]string{},
		"links":          map[string]any{"uaa": s.baseURL, "login": s.baseURL, "passwd": "/forgot_password", "register": "/create_account"},
		"prompts":        map[string][]string{"username": {"text", "Email"}, "password": {"password", "Password"}},
		"timestamp":      time.Now().UTC().Format("2006-01-02T15:04:05-0700"),
	})
}

// uaaVersion is the UAA release this login server answers as; the cf CLI checks
// only that it is at least the minimum it supports.
const uaaVersion = "77.20.0"

// Authenticated reports whether authorization (an Authorization header value) holds a
// valid access token of the admin that may read, as its endpoints require: for the
// foundation's other APIs (Log Cache, which serves every app's logs) that accept the
// same token.
func (s *Server) Authenticated(authorization string) bool {
	r := &http.Request{Method: http.MethodGet, Header: http.Header{"Authorization": {authorization}}}
	c, err := s.authenticate(r)
	return err == nil && c.admin()
}

// root answers GET / with the links clients discover the API and UAA by, the Log
// Cache, and the local router and cells' cores and hosts (cfbench_router,
// cfbench_cells, when configured).
func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		c := &call{s: s, w: w, r: r}
		c.fail(errUnknownRequest)
		return
	}
	self := map[string]any{"href": s.baseURL}
	links := map[string]any{
		"self":                self,
		"bits_service":        nil,
		"cloud_controller_v2": nil,
		"cloud_controller_v3": map[string]any{"href": s.url("/v3"), "meta": map[string]any{"version": APIVersion}},
		"network_policy_v0":   nil,
		"network_policy_v1":   nil,
		"login":               self,
		"uaa":                 self,
		"credhub":             nil,
		"routing":             nil,
		"logging":             nil,
		"log_cache":           nil,
		"log_stream":          nil,
		"app_ssh":             nil,
	}
	if s.cfg.RouterURL != "" {
		links["cfbench_router"] = map[string]any{"href": strings.TrimRight(s.cfg.RouterURL, "/")}
	}
	if s.cfg.Chaos != nil {
		links["cfbench_chaos"] = link(s, ChaosPath)
	}
	if s.cfg.LogCacheURL != "" {
		links["log_cache"] = map[string]any{"href": strings.TrimRight(s.cfg.LogCacheURL, "/")}
	}
	if len(s.cfg.CellCores) > 0 {
		cells := map[string]any{}
		for name, cores := range s.cfg.CellCores {
			cell := map[string]any{"cores": cores}
			if hosts := s.cfg.CellHosts[name]; len(hosts) > 0 {
				cell["hosts"] = hosts
			}
			cells[name] = cell
		}
		links["cfbench_cells"] = cells
	}
	c := &call{s: s, w: w, r: r}
	c.json(http.StatusOK, map[string]any{"links": links})
}

// v3root answers GET /v3 with links to the resources served.
func (s *Server) v3root(c *call) error {
	links := map[string]any{"self": link(s, "/v3")}
	for _, r := range []string{"apps", "builds", "domains", "droplets", "isolation_segments", "organizations", "packages",
		"processes", "routes", "service_credential_bindings", "service_instances", "service_offerings", "service_plans", "spaces"} {
		links[r] = link(s, "/v3/"+r)
	}
	return c.json(http.StatusOK, map[string]any{"links": links})
}
