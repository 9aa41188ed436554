package cc

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Users other than the admin (cf create-user, delete-user, set-org-role, set-space-role,
// then cf login as that user): UAA's SCIM /Users and password grant for them, CC's
// /v3/users, and CC's role-based visibility. A user who is not the admin sees the orgs
// it has a role in and the spaces it has a role in (all spaces of the orgs it manages),
// and may call only the endpoints that apply that visibility (registered with
// handleMember: listing and showing orgs and spaces, what cf login and cf target
// need); every other endpoint answers it 403, and it reads no logs. Token scopes apply
// to every user as before.

// User is a UAA user other than the admin.
type User struct {
	GUID         string    `json:"guid"`
	Name         string    `json:"name"`
	Origin       string    `json:"origin"`
	PasswordHash []byte    `json:"password_hash"`   // bcrypt
	InCC         bool      `json:"in_cc,omitempty"` // CC knows it (POST /v3/users)
	Created      time.Time `json:"created_at"`
	// GivenName, FamilyName and Email are UAA's, as given at creation ("": the name).
	GivenName  string   `json:"given_name,omitempty"`
	FamilyName string   `json:"family_name,omitempty"`
	Email      string   `json:"email,omitempty"`
	Metadata   Metadata `json:"metadata"` // CC's
}

// memberScopes are a user's scopes: read and write, no admin.
var memberScopes = []string{"openid", "cloud_controller.read", "cloud_controller.write"}

// admin reports whether c's token is the admin's (the one user holding the admin
// scopes): it sees everything its scopes let it read or write.
func (c *claims) admin() bool { return c.UserID == userGUID }

func (s *Server) userRoutes() {
	s.mux.HandleFunc("POST /Users", s.scimCreate)
	s.mux.HandleFunc("GET /Users", s.scimList)
	s.mux.HandleFunc("GET /Users/{id}", s.scimGet)
	s.mux.HandleFunc("PUT /Users/{id}", s.scimUpdate)
	s.mux.HandleFunc("PUT /Users/{id}/password", s.scimPassword)
	s.mux.HandleFunc("DELETE /Users/{id}", s.scimDelete)
	s.handle("POST /v3/users", s.createUser)
	s.handle("GET /v3/users", s.listUsers)
	s.handle("GET /v3/users/{guid}", s.getUser)
	s.handle("PATCH /v3/users/{guid}", s.updateUser)
	s.handle("DELETE /v3/users/{guid}", s.deleteUser)
}

// scim authorizes a SCIM request: an admin token with scope, else UAA's error.
func (s *Server) scim(w http.ResponseWriter, r *http.Request, scope string) bool {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "bearer ")
	token, _ = strings.CutPrefix(token, "Bearer ")
	c, err := s.verify(strings.TrimSpace(token))
	switch {
	case err != nil || c.Refresh:
		scimError(w, http.StatusUnauthorized, "invalid_token", "Invalid token")
	case !c.admin() || !slices.Contains(c.Scope, scope):
		scimError(w, http.StatusForbidden, "insufficient_scope", "Insufficient scope for this resource: "+scope)
	default:
		return true
	}
	return false
}

func scimError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc, "message": desc})
}

// renderSCIM renders u as UAA's SCIM user, its groups those of its token's scopes.
func (s *Server) renderSCIM(u *User) map[string]any {
	given, family, email := cmp.Or(u.GivenName, u.Name), cmp.Or(u.FamilyName, u.Name), cmp.Or(u.Email, u.Name)
	scopes := memberScopes
	if u.GUID == userGUID {
		scopes = userScopes
	}
	groups := make([]any, len(scopes))
	for i, g := range scopes {
		groups[i] = map[string]any{"value": g, "display": g, "type": "DIRECT"}
	}
	return map[string]any{"id": u.GUID, "userName": u.Name, "origin": u.Origin, "active": true, "verified": true,
		"name": map[string]string{"familyName": family, "givenName": given}, "emails": []any{map[string]any{"value": email, "primary": true}},
		"groups":  groups,
		"meta":    map[string]any{"version": 0, "created": ts(u.Created), "lastModified": ts(u.Created)},
		"schemas": []string{"urn:scim:schemas:core:1.0"}, "zoneId": "uaa"}
}

