package cc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// fakeRuntime stands in for staging and cells in the API's own tests: it stages
// anything instantly and reports every desired instance RUNNING. The foundation's
// integration tests run the real ones.
type fakeRuntime struct {
	mu         sync.Mutex
	specs      map[string]RunSpec
	runs       int
	holdRolls  bool
	rolls      []fakeRoll
	stageEnv   map[string]string // of the last Stage
	terminated []string          // "process/index" of each Terminate (instances_test.go)
}

func (f *fakeRuntime) Stage(_ context.Context, req StageRequest) (StageResult, error) {
	f.mu.Lock()
	f.stageEnv = req.Env
	f.mu.Unlock()
	if slices.Contains(req.Buildpacks, "php_buildpack") {
		return StageResult{}, errUnsupportedForTest
	}
	if slices.Contains(req.Buildpacks, "undetected_for_test") {
		return StageResult{}, fmt.Errorf("%w: no lifecycle fits", ErrNoAppDetected)
	}
	if req.Log != nil {
		io.WriteString(req.Log, "-----> fake staging\n")
	}
	res := StageResult{Buildpack: "binary_buildpack", BuildpackVersion: "1.2.3", StartCommand: "./run"}
	if slices.Contains(req.Buildpacks, "procfile_for_test") {
		res.ProcessTypes = map[string]string{"console": "./console"}
	}
	return res, nil
}

var errUnsupportedForTest = &Error{Detail: "php is not supported"}

func (f *fakeRuntime) Run(spec RunSpec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs[spec.ProcessGUID] = spec
	f.runs++
}

// Roll runs spec at once and reports the roll done, unless holdRolls is set: then the
// test ends it through rolls.
func (f *fakeRuntime) Roll(spec RunSpec, maxInFlight, from, to int, done func(error)) {
	f.Run(spec)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rolls = append(f.rolls, fakeRoll{spec, maxInFlight, from, to, done})
	if !f.holdRolls {
		go done(nil)
	}
}

type fakeRoll struct {
	spec        RunSpec
	maxInFlight int
	from, to    int // the indexes rolled
	done        func(error)
}

func (f *fakeRuntime) Stop(guid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.specs, guid)
}

func (f *fakeRuntime) Instances(guid string) []Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Instance
	for i := 0; i < f.specs[guid].Instances; i++ {
		out = append(out, Instance{Index: i, GUID: newGUID(), State: "RUNNING", Host: "127.0.0.1", Port: 61000 + i,
			Uptime: 3 * time.Second, CPU: 0.25, MemBytes: 10 << 20, DiskBytes: 1 << 20})
	}
	return out
}

type fakeBroker struct{}

func (fakeBroker) Catalog() []Offering {
	return []Offering{{Name: "postgres", Description: "PostgreSQL databases", Tags: []string{"postgres", "postgresql"},
		Plans: []Plan{{Name: "small", Description: "one database"}}}}
}
func (fakeBroker) Provision(context.Context, string, string) error { return nil }
func (fakeBroker) Deprovision(context.Context, string) error       { return nil }
func (fakeBroker) Bind(_ context.Context, inst, _ string) (map[string]any, error) {
	return map[string]any{"uri": "postgres://u:p@127.0.0.1:5432/" + inst[:8]}, nil
}
func (fakeBroker) Unbind(context.Context, string, string) error { return nil }

type env struct {
	t     *testing.T
	srv   *Server
	http  *httptest.Server
	rt    *fakeRuntime
	token string
	dir   string
}

