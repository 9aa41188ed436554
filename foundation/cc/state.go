package cc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// State is everything the Cloud Controller knows. It is saved as one JSON file after
// every change, so the foundation comes back as it was after a restart.
type State struct {
	Orgs              map[string]*Org              `json:"orgs"`
	Spaces            map[string]*Space            `json:"spaces"`
	IsolationSegments map[string]*IsolationSegment `json:"isolation_segments"`
	Apps              map[string]*App              `json:"apps"`
	Processes         map[string]*Process          `json:"processes"`
	Packages          map[string]*Package          `json:"packages"`
	Builds            map[string]*Build            `json:"builds"`
	Droplets          map[string]*Droplet          `json:"droplets"`
	Domains           map[string]*Domain           `json:"domains"`
	Routes            map[string]*Route            `json:"routes"`
	ServiceInstances  map[string]*ServiceInstance  `json:"service_instances"`
	Bindings          map[string]*Binding          `json:"bindings"`
	Jobs              map[string]*Job              `json:"jobs"`
	SpaceQuotas       map[string]*SpaceQuota       `json:"space_quotas"`
	OrgQuotas         map[string]*OrgQuota         `json:"org_quotas"`
	SecurityGroups    map[string]*SecurityGroup    `json:"security_groups"`
	Roles             map[string]*Role             `json:"roles"`
	Deployments       map[string]*Deployment       `json:"deployments"`
	Users             map[string]*User             `json:"users,omitempty"`        // UAA users other than the admin
	EnvGroups         map[string]*EnvGroup         `json:"env_groups,omitempty"`   // running, staging; nil until set
	AuditEvents       []*AuditEvent                `json:"audit_events,omitempty"` // oldest first
	// FeatureFlags are the flags an operator set; the rest have their defaults.
	FeatureFlags map[string]*FeatureFlag `json:"feature_flags,omitempty"`
}

func newState() *State {
	return &State{
		Orgs: map[string]*Org{}, Spaces: map[string]*Space{}, IsolationSegments: map[string]*IsolationSegment{},
		Apps: map[string]*App{}, Processes: map[string]*Process{}, Packages: map[string]*Package{},
		Builds: map[string]*Build{}, Droplets: map[string]*Droplet{}, Domains: map[string]*Domain{},
		Routes: map[string]*Route{}, ServiceInstances: map[string]*ServiceInstance{}, Bindings: map[string]*Binding{},
		Jobs: map[string]*Job{}, SpaceQuotas: map[string]*SpaceQuota{}, OrgQuotas: map[string]*OrgQuota{},
		SecurityGroups: map[string]*SecurityGroup{}, Roles: map[string]*Role{}, Users: map[string]*User{},
		Deployments: map[string]*Deployment{},
	}
}

// store guards the state and persists it.
type store struct {
	mu   sync.Mutex
	s    *State
	path string // "" = not persisted
	// changed, when set, runs under the lock after every successful update.
	changed func(*State)
}

// loadStore reads path, or starts empty when it does not exist.
func loadStore(path string) (*store, error) {
	st := &store{s: newState(), path: path}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read foundation state: %w", err)
	}
	if err := json.Unmarshal(b, st.s); err != nil {
		return nil, fmt.Errorf("foundation state %s is damaged: %w", path, err)
	}
	fresh := newState() // maps added by newer versions start empty
	if st.s.Jobs == nil {
		st.s.Jobs = fresh.Jobs
	}
	if st.s.SpaceQuotas == nil {
		st.s.SpaceQuotas = fresh.SpaceQuotas
	}
	if st.s.OrgQuotas == nil {
		st.s.OrgQuotas = fresh.OrgQuotas
	}
	if st.s.SecurityGroups == nil {
		st.s.SecurityGroups = fresh.SecurityGroups
	}
	if st.s.Roles == nil {
		st.s.Roles = fresh.Roles
	}
	if st.s.Deployments == nil {
		st.s.Deployments = fresh.Deployments
	}
	if st.s.Users == nil {
		st.s.Users = fresh.Users
	}
	return st, nil
}

// read runs f with the state locked for reading.
func (st *store) read(f func(s *State)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f(st.s)
}

// update runs f with the state locked and saves it when f succeeds. A failed save
// is returned: the change stays in memory, but the caller learns it is not durable.
func (st *store) update(f func(s *State) error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := f(st.s); err != nil {
		return err
	}
	if st.changed != nil {
		st.changed(st.s)
	}
	return st.saveLocked()
}

