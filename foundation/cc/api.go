// Package cc is the local foundation's Cloud Controller: the subset of the CC v3 API
// (and a UAA-style token endpoint) that the cf CLI's everyday commands and go-cfclient
// use, with the JSON shapes, pagination, filters and errors the CC v3 docs define. It
// keeps its state in one JSON file and drives a Runtime (staging and cells) and a
// Broker (services); it runs nothing itself.
package cc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// APIVersion is the CC API version this foundation claims: recent enough that the cf
// CLI v8 takes every modern code path (it wants at least 3.99.0).
const APIVersion = "3.200.0"

// Runtime stages and runs apps. Implementations are safe for concurrent use.
type Runtime interface {
	// Stage builds a droplet from a package; it may take minutes (npm, Java).
	Stage(ctx context.Context, req StageRequest) (StageResult, error)
	// Run makes the process's instances match spec, restarting them when anything but
	// the instance count changed.
	Run(spec RunSpec)
	// Roll replaces the process's instances of indexes from ≤ i < to with spec's
	// (all of them: 0 and spec.Instances; a canary step: a part) a few at a time (at
	// most maxInFlight starting at once), each new one beside the one it replaces, so
	// that the process keeps serving (a rolling deployment). It returns at once; done
	// is called once, with nil when those instances run spec, or with an error when
	// something else took the process over first (Run, Roll, Stop). It is not called
	// when the runtime shuts down first.
	Roll(spec RunSpec, maxInFlight, from, to int, done func(error))
	// Stop stops every instance of a process.
	Stop(processGUID string)
	// Instances reports the process's instances, sorted by index.
	Instances(processGUID string) []Instance
	// Terminate stops the process's instance of index gracefully and starts it again
	// (CC's terminate: Diego retires the instance and starts another), returning the
	// guid of the instance stopped; an error when none is there.
	Terminate(processGUID string, index int) (instanceGUID string, err error)
}

// ErrNoAppDetected, wrapped in what Runtime.Stage returns, fails the build as CC's
// NoAppDetectedError does: no buildpack was named and none detected the app.
var ErrNoAppDetected = errors.New("NoAppDetectedError - An app was not successfully detected by any available buildpack")

// StageRequest asks the runtime to stage PackageZip into DropletDir.
type StageRequest struct {
	PackageZip string
	DropletDir string
	Buildpacks []string
	Command    string
	MemoryMB   int
	Env        map[string]string
	Log        io.Writer
}

// StageResult is what staging found: the buildpack (a system buildpack's name, such
// as staticfile_buildpack), its version ("" if unknown), the start command (of the web
// process) and the commands of the app's other process types (from a Procfile).
type StageResult struct {
	Buildpack        string
	BuildpackVersion string
	StartCommand     string
	ProcessTypes     map[string]string
}

// RunSpec is a process as the runtime runs it.
type RunSpec struct {
	ProcessGUID, AppGUID, AppName, ProcessType string
	Dir                                        string // the droplet's app dir
	Command                                    string
	Env                                        map[string]string
	Instances, MemoryMB, DiskMB                int
	HealthCheck, HealthPath                    string
	Timeout                                    time.Duration
	IsolationSegment                           string
}

// Instance is one running (or crashed) instance, as process stats report it.
type Instance struct {
	Index          int
	GUID           string
	State          string // STARTING, RUNNING, CRASHED, DOWN
	Host           string
	Port           int
	Uptime         time.Duration
	CPU            float64 // fraction of one core
	CPUEntitlement float64 // fraction of one core; 0 = unknown
	MemBytes       uint64
	DiskBytes      uint64
	Details        string
	// SampledAt is when the usage figures were measured; zero = never.
	SampledAt time.Time
}

