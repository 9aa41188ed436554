// An app's environment as its instances see it (VCAP_APPLICATION, VCAP_SERVICES) and
// as cf env and cf set-env read and write it.

package cc

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// envRoutes registers the endpoints of an app's environment.
func (s *Server) envRoutes() {
	s.handle("GET /v3/apps/{guid}/env", s.appEnv)
	s.handle("GET /v3/apps/{guid}/environment_variables", s.appEnvVars)
	s.handle("PATCH /v3/apps/{guid}/environment_variables", s.updateAppEnvVars)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values only
	}
	return b
}

func (s *Server) vcapApplication(st *State, a *App, p *Process) obj {
	sp := st.Spaces[a.SpaceGUID]
	org := st.Orgs[sp.OrgGUID]
	uris := []string{}
	for _, r := range sorted(st.Routes, func(r *Route) time.Time { return r.Created }, func(r *Route) string { return r.GUID }) {
		if slices.Contains(r.Apps, a.GUID) {
			uris = append(uris, st.routeURL(r))
		}
	}
	return obj{
		"application_id": a.GUID, "application_name": a.Name, "application_uris": uris, "application_version": a.DropletGUID,
		"cf_api": s.baseURL, "limits": obj{"disk": p.DiskMB, "fds": 16384, "mem": p.MemoryMB},
		"name": a.Name, "organization_id": org.GUID, "organization_name": org.Name, "process_id": p.GUID, "process_type": p.Type,
		"space_id": sp.GUID, "space_name": sp.Name, "uris": uris, "users": nil, "version": a.DropletGUID,
	}
}

// vcapServices is VCAP_SERVICES of app: bindings grouped by offering label.
func (s *Server) vcapServices(st *State, app string) obj {
	out := obj{}
	var bindings []*Binding
	for _, b := range st.Bindings {
		if b.AppGUID == app {
			bindings = append(bindings, b)
		}
	}
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Created.Before(bindings[j].Created) })
	for _, b := range bindings {
		si := st.ServiceInstances[b.InstanceGUID]
		if si == nil {
			continue
		}
		if si.UserProvided {
			list, _ := out[typeUserProvided].([]obj)
			out[typeUserProvided] = append(list, userProvidedVCAP(b, si))
			continue
		}
		offering, plan := s.planByGUID(si.PlanGUID)
		label := offering.Name
		tags := append([]string{}, offering.Tags...)
		tags = append(tags, si.Tags...)
		list, _ := out[label].([]obj)
		out[label] = append(list, obj{
			"binding_guid": b.GUID, "binding_name": nullString(b.Name), "credentials": b.Credentials,
			"instance_guid": si.GUID, "instance_name": si.Name, "label": label, "name": si.Name, "plan": plan.Name,
			"provider": nil, "syslog_drain_url": nil, "tags": tags, "volume_mounts": []any{},
		})
	}
	return out
}

func (s *Server) appEnv(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return
		}
		env := obj{}
		for k, v := range a.Env {
			env[k] = v
		}
		p := st.process(a.GUID, "web")
		vcapApp := obj{}
		if p != nil {
			vcapApp = s.vcapApplication(st, a, p)
		}
		resp = obj{"staging_env_json": st.envGroupJSON("staging"), "running_env_json": st.envGroupJSON("running"), "environment_variables": env,
			"system_env_json": obj{"VCAP_SERVICES": s.vcapServices(st, a.GUID)}, "application_env_json": obj{"VCAP_APPLICATION": vcapApp}}
	})
	if resp == nil {
		return notFound("App")
	}
	return c.json(http.StatusOK, resp)
}

// renderEnvVars is the body of GET and PATCH /v3/apps/:guid/environment_variables.
func (s *Server) renderEnvVars(a *App) any {
	vars := obj{}
	for k, v := range a.Env {
		vars[k] = v
	}
	return obj{"var": vars, "links": obj{"self": link(s, "/v3/apps/"+a.GUID+"/environment_variables"), "app": link(s, "/v3/apps/"+a.GUID)}}
}

func (s *Server) appEnvVars(c *call) error {
	var resp any
	s.st.read(func(st *State) {
		if a := st.Apps[c.r.PathValue("guid")]; a != nil {
			resp = s.renderEnvVars(a)
		}
	})
	if resp == nil {
		return notFound("App")
	}
	return c.json(http.StatusOK, resp)
}

// updateAppEnvVars merges the request's variables into the app's; a null value removes
// one. As on CF, running instances see the change only after a restart.
func (s *Server) updateAppEnvVars(c *call) error {
	var body struct {
		Var map[string]json.RawMessage `json:"var"`
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	set, unset := map[string]string{}, []string{}
	for k, raw := range body.Var {
		if p := envNameProblem(k); p != "" {
			return unprocessable("Var %s", p)
		}
		if string(raw) == "null" {
			unset = append(unset, k)
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return unprocessable("Non-string value in environment variable for key '%s', value '%s'", k, raw)
		}
		set[k] = v
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		a := st.Apps[c.r.PathValue("guid")]
		if a == nil {
			return nil, notFound("App")
		}
		// A new map: rendered copies of the app share the old one.
		env := make(map[string]string, len(a.Env)+len(set))
		for k, v := range a.Env {
			env[k] = v
		}
		for k, v := range set {
			env[k] = v
		}
		for _, k := range unset {
			delete(env, k)
		}
		a.Env, a.Updated = env, time.Now().UTC()
		st.audit("audit.app.update", a, map[string]any{"request": map[string]any{"environment_variables": "[PRIVATE DATA HIDDEN]"}})
		return s.renderEnvVars(a), nil
	})
}

// envNameProblem says why CC rejects an environment variable name ("" = it does not):
// the names it reserves.
func envNameProblem(k string) string {
	u := strings.ToUpper(k)
	switch {
	case k == "":
		return "key must be a minimum length of 1"
	case strings.HasPrefix(u, "VCAP_"):
		return "cannot start with VCAP_"
	case strings.HasPrefix(u, "VMC"):
		return "cannot start with VMC_"
	case u == "PORT":
		return "cannot set PORT"
	}
	return ""
}
