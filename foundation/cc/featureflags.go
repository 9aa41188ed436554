package cc

import (
	"net/http"
	"slices"
	"time"
)

// FeatureFlag is an operator's switch of a Cloud Controller feature. The foundation
// keeps the flags and answers for them as CC does; it enforces none of them (its one
// user is an admin, whom no flag restricts).
type FeatureFlag struct {
	Enabled            bool      `json:"enabled"`
	CustomErrorMessage string    `json:"custom_error_message,omitempty"`
	Updated            time.Time `json:"updated_at"`
}

// defaultFeatureFlags are CC's flags and their defaults (the CC v3 docs' list).
var defaultFeatureFlags = []struct {
	name    string
	enabled bool
}{
	{"app_bits_upload", true},
	{"app_scaling", true},
	{"diego_docker", false},
	{"diego_cnb", false},
	{"env_var_visibility", true},
	{"hide_marketplace_from_unauthenticated_users", false},
	{"private_domain_creation", true},
	{"resource_matching", true},
	{"route_creation", true},
	{"route_sharing", false},
	{"service_instance_creation", true},
	{"service_instance_sharing", false},
	{"set_roles_by_username", true},
	{"space_developer_env_var_visibility", true},
	{"space_scoped_private_broker_creation", true},
	{"task_creation", true},
	{"unset_roles_by_username", true},
	{"user_org_creation", false},
}

func (s *Server) featureFlagRoutes() {
	s.handle("GET /v3/feature_flags", s.listFeatureFlags)
	s.handle("GET /v3/feature_flags/{name}", s.getFeatureFlag)
	s.handle("PATCH /v3/feature_flags/{name}", s.updateFeatureFlag)
}

// featureFlag is flag name as set, or its default; ok is false for an unknown name.
func featureFlag(st *State, name string) (f FeatureFlag, ok bool) {
	i := slices.IndexFunc(defaultFeatureFlags, func(d struct {
		name    string
		enabled bool
	}) bool {
		return d.name == name
	})
	if i < 0 {
		return f, false
	}
	if set, ok := st.FeatureFlags[name]; ok {
		return *set, true
	}
	return FeatureFlag{Enabled: defaultFeatureFlags[i].enabled}, true
}

func (s *Server) renderFeatureFlag(name string, f FeatureFlag) obj {
	var msg, updated any
	if f.CustomErrorMessage != "" {
		msg = f.CustomErrorMessage
	}
	if !f.Updated.IsZero() {
		updated = ts(f.Updated)
	}
	return obj{"name": name, "enabled": f.Enabled, "updated_at": updated, "custom_error_message": msg,
		"links": obj{"self": link(s, "/v3/feature_flags/"+name)}}
}

type namedFlag struct {
	name string
	flag FeatureFlag
}

func (s *Server) listFeatureFlags(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	var out []namedFlag
	s.st.read(func(st *State) {
		for _, d := range defaultFeatureFlags {
			f, _ := featureFlag(st, d.name)
			out = append(out, namedFlag{d.name, f})
		}
	})
	return paginate(c, q, out, func(n namedFlag) string { return n.name }, func(namedFlag) time.Time { return time.Time{} },
		func(n namedFlag) any { return s.renderFeatureFlag(n.name, n.flag) }, nil)
}

func (s *Server) getFeatureFlag(c *call) error {
	name := c.r.PathValue("name")
	var f FeatureFlag
	var ok bool
	s.st.read(func(st *State) { f, ok = featureFlag(st, name) })
	if !ok {
		return notFound("Feature flag")
	}
	return c.json(http.StatusOK, s.renderFeatureFlag(name, f))
}

func (s *Server) updateFeatureFlag(c *call) error {
	var body struct {
		Enabled            *bool   `json:"enabled"`
		CustomErrorMessage *string `json:"custom_error_message"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	name := c.r.PathValue("name")
	return c.change(http.StatusOK, func(st *State) (any, error) {
		f, ok := featureFlag(st, name)
		if !ok {
			return nil, notFound("Feature flag")
		}
		if body.Enabled != nil {
			f.Enabled = *body.Enabled
		}
		if body.CustomErrorMessage != nil {
			f.CustomErrorMessage = *body.CustomErrorMessage
		}
		f.Updated = time.Now().UTC()
		if st.FeatureFlags == nil {
			st.FeatureFlags = map[string]*FeatureFlag{}
		}
		st.FeatureFlags[name] = &f
		return s.renderFeatureFlag(name, f), nil
	})
}