func (st *store) saveLocked() error {
	if st.path == "" {
		return nil
	}
	b, err := json.Marshal(st.s)
	if err != nil {
		return err
	}
	tmp := st.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save foundation state: %w", err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		return fmt.Errorf("save foundation state: %w", err)
	}
	return nil
}

// sorted returns the values of m ordered by creation time, then guid: the order lists
// have before order_by applies.
func sorted[T any](m map[string]*T, created func(*T) time.Time, guid func(*T) string) []*T {
	out := make([]*T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		ci, cj := created(out[i]), created(out[j])
		if !ci.Equal(cj) {
			return ci.Before(cj)
		}
		return guid(out[i]) < guid(out[j])
	})
	return out
}

// clone copies a resource so that it can be rendered after the lock is released; the
// copy shares maps and slices, which updates replace rather than change in place.
func clone[T any](v *T) *T {
	c := *v
	return &c
}

// Lookups by name, used by handlers and the manifest.

func (s *State) orgByName(name string) *Org {
	for _, o := range s.Orgs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func (s *State) spaceByName(org, name string) *Space {
	for _, sp := range s.Spaces {
		if sp.OrgGUID == org && sp.Name == name {
			return sp
		}
	}
	return nil
}

func (s *State) appByName(space, name string) *App {
	for _, a := range s.Apps {
		if a.SpaceGUID == space && a.Name == name {
			return a
		}
	}
	return nil
}

func (s *State) process(app, typ string) *Process {
	for _, p := range s.Processes {
		if p.AppGUID == app && p.Type == typ {
			return p
		}
	}
	return nil
}

func (s *State) segmentByName(name string) *IsolationSegment {
	for _, i := range s.IsolationSegments {
		if i.Name == name {
			return i
		}
	}
	return nil
}

func (s *State) instanceByName(space, name string) *ServiceInstance {
	for _, i := range s.ServiceInstances {
		if i.SpaceGUID == space && i.Name == name {
			return i
		}
	}
	return nil
}

// segmentOf returns the isolation segment an app's space runs in ("" = shared).
func (s *State) segmentOf(spaceGUID string) string {
	sp := s.Spaces[spaceGUID]
	if sp == nil {
		return ""
	}
	guid := sp.IsolationSegment
	if guid == "" {
		if o := s.Orgs[sp.OrgGUID]; o != nil {
			guid = o.DefaultIsolationSegment
		}
	}
	if seg := s.IsolationSegments[guid]; seg != nil && guid != sharedSegmentGUID {
		return seg.Name
	}
	return ""
}

// routeURL is host.domain[/path] of r, CC's url of a route.
func (s *State) routeURL(r *Route) string { return s.routeHost(r) + r.Path }

// routeHost is host.domain of r, what the router matches a request's Host with.
func (s *State) routeHost(r *Route) string {
	d := s.Domains[r.DomainGUID]
	if d == nil {
		return r.Host
	}
	if r.Host == "" {
		return d.Name
	}
	return r.Host + "." + d.Name
}

// findRoute returns the route of host, domain and path, nil when there is none. Hosts
// compare in any case, as the router matches them; paths exactly.
func (s *State) findRoute(host, domain, path string) *Route {
	for _, r := range s.Routes {
		if strings.EqualFold(r.Host, host) && r.DomainGUID == domain && r.Path == path {
			return r
		}
	}
	return nil
}

// deleteApp removes an app and everything that belongs to it only.
func (s *State) deleteApp(guid string) {
	delete(s.Apps, guid)
	for g, p := range s.Processes {
		if p.AppGUID == guid {
			delete(s.Processes, g)
		}
	}
	for g, p := range s.Packages {
		if p.AppGUID == guid {
			delete(s.Packages, g)
		}
	}
	for g, b := range s.Builds {
		if b.AppGUID == guid {
			delete(s.Builds, g)
		}
	}
	for g, d := range s.Droplets {
		if d.AppGUID == guid {
			delete(s.Droplets, g)
		}
	}
	for g, b := range s.Bindings {
		if b.AppGUID == guid {
			delete(s.Bindings, g)
		}
	}
	for _, r := range s.Routes {
		r.unmap(guid)
	}
}