// adminSCIM is the admin as a UAA user.
func (s *Server) adminSCIM() *User {
	return &User{GUID: userGUID, Name: s.cfg.User, Origin: "uaa", Created: epoch}
}

func (s *Server) scimCreate(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.write") {
		return
	}
	var body scimBody
	if !body.decode(w, r) {
		return
	}
	switch {
	case body.Password == "":
		scimError(w, http.StatusBadRequest, "invalid_password", "Password must be at least 1 characters in length.")
		return
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(body.Password), bcrypt.DefaultCost)
	if err != nil { // a password over bcrypt's 72 bytes
		scimError(w, http.StatusBadRequest, "invalid_password", "Password must be no more than 72 characters in length.")
		return
	}
	u := &User{GUID: newGUID(), Origin: "uaa", PasswordHash: hash, Created: time.Now().UTC()}
	body.set(u)
	err = s.st.update(func(st *State) error {
		if strings.EqualFold(u.Name, s.cfg.User) || st.userByName(u.Name) != nil {
			return errUserExists
		}
		st.Users[u.GUID] = u
		return nil
	})
	if err != nil {
		scimError(w, http.StatusConflict, "scim_resource_already_exists", "Username already in use: "+u.Name)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(s.renderSCIM(u))
}

var errUserExists = unprocessable("user exists")

// scimBody is a SCIM user in a create or update request.
type scimBody struct {
	UserName string `json:"userName"`
	Password string `json:"password"`
	Origin   string `json:"origin"`
	Name     struct {
		GivenName  string `json:"givenName"`
		FamilyName string `json:"familyName"`
	} `json:"name"`
	Emails []struct {
		Value string `json:"value"`
	} `json:"emails"`
}

// decode reads the request's user, or answers UAA's error and returns false.
func (b *scimBody) decode(w http.ResponseWriter, r *http.Request) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(b); err != nil || b.UserName == "" {
		scimError(w, http.StatusBadRequest, "invalid_scim_resource", "A username must be provided.")
		return false
	}
	if b.Origin != "" && b.Origin != "uaa" {
		scimError(w, http.StatusBadRequest, "invalid_scim_resource", "Origin '"+b.Origin+"' is not an identity provider here: the local UAA has users of origin uaa only")
		return false
	}
	return true
}

// set gives u the request's name, names and email.
func (b *scimBody) set(u *User) {
	u.Name, u.GivenName, u.FamilyName, u.Email = b.UserName, b.Name.GivenName, b.Name.FamilyName, ""
	if len(b.Emails) > 0 {
		u.Email = b.Emails[0].Value
	}
}

// scimFilter is the one filter form the cf CLI sends: userName eq "x" [and origin eq "y"].
var scimFilter = regexp.MustCompile(`^userName eq "([^"]*)"(?: and origin eq "([^"]*)")?$`)

func (s *Server) scimList(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.read") {
		return
	}
	filter := r.URL.Query().Get("filter")
	m := scimFilter.FindStringSubmatch(filter)
	if filter != "" && m == nil {
		scimError(w, http.StatusBadRequest, "invalid_filter", "Only filters of the form userName eq \"NAME\" [and origin eq \"ORIGIN\"] are served here")
		return
	}
	resources := []any{}
	keep := func(name, origin string) bool {
		return m == nil || strings.EqualFold(name, m[1]) && (m[2] == "" || m[2] == origin)
	}
	if keep(s.cfg.User, "uaa") {
		resources = append(resources, s.renderSCIM(s.adminSCIM()))
	}
	s.st.read(func(st *State) {
		for _, u := range sorted(st.Users, func(u *User) time.Time { return u.Created }, func(u *User) string { return u.GUID }) {
			if keep(u.Name, u.Origin) {
				resources = append(resources, s.renderSCIM(u))
			}
		}
	})
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]any{"resources": resources, "startIndex": 1, "itemsPerPage": len(resources),
		"totalResults": len(resources), "schemas": []string{"urn:scim:schemas:core:1.0"}})
}

