package cc

import (
	"maps"
	"net/http"
	"time"
)

// Environment variable groups (cf set-running-environment-variable-group,
// set-staging-environment-variable-group, running-environment-variable-group, cf env):
// variables every app gets when it runs (running) or stages (staging), under its own,
// which win, as on CF.

// envGroupNames are CC's two groups.
var envGroupNames = map[string]bool{"running": true, "staging": true}

// EnvGroup is one group's variables.
type EnvGroup struct {
	Var     map[string]string `json:"var"`
	Updated time.Time         `json:"updated_at"`
}

func (s *Server) envGroupRoutes() {
	s.handle("GET /v3/environment_variable_groups/{name}", s.getEnvGroup)
	s.handle("PATCH /v3/environment_variable_groups/{name}", s.updateEnvGroup)
}

func (s *Server) renderEnvGroup(name string, g *EnvGroup) any {
	vars, updated := obj{}, any(nil)
	if g != nil {
		for k, v := range g.Var {
			vars[k] = v
		}
		updated = ts(g.Updated)
	}
	return obj{"name": name, "var": vars, "updated_at": updated, "links": obj{"self": link(s, "/v3/environment_variable_groups/"+name)}}
}

func (s *Server) getEnvGroup(c *call) error {
	name := c.r.PathValue("name")
	if !envGroupNames[name] {
		return notFound("Environment variable group")
	}
	var resp any
	s.st.read(func(st *State) { resp = s.renderEnvGroup(name, st.EnvGroups[name]) })
	return c.json(http.StatusOK, resp)
}

// updateEnvGroup merges the body's var into the group; a null removes a variable.
func (s *Server) updateEnvGroup(c *call) error {
	name := c.r.PathValue("name")
	if !envGroupNames[name] {
		return notFound("Environment variable group")
	}
	var body struct {
		Var map[string]*string `json:"var"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	for k := range body.Var {
		if k == "" || k == "PORT" || len(k) >= 5 && k[:5] == "VCAP_" {
			return unprocessable("Var: '%s' cannot be set in an environment variable group", k)
		}
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		if st.EnvGroups == nil {
			st.EnvGroups = map[string]*EnvGroup{}
		}
		g := &EnvGroup{Var: map[string]string{}, Updated: time.Now().UTC()} // new: rendered copies share the old
		if old := st.EnvGroups[name]; old != nil {
			maps.Copy(g.Var, old.Var)
		}
		for k, v := range body.Var {
			if v == nil {
				delete(g.Var, k)
			} else {
				g.Var[k] = *v
			}
		}
		st.EnvGroups[name] = g
		return s.renderEnvGroup(name, g), nil
	})
}

// groupEnv is group's variables with env's over them, in a new map.
func (st *State) groupEnv(group string, env map[string]string) map[string]string {
	out := map[string]string{}
	if g := st.EnvGroups[group]; g != nil {
		maps.Copy(out, g.Var)
	}
	maps.Copy(out, env)
	return out
}

// envGroupJSON is a group's variables as cf env shows them.
func (st *State) envGroupJSON(group string) obj {
	out := obj{}
	if g := st.EnvGroups[group]; g != nil {
		for k, v := range g.Var {
			out[k] = v
		}
	}
	return out
}
