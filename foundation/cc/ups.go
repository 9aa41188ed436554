package cc

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"
)

// User-provided service instances (cf create-user-provided-service / cups, cf
// update-user-provided-service / uups), as CC v3 documents them: created, updated and
// deleted synchronously (201, 200, 204: there is no broker), their credentials read at
// GET /v3/service_instances/:guid/credentials, bound like managed ones (201, unbound
// 204) with the instance's credentials, and in VCAP_SERVICES under the label
// "user-provided" with their syslog_drain_url. An app bound to one with a syslog
// drain URL has its log lines sent there (Drains).

const typeUserProvided = "user-provided"

// upsBody is what a create or update request may set on a user-provided instance.
// Pointers tell a field left out from one set to its zero value.
type upsBody struct {
	Credentials     *map[string]any `json:"credentials"`
	SyslogDrainURL  *string         `json:"syslog_drain_url"`
	RouteServiceURL *string         `json:"route_service_url"`
}

func instanceType(i *ServiceInstance) string {
	if i.UserProvided {
		return typeUserProvided
	}
	return "managed"
}

func (s *Server) userProvidedRoutes() {
	s.handle("PATCH /v3/service_instances/{guid}", s.updateUserProvided)
	s.handle("GET /v3/service_instances/{guid}/credentials", s.userProvidedCredentials)
}

// apply sets what b carries on i, checking the URLs as CC does: a drain URL with a
// scheme the syslog agent speaks, a route service URL over https.
func (b upsBody) apply(i *ServiceInstance) error {
	if b.Credentials != nil {
		i.Credentials = *b.Credentials
	}
	if b.SyslogDrainURL != nil {
		if u := *b.SyslogDrainURL; u != "" {
			p, err := url.Parse(u)
			if err != nil || p.Host == "" || !slices.Contains([]string{"syslog", "syslog-tls", "https", "http"}, p.Scheme) {
				return unprocessable("Syslog drain url must be a valid URL with scheme syslog, syslog-tls, https or http")
			}
		}
		i.SyslogDrainURL = *b.SyslogDrainURL
	}
	if b.RouteServiceURL != nil {
		if u := *b.RouteServiceURL; u != "" {
			if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
				return unprocessable("Route service url must be https")
			}
		}
		i.RouteServiceURL = *b.RouteServiceURL
	}
	return nil
}

func (s *Server) createUserProvided(c *call, name, space string, tags []string, b upsBody) error {
	if name == "" {
		return unprocessable("Name can't be blank")
	}
	now := time.Now().UTC()
	si := &ServiceInstance{GUID: newGUID(), Name: name, SpaceGUID: space, Tags: tags, UserProvided: true, Created: now, Updated: now}
	if err := b.apply(si); err != nil {
		return err
	}
	return c.change(http.StatusCreated, func(st *State) (any, error) {
		if st.Spaces[space] == nil {
			return nil, unprocessable("Invalid space. Ensure that the space exists and you have access to it.")
		}
		if st.instanceByName(space, name) != nil {
			return nil, unprocessable("The service instance name is taken: %s.", name)
		}
		st.ServiceInstances[si.GUID] = si
		return s.renderUserProvided(si), nil
	})
}

// updateUserProvided answers PATCH of a user-provided instance (cf uups, a rename); a
// managed instance cannot be updated here.
func (s *Server) updateUserProvided(c *call) error {
	var body struct {
		Name *string   `json:"name"`
		Tags *[]string `json:"tags"`
		upsBody
	}
	if err := c.decode(&body); err != nil {
		return err
	}
	return c.change(http.StatusOK, func(st *State) (any, error) {
		si := st.ServiceInstances[c.r.PathValue("guid")]
		if si == nil {
			return nil, notFound("Service instance")
		}
		if !si.UserProvided {
			return nil, unprocessable("The local foundation's managed instances cannot be updated")
		}
		up := *si
		if body.Name != nil && *body.Name != si.Name {
			if *body.Name == "" {
				return nil, unprocessable("Name can't be blank")
			}
			if st.instanceByName(si.SpaceGUID, *body.Name) != nil {
				return nil, unprocessable("The service instance name is taken: %s.", *body.Name)
			}
			up.Name = *body.Name
		}
		if body.Tags != nil {
			up.Tags = *body.Tags
		}
		if err := body.apply(&up); err != nil {
			return nil, err
		}
		up.Updated = time.Now().UTC()
		st.ServiceInstances[si.GUID] = &up
		return s.renderUserProvided(&up), nil
	})
}

func (s *Server) userProvidedCredentials(c *call) error {
	var creds map[string]any
	found := false
	s.st.read(func(st *State) {
		if si := st.ServiceInstances[c.r.PathValue("guid")]; si != nil && si.UserProvided {
			found, creds = true, si.Credentials
		}
	})
	if !found {
		return notFound("Service instance")
	}
	if creds == nil {
		creds = map[string]any{}
	}
	return c.json(http.StatusOK, creds)
}

func (s *Server) renderUserProvided(i *ServiceInstance) any {
	tags := i.Tags
	if tags == nil {
		tags = []string{}
	}
	op := lastOperation("create", i.Created)
	if !i.Updated.Equal(i.Created) {
		op = lastOperation("update", i.Updated)
	}
	return obj{
		"guid": i.GUID, "name": i.Name, "type": typeUserProvided, "tags": tags,
		"syslog_drain_url": nullString(i.SyslogDrainURL), "route_service_url": nullString(i.RouteServiceURL),
		"last_operation": op, "created_at": ts(i.Created), "updated_at": ts(i.Updated),
		"relationships": obj{"space": rel(i.SpaceGUID)}, "metadata": metadata(),
		"links": obj{"self": link(s, "/v3/service_instances/"+i.GUID), "space": link(s, "/v3/spaces/"+i.SpaceGUID),
			"credentials":                 link(s, "/v3/service_instances/"+i.GUID+"/credentials"),
			"service_credential_bindings": link(s, "/v3/service_credential_bindings?service_instance_guids="+i.GUID),
			"service_route_bindings":      link(s, "/v3/service_route_bindings?service_instance_guids="+i.GUID)},
	}
}

// userProvidedVCAP is a binding's VCAP_SERVICES entry for a user-provided instance.
func userProvidedVCAP(b *Binding, si *ServiceInstance) obj {
	tags := si.Tags
	if tags == nil {
		tags = []string{}
	}
	creds := b.Credentials
	if creds == nil {
		creds = map[string]any{}
	}
	return obj{
		"binding_guid": b.GUID, "binding_name": nullString(b.Name), "credentials": creds,
		"instance_guid": si.GUID, "instance_name": si.Name, "label": typeUserProvided, "name": si.Name,
		"syslog_drain_url": nullString(si.SyslogDrainURL), "tags": tags, "volume_mounts": []any{},
	}
}

// Drains returns the syslog drain URLs of every app bound to a user-provided instance
// that has one, by app GUID, sorted; the log pipeline reads it to send each app's
// lines to its drains.
func (s *Server) Drains() map[string][]string {
	out := map[string][]string{}
	s.st.read(func(st *State) {
		for _, b := range st.Bindings {
			if si := st.ServiceInstances[b.InstanceGUID]; si != nil && si.UserProvided && si.SyslogDrainURL != "" {
				if !slices.Contains(out[b.AppGUID], si.SyslogDrainURL) {
					out[b.AppGUID] = append(out[b.AppGUID], si.SyslogDrainURL)
				}
			}
		}
	})
	for _, urls := range out {
		sort.Strings(urls)
	}
	return out
}

// noContent answers 204.
func (c *call) noContent() error {
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}