func (s *Server) scimGet(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.read") {
		return
	}
	var u *User
	if r.PathValue("id") == userGUID {
		u = s.adminSCIM()
	}
	s.st.read(func(st *State) {
		if x := st.Users[r.PathValue("id")]; x != nil {
			u = clone(x)
		}
	})
	if u == nil {
		scimError(w, http.StatusNotFound, "scim_resource_not_found", "User "+r.PathValue("id")+" does not exist")
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(s.renderSCIM(u))
}

// scimUpdate replaces a user's name, names and email (the admin's are the
// foundation's own); UAA's If-Match version is not checked.
func (s *Server) scimUpdate(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.write") {
		return
	}
	var body scimBody
	if !body.decode(w, r) {
		return
	}
	var u *User
	err := s.st.update(func(st *State) error {
		x := st.Users[r.PathValue("id")]
		if x == nil {
			return notFound("User")
		}
		if other := st.userByName(body.UserName); strings.EqualFold(body.UserName, s.cfg.User) || other != nil && other != x {
			return errUserExists
		}
		body.set(x)
		u = clone(x)
		return nil
	})
	switch {
	case errors.Is(err, errUserExists):
		scimError(w, http.StatusConflict, "scim_resource_already_exists", "Username already in use: "+body.UserName)
	case err != nil:
		scimError(w, http.StatusNotFound, "scim_resource_not_found", "User "+r.PathValue("id")+" does not exist")
	default:
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		json.NewEncoder(w).Encode(s.renderSCIM(u))
	}
}

// scimPassword sets a user's password, as the admin may without the old one.
func (s *Server) scimPassword(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.write") {
		return
	}
	var body struct {
		Password string `json:"password"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&body); err != nil || body.Password == "" {
		scimError(w, http.StatusBadRequest, "invalid_password", "Password must be at least 1 characters in length.")
		return
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(body.Password), bcrypt.DefaultCost)
	if err != nil {
		scimError(w, http.StatusBadRequest, "invalid_password", "Password must be no more than 72 characters in length.")
		return
	}
	if err := s.st.update(func(st *State) error {
		u := st.Users[r.PathValue("id")]
		if u == nil {
			return notFound("User")
		}
		u.PasswordHash = hash
		return nil
	}); err != nil {
		scimError(w, http.StatusNotFound, "scim_resource_not_found", "User "+r.PathValue("id")+" does not exist")
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(map[string]string{"status": "ok", "message": "password updated"})
}

func (s *Server) scimDelete(w http.ResponseWriter, r *http.Request) {
	if !s.scim(w, r, "scim.write") {
		return
	}
	var u *User
	s.st.update(func(st *State) error {
		if u = st.Users[r.PathValue("id")]; u != nil {
			st.deleteUser(u.GUID)
		}
		return nil
	})
	if u == nil {
		scimError(w, http.StatusNotFound, "scim_resource_not_found", "User "+r.PathValue("id")+" does not exist")
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	json.NewEncoder(w).Encode(s.renderSCIM(u))
}

// deleteUser removes a user and its roles; its tokens stop working at once.
func (st *State) deleteUser(guid string) {
	delete(st.Users, guid)
	for g, r := range st.Roles {
		if r.UserGUID == guid {
			delete(st.Roles, g)
		}
	}
}

func (st *State) userByName(name string) *User {
	for _, u := range st.Users {
		if strings.EqualFold(u.Name, name) {
			return u
		}
	}
	return nil
}

// ccUser is a user as CC renders it: the admin or one CC knows.
type ccUser struct {
	guid, name, origin string
	metadata           Metadata
}

func (s *Server) ccUsers(st *State) []ccUser {
	out := []ccUser{{guid: userGUID, name: s.cfg.User, origin: "uaa"}}
	for _, u := range sorted(st.Users, func(u *User) time.Time { return u.Created }, func(u *User) string { return u.GUID }) {
		if u.InCC {
			out = append(out, u.cc())
		}
	}
	return out
}

func (u *User) cc() ccUser { return ccUser{u.GUID, u.Name, u.Origin, u.Metadata} }

func (s *Server) findCCUser(st *State, guid string) (ccUser, bool) {
	for _, u := range s.ccUsers(st) {
		if u.guid == guid {
			return u, true
		}
	}
	return ccUser{}, false
}

func (s *Server) renderUser(u ccUser) any {
	return obj{"guid": u.guid, "username": u.name, "presentation_name": u.name, "origin": u.origin,
		"created_at": ts(epoch), "updated_at": ts(epoch), "metadata": u.metadata.render(), "links": obj{"self": link(s, "/v3/users/"+u.guid)}}
}

func (s *Server) createUser(c *call) error {
	var body struct {
		GUID     string         `json:"guid"`
		Metadata *metadataPatch `json:"metadata"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	if err := body.Metadata.validate(); err != nil {
		return err
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		u := st.Users[body.GUID]
		switch {
		case body.GUID == userGUID || u != nil && u.InCC:
			return nil, unprocessable("User with guid '%s' already exists.", body.GUID)
		case u == nil:
			return nil, unprocessable("No UAA user has the guid '%s': create it with cf create-user", body.GUID)
		}
		u.InCC = true
		u.Metadata = Metadata{}
		u.Metadata.apply(body.Metadata)
		return s.renderUser(u.cc()), nil
	})
}