// Broker provisions the foundation's service offerings.
type Broker interface {
	// Catalog lists the offerings; it does not change while the foundation runs.
	Catalog() []Offering
	Provision(ctx context.Context, instanceGUID, plan string) error
	Deprovision(ctx context.Context, instanceGUID string) error
	// Bind returns the credentials an app bound to the instance gets.
	Bind(ctx context.Context, instanceGUID, bindingGUID string) (map[string]any, error)
	Unbind(ctx context.Context, instanceGUID, bindingGUID string) error
}

// Offering is a service offering and its plans.
type Offering struct {
	Name, Description string
	Tags              []string
	Plans             []Plan
}

// Plan is a service plan.
type Plan struct {
	Name, Description string
}

// Config wires a Server.
type Config struct {
	// DataDir holds state.json, uploaded packages and droplets.
	DataDir string
	// DefaultAppMemoryMB is the memory of a process created without one (CC's
	// default_app_memory); 1024 when 0, as cf-deployment sets it.
	DefaultAppMemoryMB int
	Runtime            Runtime
	Broker             Broker // nil: no marketplace
	// User and Password are the one user's credentials.
	User, Password string
	// Secret signs tokens.
	Secret []byte
	// AppsDomain is the shared domain of routes (default apps.localhost).
	AppsDomain string
	// Segments are the isolation segments (cells) to create on first start.
	Segments []string
	// RouterURL (http://127.0.0.1:PORT), when set, is advertised in the root document
	// as the non-standard link cfbench_router: the apps domain does not resolve by DNS,
	// so clients reach routes there with the route as Host header. A real CC has no
	// such link.
	RouterURL string
	// LogCacheURL, when set, is advertised in the root document as links.log_cache, as
	// a real CC advertises its Log Cache (clients read <href>/api/v1/read/:source_id).
	LogCacheURL string
	// CellCores, when set, is advertised in the root document as the non-standard
	// links.cfbench_cells: per isolation segment, the CPU cores an instance there may
	// use ({"apps": {"cores": 1}}), so that a run knows the CPU available per instance.
	// A real CC has no such key.
	CellCores map[string]float64
	// CellHosts, when set, adds to each segment of cfbench_cells the addresses its cells'
	// instances report as their host in process stats ({"apps": {"cores": 1, "hosts":
	// ["127.0.1.1"]}}), so that a run maps the host of each instance to its cell's cores
	// and counts instances sharing a cell once.
	CellHosts map[string][]string
	// AppLog, when set, gets the lines Cloud Controller writes to an app's log, as CC
	// sends them to Loggregator: staging output (source type STG, instance "0") and its
	// own notes (API), such as why an instance crashed. It must not block for long.
	AppLog func(appGUID, sourceType, instance, line string)
	// Chaos, when set, applies the faults of the non-standard endpoint cfbench_chaos
	// (chaos.go); a real CC has none.
	Chaos Chaos
	// AccessTokenTTL and RefreshTokenTTL are the lifetimes of the tokens the UAA
	// endpoint issues; 0: DefaultAccessTokenTTL, DefaultRefreshTokenTTL (uaa.go).
	AccessTokenTTL, RefreshTokenTTL time.Duration
	// RateLimit is CC's rate limiter (ratelimit.go); off when its Limit is 0.
	RateLimit RateLimit
	Logger    *slog.Logger
}

// Server serves the API. BaseURL must be set before the first request.
type Server struct {
	cfg     Config
	st      *store
	baseURL string
	mux     *http.ServeMux
	pool    resourcePool

	// running is what each process was last started with: scaling changes only the
	// instance count of it, as on CF, where env and bindings apply on restart.
	runMu   sync.Mutex
	running map[string]RunSpec

	// hosts maps each route's host.domain (lowercase) to the paths routed there and the
	// app each serves, rebuilt on every change so that the router looks routes up
	// without a lock.
	hosts atomic.Pointer[map[string][]pathRoute]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // builds in flight

	clock         func() time.Time // nil: time.Now; tests set it (uaa.go)
	expiredBefore atomic.Int64     // unix ns: access tokens issued before are invalid (ExpireTokens)
	limiter       *rateLimiter     // nil: no rate limit (ratelimit.go)
}