func newEnv(t *testing.T, dir string) *env {
	t.Helper()
	rt := &fakeRuntime{specs: map[string]RunSpec{}}
	srv, err := New(Config{DataDir: dir, Runtime: rt, Broker: fakeBroker{}, User: "admin", Password: "pw", Secret: []byte("secret"),
		Segments: []string{"apps-cell", "loadgen-cell"}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	srv.SetBaseURL(hs.URL)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	e := &env{t: t, srv: srv, http: hs, rt: rt, dir: dir}
	e.token = e.login("admin", "pw")
	return e
}

func (e *env) login(user, pw string) string {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+"/oauth/token", strings.NewReader(url.Values{"grant_type": {"password"}, "username": {user}, "password": {pw}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cf", "")
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	return tok.AccessToken
}

// do sends a request and decodes the JSON answer into a generic value.
func (e *env) do(method, path string, body any) (int, map[string]any, http.Header) {
	e.t.Helper()
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		r, ctype = strings.NewReader(b), "application/x-yaml"
	case *bytes.Buffer:
		r = b
	default:
		buf, _ := json.Marshal(b)
		r = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, e.http.URL+path, r)
	req.Header.Set("Content-Type", ctype)
	if e.token != "" {
		req.Header.Set("Authorization", "bearer "+e.token)
	}
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatalf("%s %s: answer is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, out, resp.Header
}

func (e *env) must(want int, method, path string, body any) map[string]any {
	e.t.Helper()
	code, out, _ := e.do(method, path, body)
	if code != want {
		e.t.Fatalf("%s %s = %d %v, want %d", method, path, code, out, want)
	}
	return out
}

func get(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func first(list map[string]any) map[string]any {
	r, _ := list["resources"].([]any)
	if len(r) == 0 {
		return nil
	}
	return r[0].(map[string]any)
}

// zipUpload is a multipart body with a (tiny) zip in the field "bits".
func zipUpload(t *testing.T) (*bytes.Buffer, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("bits", "package.zip")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("PK\x05\x06" + strings.Repeat("\x00", 18))) // an empty zip
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func (e *env) upload(path string, body *bytes.Buffer, ctype string) map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+path, body)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "bearer "+e.token)
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("upload: %d %v", resp.StatusCode, out)
	}
	return out
}

func (e *env) space(name string) string {
	e.t.Helper()
	return first(e.must(200, "GET", "/v3/spaces?names="+name, nil))["guid"].(string)
}

// push does what go-cfclient's push operation does: apply the manifest, upload a
// package, stage it, set the droplet and start the app. It returns the app guid.
func (e *env) push(space, manifest string) string {
	e.t.Helper()
	_, _, h := e.do("POST", "/v3/spaces/"+space+"/actions/apply_manifest", manifest)
	job := h.Get("Location")
	if !strings.HasPrefix(job, e.http.URL+"/v3/jobs/") {
		e.t.Fatalf("apply_manifest Location %q: want an absolute job URL", job)
	}
	if st := e.must(200, "GET", strings.TrimPrefix(job, e.http.URL), nil)["state"]; st != "COMPLETE" {
		e.t.Fatalf("apply_manifest job %v", st)
	}
	name := strings.TrimSpace(strings.SplitN(strings.SplitN(manifest, "name:", 2)[1], "\n", 2)[0])
	app := first(e.must(200, "GET", "/v3/apps?names="+name+"&space_guids="+space, nil))["guid"].(string)
	pkg := e.must(201, "POST", "/v3/packages", map[string]any{"type": "bits", "relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}})["guid"].(string)
	body, ctype := zipUpload(e.t)
	if st := e.upload("/v3/packages/"+pkg+"/upload", body, ctype)["state"]; st != "READY" {
		e.t.Fatalf("package state %v after upload", st)
	}
	build := e.must(201, "POST", "/v3/builds", map[string]any{"package": map[string]any{"guid": pkg}})["guid"].(string)
	var droplet string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b := e.must(200, "GET", "/v3/builds/"+build, nil)
		if b["state"] == "STAGED" {
			droplet = get(b, "droplet", "guid").(string)
			break
		}
		if b["state"] == "FAILED" || time.Now().After(deadline) {
			e.t.Fatalf("build %v", b)
		}
	}
	// The buildpack as CF lists a system buildpack's, which cf app shows: name, version,
	// detect output, buildpack name.
	bps := e.must(200, "GET", "/v3/droplets/"+droplet, nil)["buildpacks"]
	if want := []any{map[string]any{"name": "binary_buildpack", "version": "1.2.3", "detect_output": "binary", "buildpack_name": "binary"}}; !reflect.DeepEqual(bps, want) {
		e.t.Errorf("droplet buildpacks %v, want %v", bps, want)
	}
	staged := e.must(200, "GET", "/v3/packages/"+pkg+"/droplets?states=STAGED", nil)
	if get(staged, "pagination", "total_results") != float64(1) {
		e.t.Fatalf("package droplets %v", staged)
	}
	e.must(200, "PATCH", "/v3/apps/"+app+"/relationships/current_droplet", map[string]any{"data": map[string]any{"guid": droplet}})
	if st := e.must(200, "POST", "/v3/apps/"+app+"/actions/start", nil)["state"]; st != "STARTED" {
		e.t.Fatalf("start: state %v", st)
	}
	return app
}

const webManifest = `applications:
- name: web
  instances: 2
  memory: 256M
  disk_quota: 512M
  command: ./web
  health-check-type: http
  health-check-http-endpoint: /healthz
  env: {POOL: 30, MODE: fast}
  routes:
  - route: web.apps.localhost
  services: [db]
`

// A droplet's process types besides web (a Procfile's) become processes of the app
// when it is set, with no instances, running their command when scaled.
func TestDropletProcessTypes(t *testing.T) {
	e := newEnv(t, t.TempDir())
	app := e.push(e.space("apps"), "applications:\n- name: procs\n  buildpacks: [procfile_for_test]\n")
	droplet := get(e.must(200, "GET", "/v3/apps/"+app+"/droplets/current", nil), "guid").(string)
	if pt := e.must(200, "GET", "/v3/droplets/"+droplet, nil)["process_types"]; !reflect.DeepEqual(pt, map[string]any{"web": "./run", "console": "./console"}) {
		t.Errorf("droplet process types %v", pt)
	}
	c := e.must(200, "GET", "/v3/apps/"+app+"/processes/console", nil)
	if c["instances"] != float64(0) || c["command"] != "./console" || get(c, "health_check", "type") != "process" {
		t.Fatalf("console process %v, want 0 instances of ./console with a process health check", c)
	}
	e.must(202, "POST", "/v3/processes/"+c["guid"].(string)+"/actions/scale", map[string]any{"instances": 2})
	if spec := e.rt.specs[c["guid"].(string)]; spec.Instances != 2 || spec.Command != "./console" {
		t.Errorf("runtime got %+v, want 2 instances of ./console", spec)
	}
}

func TestPushScaleStatsAndDelete(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	// The manifest binds db: it must exist first.
	plan := first(e.must(200, "GET", "/v3/service_plans?names=small&service_offering_names=postgres", nil))["guid"].(string)
	_, _, h := e.do("POST", "/v3/service_instances", map[string]any{"type": "managed", "name": "db",
		"relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}, "service_plan": map[string]any{"data": map[string]any{"guid": plan}}}})
	if !strings.Contains(h.Get("Location"), "/v3/jobs/") {
		t.Fatalf("create service instance: no job Location")
	}
	app := e.push(space, webManifest)

	spec := e.rt.specs[app]
	if spec.Instances != 2 || spec.MemoryMB != 256 || spec.DiskMB != 512 || spec.Command != "./web" || spec.HealthCheck != "http" ||
		spec.HealthPath != "/healthz" || spec.Env["POOL"] != "30" || spec.IsolationSegment != "" {
		t.Fatalf("runtime got %+v", spec)
	}
	var vcap map[string][]map[string]any
	if err := json.Unmarshal([]byte(spec.Env["VCAP_SERVICES"]), &vcap); err != nil || len(vcap["postgres"]) != 1 ||
		vcap["postgres"][0]["name"] != "db" || get(vcap["postgres"][0], "credentials", "uri") == nil {
		t.Fatalf("VCAP_SERVICES %s", spec.Env["VCAP_SERVICES"])
	}
	if app, _, ok := e.srv.Lookup("WEB.apps.localhost", "/"); !ok || app != spec.AppGUID {
		t.Fatalf("Lookup = %q, %v", app, ok)
	}

	stats := e.must(200, "GET", "/v3/processes/"+app+"/stats", nil)["resources"].([]any)
	if len(stats) != 2 || get(stats[1], "state") != "RUNNING" || get(stats[1], "index") != float64(1) || get(stats[0], "mem_quota") != float64(256<<20) {
		t.Fatalf("stats %v", stats)
	}
	scaled := e.must(202, "POST", "/v3/apps/"+app+"/processes/web/actions/scale", map[string]any{"instances": 5})
	if scaled["instances"] != float64(5) || e.rt.specs[app].Instances != 5 || e.rt.specs[app].Env["POOL"] != "30" {
		t.Fatalf("scale: %v, runtime %+v", scaled["instances"], e.rt.specs[app])
	}
	if n := len(e.must(200, "GET", "/v3/apps/"+app+"/processes/web/stats", nil)["resources"].([]any)); n != 5 {
		t.Fatalf("%d stats entries after scaling to 5", n)
	}
	e.must(200, "POST", "/v3/apps/"+app+"/actions/stop", nil)
	stats = e.must(200, "GET", "/v3/processes/"+app+"/stats", nil)["resources"].([]any)
	if len(stats) != 5 || get(stats[0], "state") != "DOWN" || get(stats[0], "usage") != nil {
		t.Fatalf("stats of a stopped app %v", stats[0])
	}
	if _, running := e.rt.specs[app]; running {
		t.Fatal("a stopped app still runs")
	}
	envs := e.must(200, "GET", "/v3/apps/"+app+"/env", nil)
	if get(envs, "environment_variables", "MODE") != "fast" || get(envs, "system_env_json", "VCAP_SERVICES", "postgres") == nil {
		t.Fatalf("env %v", envs)
	}

	_, _, h = e.do("DELETE", "/v3/apps/"+app, nil)
	if !strings.HasPrefix(h.Get("Location"), e.http.URL+"/v3/jobs/") {
		t.Fatalf("delete: Location %q", h.Get("Location"))
	}
	errs := e.must(404, "GET", "/v3/apps/"+app, nil)["errors"].([]any)
	if get(errs[0], "detail") != "App not found" || get(errs[0], "title") != "CF-ResourceNotFound" || get(errs[0], "code") != float64(10010) {
		t.Fatalf("errors %v", errs)
	}
}

func TestStateSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir)
	app := e.push(e.space("apps"), "applications:\n- name: keep\n  instances: 3\n  no-route: true\n")
	e.srv.Close()

	again := newEnv(t, dir)
	again.srv.Reconcile()
	if spec := again.rt.specs[app]; spec.Instances != 3 || spec.AppName != "keep" {
		t.Fatalf("after a restart the runtime runs %+v", spec)
	}
	if n := len(again.must(200, "GET", "/v3/spaces?names=apps", nil)["resources"].([]any)); n != 1 {
		t.Fatalf("%d spaces named apps after a restart: seeding must not duplicate", n)
	}
}

func TestErrorsAreCCShaped(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	cases := []struct {
		name, method, path string
		body               any
		token              string
		status             int
		title, detail      string
	}{
		{"no token", "GET", "/v3/apps", nil, "-", 401, "CF-NotAuthenticated", "Authentication error"},
		{"bad token", "GET", "/v3/apps", nil, "abc.def.ghi", 401, "CF-InvalidAuthToken", "Invalid Auth Token"},
		{"unknown app", "GET", "/v3/apps/nope", nil, "", 404, "CF-ResourceNotFound", "App not found"},
		{"unknown path", "GET", "/v3/frobnicate", nil, "", 404, "CF-NotFound", "Unknown request"},
		{"bad page", "GET", "/v3/apps?per_page=0", nil, "", 400, "CF-BadQueryParameter", "The query parameter is invalid: Per page must be between 1 and 5000"},
		{"bad order", "GET", "/v3/apps?order_by=size", nil, "", 400, "CF-BadQueryParameter", "Order by can only be: 'created_at', 'updated_at', 'name'"},
		{"manifest yaml", "POST", "/v3/spaces/" + space + "/actions/apply_manifest", "applications: [", "", 400, "CF-MessageParseError", ""},
		{"manifest memory", "POST", "/v3/spaces/" + space + "/actions/apply_manifest", "applications:\n- name: x\n  memory: lots\n", "", 422, "CF-UnprocessableEntity",
			"For application 'x': Memory must use a supported unit: B, K, KB, M, MB, G, GB, T, or TB (got \"lots\")"},
		{"manifest route", "POST", "/v3/spaces/" + space + "/actions/apply_manifest", "applications:\n- name: x\n  routes: [{route: x.example.com}]\n", "", 422, "CF-UnprocessableEntity",
			"For application 'x': The route 'x.example.com' did not match any existing domains."},
		{"manifest service", "POST", "/v3/spaces/" + space + "/actions/apply_manifest", "applications:\n- name: x\n  services: [nope]\n", "", 422, "CF-UnprocessableEntity",
			"For application 'x': Service instance 'nope' not found"},
		{"start without droplet", "POST", "/v3/apps/APP/actions/start", nil, "", 422, "CF-UnprocessableEntity", "Assign a droplet before starting this app."},
		{"current droplet", "GET", "/v3/apps/APP/droplets/current", nil, "", 404, "CF-ResourceNotFound", "Droplet not found"},
		{"scale negative", "POST", "/v3/processes/APP/actions/scale", map[string]any{"instances": -1}, "", 422, "CF-UnprocessableEntity", "Instances must be greater than or equal to 0 and at most 1000"},
		{"bad json", "POST", "/v3/apps", &bytes.Buffer{}, "", 422, "CF-UnprocessableEntity", "Name can't be blank"},
	}
	app := e.must(201, "POST", "/v3/apps", map[string]any{"name": "bare", "relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}})["guid"].(string)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			saved := e.token
			defer func() { e.token = saved }()
			switch c.token {
			case "-":
				e.token = ""
			case "":
			default:
				e.token = c.token
			}
			path := strings.ReplaceAll(c.path, "APP", app)
			code, out, _ := e.do(c.method, path, c.body)
			errs, _ := out["errors"].([]any)
			if code != c.status || len(errs) != 1 || get(errs[0], "title") != c.title || (c.detail != "" && get(errs[0], "detail") != c.detail) {
				t.Fatalf("%s %s = %d %v; want %d %s %q", c.method, path, code, out, c.status, c.title, c.detail)
			}
			if _, ok := get(errs[0], "code").(float64); !ok {
				t.Fatalf("error without a numeric code: %v", errs[0])
			}
		})
	}
}

// A manifest's services: binds a user-provided instance with its own credentials, as
// cf bind-service does, not with credentials a broker would make up.
func TestManifestBindsAUserProvidedInstanceWithItsCredentials(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	e.must(201, "POST", "/v3/service_instances", map[string]any{"type": "user-provided", "name": "db",
		"credentials":   map[string]any{"uri": "postgres://u:p@127.0.0.1:5433/results"},
		"relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}})
	app := e.push(space, webManifest)
	var vcap map[string][]map[string]any
	if err := json.Unmarshal([]byte(e.rt.specs[app].Env["VCAP_SERVICES"]), &vcap); err != nil || len(vcap["user-provided"]) != 1 {
		t.Fatalf("VCAP_SERVICES %s: %v", e.rt.specs[app].Env["VCAP_SERVICES"], err)
	}
	if uri := get(vcap["user-provided"][0], "credentials", "uri"); uri != "postgres://u:p@127.0.0.1:5433/results" {
		t.Errorf("the manifest's binding carries uri %v, want the user-provided instance's", uri)
	}
}