func (s *Server) listUsers(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []*ccUser
	s.st.read(func(st *State) {
		for _, u := range s.ccUsers(st) {
			if q.match("guids", u.guid) && q.match("usernames", u.name) && q.match("origins", u.origin) {
				out = append(out, &u)
			}
		}
	})
	return paginate(c, q, out, func(u *ccUser) string { return u.name }, func(*ccUser) time.Time { return epoch },
		func(u *ccUser) any { return s.renderUser(*u) }, nil)
}

func (s *Server) getUser(c *call) error {
	var (
		u  ccUser
		ok bool
	)
	s.st.read(func(st *State) { u, ok = s.findCCUser(st, c.r.PathValue("guid")) })
	if !ok {
		return notFound("User")
	}
	return c.json(http.StatusOK, s.renderUser(u))
}

// updateUser changes a user's metadata (CC's PATCH /v3/users takes nothing else).
func (s *Server) updateUser(c *call) error {
	body, err := c.decodeUpdate()
	if err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		u := st.Users[c.r.PathValue("guid")]
		switch {
		case c.r.PathValue("guid") == userGUID:
			return nil, unprocessable("The admin user is the foundation's own and has no metadata here")
		case u == nil || !u.InCC:
			return nil, notFound("User")
		}
		u.Metadata.apply(body.Metadata)
		return s.renderUser(u.cc()), nil
	})
}

// deleteUser removes a user from CC (its roles go with it); UAA keeps it until
// DELETE /Users, as on CF.
func (s *Server) deleteUser(c *call) error {
	err := s.st.update(func(st *State) error {
		u := st.Users[c.r.PathValue("guid")]
		switch {
		case c.r.PathValue("guid") == userGUID:
			return unprocessable("The admin user is the foundation's own and cannot be deleted")
		case u == nil || !u.InCC:
			return notFound("User")
		}
		u.InCC = false
		for g, r := range st.Roles {
			if r.UserGUID == u.GUID {
				delete(st.Roles, g)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.job("user.delete", nil)
}

// member checks a password for a user other than the admin.
func (s *Server) member(name, password string) (*User, bool) {
	var u *User
	s.st.read(func(st *State) {
		if x := st.userByName(name); x != nil {
			cp := *x
			u = &cp
		}
	})
	if u == nil {
		bcrypt.CompareHashAndPassword(dummyHash, []byte(password)) // as long as for a user
		return nil, false
	}
	return u, bcrypt.CompareHashAndPassword(u.PasswordHash, []byte(password)) == nil
}

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a password"), bcrypt.MinCost)

// sees reports whether c's caller may see org (admin: any; a user: one it has a role
// in, as on CC).
func (c *call) seesOrg(st *State, org string) bool {
	return c.user == nil || c.user.admin() || st.hasOrgRole(c.user.UserID, org)
}

// seesSpace reports whether c's caller may see sp: a user with a role in it, or one
// managing its org, as on CC.
func (c *call) seesSpace(st *State, sp *Space) bool {
	if c.user == nil || c.user.admin() {
		return true
	}
	for _, r := range st.Roles {
		if r.UserGUID == c.user.UserID && (r.SpaceGUID == sp.GUID || r.OrgGUID == sp.OrgGUID && r.Type == "organization_manager") {
			return true
		}
	}
	return false
}