// New loads the state from cfg.DataDir (or creates it with an org, spaces and segments).
func New(cfg Config) (*Server, error) {
	if cfg.AppsDomain == "" {
		cfg.AppsDomain = "apps.localhost"
	}
	if cfg.DefaultAppMemoryMB <= 0 {
		cfg.DefaultAppMemoryMB = defaultMemoryMB
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{"packages", "droplets", "staging-logs", "resource_pool"} {
		if err := os.MkdirAll(filepath.Join(cfg.DataDir, d), 0o755); err != nil {
			return nil, err
		}
	}
	st, err := loadStore(filepath.Join(cfg.DataDir, "state.json"))
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, st: st, running: map[string]RunSpec{}, pool: resourcePool{filepath.Join(cfg.DataDir, "resource_pool")}}
	st.changed = s.indexRoutes
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := st.update(func(st *State) error { seed(st, cfg); return nil }); err != nil {
		return nil, err
	}
	s.routes()
	s.limiter = newRateLimiter(cfg.RateLimit)
	return s, nil
}

// Org and space names of a fresh foundation.
const (
	DefaultOrg        = "cfbench"
	DefaultAppsSpace  = "apps"
	DefaultLoadSpace  = "loadgen"
	DefaultStack      = "cflinuxfs4"
	defaultMemoryMB   = 1024
	defaultDiskMB     = 1024
	defaultInstances  = 1
	maxPerPage        = 5000
	defaultPerPage    = 50
	defaultHealthType = "port"
)

// seed creates what a fresh foundation has: one org, a space per segment, the apps
// domain, CC's shared segment and the cells' segments, entitled and assigned. It changes nothing that exists.
func seed(s *State, cfg Config) {
	now := time.Now().UTC()
	org := s.orgByName(DefaultOrg)
	if org == nil {
		org = &Org{GUID: newGUID(), Name: DefaultOrg, Created: now, Updated: now}
		s.Orgs[org.GUID] = org
	}
	if len(s.Domains) == 0 {
		d := &Domain{GUID: newGUID(), Name: cfg.AppsDomain, Created: now}
		s.Domains[d.GUID] = d
	}
	if s.IsolationSegments[sharedSegmentGUID] == nil {
		// CC creates it first, with its database.
		at := org.Created.Add(-time.Second)
		s.IsolationSegments[sharedSegmentGUID] = &IsolationSegment{GUID: sharedSegmentGUID, Name: "shared", Created: at, Updated: at}
	}
	for _, name := range cfg.Segments {
		seg := s.segmentByName(name)
		if seg == nil {
			seg = &IsolationSegment{GUID: newGUID(), Name: name, Orgs: []string{org.GUID}, Created: now, Updated: now}
			s.IsolationSegments[seg.GUID] = seg
			if sp := s.spaceByName(org.GUID, name); sp == nil {
				sp = &Space{GUID: newGUID(), Name: name, OrgGUID: org.GUID, IsolationSegment: seg.GUID, Created: now, Updated: now}
				s.Spaces[sp.GUID] = sp
			}
		}
	}
	for _, name := range []string{DefaultAppsSpace, DefaultLoadSpace} {
		if s.spaceByName(org.GUID, name) == nil {
			sp := &Space{GUID: newGUID(), Name: name, OrgGUID: org.GUID, Created: now, Updated: now}
			s.Spaces[sp.GUID] = sp
		}
	}
}

// SetBaseURL is the URL clients reach the API at (http://127.0.0.1:PORT).
func (s *Server) SetBaseURL(u string) { s.baseURL = strings.TrimRight(u, "/") }

// Handler serves the API. As CC's router does, it takes a v3 path with a trailing slash
// (POST /v3/packages/) for the path without it. With Config.RateLimit, CC's rate
// limiter counts the requests first (ratelimit.go).
func (s *Server) Handler() http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > len("/v3/") && strings.HasPrefix(p, "/v3/") && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimSuffix(p, "/")
			r.URL.RawPath = ""
		}
		s.mux.ServeHTTP(w, r)
	})
	return s.limited(h)
}

