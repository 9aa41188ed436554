package cc

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"
)

// The persisted model of the foundation. It is the state a Cloud Controller keeps in its
// database, reduced to what this foundation serves; resources render to the CC v3 JSON
// shapes in render.go.

// Org is an organization.
type Org struct {
	GUID    string    `json:"guid"`
	Name    string    `json:"name"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
	// DefaultIsolationSegment is the segment of spaces that have none ("" = shared).
	DefaultIsolationSegment string `json:"default_isolation_segment,omitempty"`
	// QuotaGUID is the org's quota ("" = the built-in default, quotaGUID).
	QuotaGUID string   `json:"quota_guid,omitempty"`
	Metadata  Metadata `json:"metadata"`
}

func (o *Org) quota() string {
	if o.QuotaGUID == "" {
		return quotaGUID
	}
	return o.QuotaGUID
}

// Space is a space in an org.
type Space struct {
	GUID             string    `json:"guid"`
	Name             string    `json:"name"`
	OrgGUID          string    `json:"org_guid"`
	IsolationSegment string    `json:"isolation_segment,omitempty"` // guid
	QuotaGUID        string    `json:"quota_guid,omitempty"`        // the space quota applied; "" for none
	SSHDisabled      bool      `json:"ssh_disabled,omitempty"`      // CC's allow_ssh, inverted: enabled by default
	Created          time.Time `json:"created_at"`
	Updated          time.Time `json:"updated_at"`
	Metadata         Metadata  `json:"metadata"`
}

// sharedSegmentGUID is CC's shared isolation segment, which every CC has: spaces
// placed in it run where spaces without a segment do.
const sharedSegmentGUID = "933b4c58-120b-499a-b85d-4b6fc9e2903b"

// IsolationSegment is a placement tag; its name is the cell it runs on.
type IsolationSegment struct {
	GUID     string    `json:"guid"`
	Name     string    `json:"name"`
	Orgs     []string  `json:"orgs"` // entitled org guids
	Created  time.Time `json:"created_at"`
	Updated  time.Time `json:"updated_at"`
	Metadata Metadata  `json:"metadata"`
}

// App states.
const (
	AppStarted = "STARTED"
	AppStopped = "STOPPED"
)

// App is an app; its processes hold the scale.
type App struct {
	GUID        string            `json:"guid"`
	Name        string            `json:"name"`
	SpaceGUID   string            `json:"space_guid"`
	State       string            `json:"state"`
	Buildpacks  []string          `json:"buildpacks,omitempty"`
	Stack       string            `json:"stack"`
	Env         map[string]string `json:"env,omitempty"`
	DropletGUID string            `json:"droplet_guid,omitempty"` // current droplet
	SSHDisabled bool              `json:"ssh_disabled,omitempty"` // the ssh app feature, inverted: enabled by default
	Created     time.Time         `json:"created_at"`
	Updated     time.Time         `json:"updated_at"`
	Metadata    Metadata          `json:"metadata"`
}

// Process is one process type of an app.
type Process struct {
	GUID        string    `json:"guid"`
	AppGUID     string    `json:"app_guid"`
	SpaceGUID   string    `json:"space_guid"` // the app's; apps do not move
	Type        string    `json:"type"`
	Command     string    `json:"command,omitempty"` // "" = the droplet's
	Instances   int       `json:"instances"`
	MemoryMB    int       `json:"memory_in_mb"`
	DiskMB      int       `json:"disk_in_mb"`
	HealthCheck string    `json:"health_check_type"` // port, process, http
	HealthPath  string    `json:"health_check_endpoint,omitempty"`
	Timeout     int       `json:"health_check_timeout,omitempty"` // seconds, 0 = default
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

// Package states.
const (
	PackageAwaitingUpload = "AWAITING_UPLOAD"
	PackageReady          = "READY"
)

// Package is uploaded app bits.
type Package struct {
	GUID    string    `json:"guid"`
	AppGUID string    `json:"app_guid"`
	State   string    `json:"state"`
	SHA256  string    `json:"sha256,omitempty"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// Build and droplet states.
const (
	BuildStaging = "STAGING"
	BuildStaged  = "STAGED"
	BuildFailed  = "FAILED"
)

// Build stages a package into a droplet.
type Build struct {
	GUID        string    `json:"guid"`
	AppGUID     string    `json:"app_guid"`
	PackageGUID string    `json:"package_guid"`
	State       string    `json:"state"`
	Error       string    `json:"error,omitempty"`
	DropletGUID string    `json:"droplet_guid,omitempty"`
	Buildpacks  []string  `json:"buildpacks,omitempty"`
	Created     time.Time `json:"created_at"`
	Updated     time.Time `json:"updated_at"`
}

// unmap removes app's destination from r, in new slices: rendered copies share the old.
func (r *Route) unmap(app string) {
	other := func(g string) bool { return g == app }
	r.Apps = slices.DeleteFunc(slices.Clone(r.Apps), other)
	r.HTTP2Apps = slices.DeleteFunc(slices.Clone(r.HTTP2Apps), other)
}

// protocol is the destination protocol of app's destination: http1 or http2.
func (r *Route) protocol(app string) string {
	if slices.Contains(r.HTTP2Apps, app) {
		return "http2"
	}
	return "http1"
}

// Droplet is a staged app, ready to run.
type Droplet struct {
	GUID        string `json:"guid"`
	AppGUID     string `json:"app_guid"`
	PackageGUID string `json:"package_guid"`
	State       string `json:"state"`
	Buildpack   string `json:"buildpack"`
	// BuildpackVersion is the buildpack's version; "" (droplets staged before it was
	// kept) is CC's null.
	BuildpackVersion string `json:"buildpack_version,omitempty"`
	StartCommand     string `json:"start_command"`
	// ProcessTypes are the commands of the droplet's process types besides web.
	ProcessTypes map[string]string `json:"process_types,omitempty"`
	Created      time.Time         `json:"created_at"`
	Updated      time.Time         `json:"updated_at"`
}

// Domain is a shared domain for routes.
type Domain struct {
	GUID string `json:"guid"`
	Name string `json:"name"`
	// OrgGUID owns a private domain ("" = shared); SharedOrgs may use it too.
	OrgGUID    string    `json:"org_guid,omitempty"`
	SharedOrgs []string  `json:"shared_orgs,omitempty"`
	Internal   bool      `json:"internal,omitempty"`
	Created    time.Time `json:"created_at"`
	Metadata   Metadata  `json:"metadata"`
}

// Route maps host.domain[/path] to apps.
type Route struct {
	GUID       string    `json:"guid"`
	Host       string    `json:"host"`
	Path       string    `json:"path,omitempty"` // "" or /seg[/seg…]; the router matches it as a prefix
	DomainGUID string    `json:"domain_guid"`
	SpaceGUID  string    `json:"space_guid"`
	Apps       []string  `json:"apps"`                 // destination app guids (web process)
	HTTP2Apps  []string  `json:"http2_apps,omitempty"` // those of Apps whose destination protocol is http2
	Created    time.Time `json:"created_at"`
	Updated    time.Time `json:"updated_at"`
	Metadata   Metadata  `json:"metadata"`
}

// ServiceInstance is a managed service instance.
type ServiceInstance struct {
	GUID      string    `json:"guid"`
	Name      string    `json:"name"`
	SpaceGUID string    `json:"space_guid"`
	PlanGUID  string    `json:"plan_guid"`
	Tags      []string  `json:"tags,omitempty"`
	Created   time.Time `json:"created_at"`
	Updated   time.Time `json:"updated_at"`
	// UserProvided marks a user-provided instance (cf cups): no plan, no broker; its
	// credentials, syslog drain URL and route service URL are the user's.
	UserProvided    bool           `json:"user_provided,omitempty"`
	Credentials     map[string]any `json:"credentials,omitempty"`
	SyslogDrainURL  string         `json:"syslog_drain_url,omitempty"`
	RouteServiceURL string         `json:"route_service_url,omitempty"`
}

// Binding is a service credential binding: of an app, or a service key (no app).
type Binding struct {
	GUID         string         `json:"guid"`
	Name         string         `json:"name,omitempty"`
	AppGUID      string         `json:"app_guid"` // "" for a service key
	InstanceGUID string         `json:"instance_guid"`
	Credentials  map[string]any `json:"credentials"`
	Created      time.Time      `json:"created_at"`
	Updated      time.Time      `json:"updated_at"`
}

// kind is the binding's CC type: app, or key for a service key.
func (b *Binding) kind() string {
	if b.AppGUID == "" {
		return "key"
	}
	return "app"
}

// Job is an asynchronous operation; every job here completes before it is returned.
type Job struct {
	GUID      string    `json:"guid"`
	Operation string    `json:"operation"`
	State     string    `json:"state"` // COMPLETE or FAILED
	Error     *Error    `json:"error,omitempty"`
	Created   time.Time `json:"created_at"`
}

// newGUID returns a random version 4 UUID.
func newGUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	s := hex.EncodeToString(b[:])
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

// processTypes are the droplet's process types and their commands, web's included.
func (d *Droplet) processTypes() map[string]string {
	out := map[string]string{"web": d.StartCommand}
	for t, c := range d.ProcessTypes {
		out[t] = c
	}
	return out
}