// Close waits for builds in flight (they are cancelled).
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Error is a CC v3 error, its keys in CC's order (detail, title, code).
type Error struct {
	Detail string `json:"detail"`
	Title  string `json:"title"`
	Code   int    `json:"code"`
	status int
}

func (e *Error) Error() string { return e.Title + ": " + e.Detail }

func notFound(what string) *Error {
	return &Error{Code: 10010, Title: "CF-ResourceNotFound", Detail: what + " not found", status: http.StatusNotFound}
}

func unprocessable(format string, args ...any) *Error {
	return &Error{Code: 10008, Title: "CF-UnprocessableEntity", Detail: fmt.Sprintf(format, args...), status: http.StatusUnprocessableEntity}
}

func badRequest(format string, args ...any) *Error {
	return &Error{Code: 1001, Title: "CF-MessageParseError", Detail: fmt.Sprintf(format, args...), status: http.StatusBadRequest}
}

func badQuery(format string, args ...any) *Error {
	return &Error{Code: 10005, Title: "CF-BadQueryParameter", Detail: fmt.Sprintf(format, args...), status: http.StatusBadRequest}
}

var (
	errNotAuthenticated = &Error{Code: 10002, Title: "CF-NotAuthenticated", Detail: "Authentication error", status: http.StatusUnauthorized}
	errInvalidToken     = &Error{Code: 1000, Title: "CF-InvalidAuthToken", Detail: "Invalid Auth Token", status: http.StatusUnauthorized}
	errNotAuthorized    = &Error{Code: 10003, Title: "CF-NotAuthorized", Detail: "You are not authorized to perform the requested action", status: http.StatusForbidden}
	errUnknownRequest   = &Error{Code: 10000, Title: "CF-NotFound", Detail: "Unknown request", status: http.StatusNotFound}
)

// call is one request being served.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	user *claims // the caller's token
}

type handlerFunc func(c *call) error

// handle registers an authenticated v3 endpoint for the admin.
func (s *Server) handle(pattern string, h handlerFunc) { s.handleFor(pattern, h, false) }

// handleMember registers an endpoint users other than the admin may call too: h shows
// them only what their roles let them see (users.go).
func (s *Server) handleMember(pattern string, h handlerFunc) { s.handleFor(pattern, h, true) }

func (s *Server) handleFor(pattern string, h handlerFunc, members bool) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r}
		user, err := s.authenticate(r)
		if err == nil && !members && !user.admin() {
			err = errNotAuthorized
		}
		if err == nil {
			c.user = user
			err = h(c)
		}
		if err != nil {
			c.fail(err)
		}
	})
}

func (c *call) fail(err error) {
	var e *Error
	if !errors.As(err, &e) {
		c.s.cfg.Logger.Error("request failed", "method", c.r.Method, "path", c.r.URL.Path, "err", err)
		e = &Error{Code: 10001, Title: "CF-ServerError", Detail: "An unknown error occurred.", status: http.StatusInternalServerError}
	}
	c.json(e.status, map[string]any{"errors": []*Error{e}})
}

func (c *call) json(status int, v any) error {
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(status)
	enc := json.NewEncoder(c.w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// change applies f to the state and, once the state is saved, answers with status and
// what f returned.
func (c *call) change(status int, f func(st *State) (any, error)) error {
	var resp any
	err := c.s.st.update(func(st *State) error {
		var err error
		resp, err = f(st)
		return err
	})
	if err != nil {
		return err
	}
	return c.json(status, resp)
}

// decode reads a JSON body strictly enough to reject garbage with a CC error.
func (c *call) decode(v any) error {
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 1<<20))
	if err != nil {
		return badRequest("Request invalid due to parse error: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("Request invalid due to parse error: invalid request body")
	}
	return nil
}

// job records a finished job and answers 202 with its absolute Location, as CC does for
// asynchronous operations. err, when set, makes the job FAILED with it.
func (c *call) job(operation string, err error) error {
	j := &Job{GUID: newGUID(), Operation: operation, State: "COMPLETE", Created: time.Now().UTC()}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: 10001, Title: "CF-ServerError", Detail: err.Error()}
		}
		j.State, j.Error = "FAILED", e
	}
	if uerr := c.s.st.update(func(s *State) error { s.Jobs[j.GUID] = j; return nil }); uerr != nil {
		return uerr
	}
	c.w.Header().Set("Location", c.s.url("/v3/jobs/"+j.GUID))
	c.w.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Server) url(path string) string { return s.baseURL + path }

func link(s *Server, path string) map[string]any { return map[string]any{"href": s.url(path)} }

// v2 answers the CC v2 API, which this foundation does not serve (the root document
// says so: cloud_controller_v2 is null), as CC answers any request: authentication
// first, then an unknown request, in v2's error shape ({description, error_code,
// code}), which `cf curl /v2/...` prints.
func (s *Server) v2(w http.ResponseWriter, r *http.Request) {
	_, e := s.authenticate(r)
	if e == nil {
		e = errUnknownRequest
	}
	var ce *Error
	if !errors.As(e, &ce) {
		ce = errInvalidToken
	}
	c := &call{s: s, w: w, r: r}
	c.json(ce.status, map[string]any{"description": ce.Detail, "error_code": ce.Title, "code": ce.Code})
}

func (s *Server) getJob(c *call) error {
	var j *Job
	s.st.read(func(st *State) { j = st.Jobs[c.r.PathValue("guid")] })
	if j == nil {
		return notFound("Job")
	}
	return c.json(http.StatusOK, s.renderJob(j))
}

func (s *Server) emptyList(c *call) error {
	q, err := c.query()
	if err != nil {
		return err
	}
	return paginate(c, q, []any{}, func(any) string { return "" }, func(any) time.Time { return time.Time{} }, func(v any) any { return v }, nil)
}

// toOneBody is a to-one relationship request: {"data": {"guid": "…"}} or {"data": null}.
type toOneBody struct {
	Data *struct {
		GUID *string `json:"guid"`
	} `json:"data"`
}

func relData(guid string) any {
	if guid == "" {
		return nil
	}
	return obj{"guid": guid}
}

// routes registers every endpoint: each resource's file registers its own. Patterns use the method and wildcards of
// net/http's ServeMux; anything else gets CC's "Unknown request".
func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/", s.root)
	s.mux.HandleFunc("POST /oauth/token", s.tokens)
	s.mux.HandleFunc("GET /login", s.loginInfo)
	s.mux.HandleFunc("GET /info", s.loginInfo)
	s.mux.HandleFunc("GET /v3", func(w http.ResponseWriter, r *http.Request) { s.v3root(&call{s: s, w: w, r: r}) })
	s.handle("/v3/", func(c *call) error { return errUnknownRequest })
	s.mux.HandleFunc("/v2/", s.v2)

	s.handle("GET /v3/jobs/{guid}", s.getJob)
	s.orgRoutes()
	s.domainRoutes()
	s.segmentRoutes()
	s.spaceRoutes()
	s.manifestRoutes()
	s.appRoutes()
	s.appFeatureRoutes()
	s.envRoutes()
	s.processRoutes()
	s.instanceRoutes()
	s.routesRoutes()
	s.dropletRoutes()
	s.packageRoutes()
	s.resourceMatchRoutes()
	s.manifestDiffRoutes()
	s.buildRoutes()
	s.auditEventRoutes()
	s.serviceRoutes()
	s.landscapeRoutes()
	s.metadataRoutes()
	s.envGroupRoutes()
	s.userProvidedRoutes()
	s.roleRoutes()
	s.featureFlagRoutes()
	s.deploymentRoutes()
	s.quotaRoutes()
	s.chaosRoutes()
}
