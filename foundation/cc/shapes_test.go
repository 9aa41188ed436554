package cc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// Golden shape tests: every endpoint's JSON against the shape the CC v3 docs define.
//
// The shapes live in testdata/shapes/*.txt, one fact per line:
//
//	path<TAB>type
//
// where path names a field with dots (links.self.href) and [] for the elements of an
// array (resources[].guid, tags[]), and type is one of string, integer (a JSON number
// without fraction or exponent), number, boolean, object, array, timestamp (an RFC 3339
// string), uuid (8-4-4-4-12 hex), optionally joined with | (object|null); null is
// allowed only when the type lists it. Lines starting with # are comments: each file
// names the docs it was written from and says why a documented field is left out.
//
// The files are written by hand from the docs (cloud_controller_ng
// docs/v3/source/includes), never generated from this server's answers: there is no
// -update flag on purpose. A failing line means the server or the shape file disagrees
// with the docs; fix whichever is wrong.
//
// Every line must hold for every value it reaches; a line under a null parent that the
// file declares nullable is skipped there, and an empty array has no elements to check.
// So that no line passes for want of values, every line of every file must be checked
// against at least one value over the whole test.

// shapeLine is one fact of a shape file.
type shapeLine struct {
	path  string
	kinds []string // without "null"
	null  bool
	line  int
}

// shape is a parsed shape file.
type shape struct {
	file    string
	lines   []shapeLine
	byPath  map[string]shapeLine
	checked map[string]int // path → number of values checked
}

var shapeKinds = []string{"string", "integer", "number", "boolean", "object", "array", "timestamp", "uuid"}

func loadShape(t *testing.T, name string) *shape {
	t.Helper()
	file := filepath.Join("testdata", "shapes", name+".txt")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sh, err := parseShape(file, f)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func parseShape(file string, r io.Reader) (*shape, error) {
	sh := &shape{file: file, byPath: map[string]shapeLine{}, checked: map[string]int{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want path<TAB>type, got %q", file, n, text)
		}
		l := shapeLine{path: fields[0], line: n}
		for _, seg := range strings.Split(l.path, ".") {
			name := strings.TrimSuffix(seg, "[]")
			if name == "" || strings.ContainsAny(name, "[] ") {
				return nil, fmt.Errorf("%s:%d: bad path %q", file, n, l.path)
			}
		}
		for _, k := range strings.Split(fields[1], "|") {
			switch {
			case k == "null" && !l.null:
				l.null = true
			case slices.Contains(shapeKinds, k) && !slices.Contains(l.kinds, k):
				l.kinds = append(l.kinds, k)
			default:
				return nil, fmt.Errorf("%s:%d: bad type %q (want %s, optionally |null)", file, n, fields[1], strings.Join(shapeKinds, ", "))
			}
		}
		if len(l.kinds) == 0 {
			return nil, fmt.Errorf("%s:%d: %s: a type besides null is needed", file, n, l.path)
		}
		if _, dup := sh.byPath[l.path]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", file, n, l.path)
		}
		sh.lines = append(sh.lines, l)
		sh.byPath[l.path] = l
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(sh.lines) == 0 {
		return nil, fmt.Errorf("%s: no shape lines", file)
	}
	return sh, nil
}

// check checks every line of sh against the document v, found at concrete position
// at ("" for an answer's root; used in messages). It returns one problem per failing
// value.
func (sh *shape) check(v any, at string) []string {
	var problems []string
	for _, l := range sh.lines {
		problems = append(problems, sh.walk(l, v, strings.Split(l.path, "."), "", at)...)
	}
	return problems
}

// walk follows segs from v (found at shape path pat, concrete path at) to the values
// that line l describes.
func (sh *shape) walk(l shapeLine, v any, segs []string, pat, at string) []string {
	if len(segs) == 0 {
		sh.checked[l.path]++
		if p := l.verify(v); p != "" {
			return []string{fmt.Sprintf("%s: %s (%s:%d)", at, p, sh.file, l.line)}
		}
		return nil
	}
	key, elems := strings.CutSuffix(segs[0], "[]")
	m, ok := v.(map[string]any)
	if !ok {
		if v == nil && sh.byPath[pat].null {
			return nil // a nullable null: nothing below it to check
		}
		sh.checked[l.path]++
		if _, listed := sh.byPath[pat]; listed {
			return nil // reported by the line of v
		}
		return []string{fmt.Sprintf("%s: want an object with %q, got %s (%s:%d)", orRoot(at), key, describeJSON(v), sh.file, l.line)}
	}
	pat, at = joinPath(pat, key), joinPath(at, key)
	child, present := m[key]
	if !present {
		sh.checked[l.path]++
		if len(segs) == 1 && !elems {
			return []string{fmt.Sprintf("%s: missing (%s:%d)", at, sh.file, l.line)}
		}
		if _, listed := sh.byPath[pat]; listed {
			return nil // reported by the line of the missing parent
		}
		below := at
		if elems {
			below += "[]"
		}
		if len(segs) > 1 {
			below += "." + strings.Join(segs[1:], ".")
		}
		return []string{fmt.Sprintf("%s: missing, as %s is missing (%s:%d)", below, at, sh.file, l.line)}
	}
	if !elems {
		return sh.walk(l, child, segs[1:], pat, at)
	}
	list, ok := child.([]any)
	if !ok {
		if child == nil && sh.byPath[pat].null {
			return nil
		}
		sh.checked[l.path]++
		if _, listed := sh.byPath[pat]; listed {
			return nil
		}
		return []string{fmt.Sprintf("%s: want an array, got %s (%s:%d)", at, describeJSON(child), sh.file, l.line)}
	}
	var problems []string
	for i, el := range list {
		problems = append(problems, sh.walk(l, el, segs[1:], pat+"[]", fmt.Sprintf("%s[%d]", at, i))...)
	}
	return problems
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func orRoot(at string) string {
	if at == "" {
		return "(document)"
	}
	return at
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// verify returns what is wrong with v for l ("" if nothing).
func (l shapeLine) verify(v any) string {
	want := strings.Join(l.kinds, "|")
	if l.null {
		want += "|null"
	}
	if v == nil {
		if l.null {
			return ""
		}
		return "is null, want " + want
	}
	for _, k := range l.kinds {
		if isKind(v, k) {
			return ""
		}
	}
	return fmt.Sprintf("want %s, got %s", want, describeJSON(v))
}

func isKind(v any, kind string) bool {
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && !strings.ContainsAny(string(n), ".eE")
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "timestamp":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	case "uuid":
		s, ok := v.(string)
		return ok && uuidRE.MatchString(s)
	}
	return false
}

// describeJSON names a JSON value's type and shows it, shortened.
func describeJSON(v any) string {
	var kind string
	switch v.(type) {
	case nil:
		return "null"
	case string:
		kind = "string"
	case json.Number:
		kind = "number"
	case bool:
		kind = "boolean"
	case map[string]any:
		kind = "object"
	case []any:
		kind = "array"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return kind + " " + s
}

// rawJSON sends a request and decodes the answer with numbers kept as written, so that
// integers and fractions can be told apart.
func (e *env) rawJSON(method, path string, body any, auth bool) (int, any) {
	e.t.Helper()
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case string: // a manifest
		r, ctype = strings.NewReader(b), "application/x-yaml"
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.http.URL+path, r)
	req.Header.Set("Content-Type", ctype)
	if auth {
		req.Header.Set("Authorization", "bearer "+e.token)
	}
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil || dec.More() {
		e.t.Fatalf("%s %s = %d: answer is not one JSON document: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// shapesManifest pushes an app that exercises every documented field: an explicit
// buildpack, an http health check with a timeout, a route and a named binding.
const shapesManifest = `applications:
- name: shapes
  instances: 2
  memory: 256M
  command: ./web
  buildpacks: [binary_buildpack]
  health-check-type: http
  health-check-http-endpoint: /healthz
  timeout: 60
  routes:
  - route: shapes.apps.localhost
  services:
  - name: db
    binding_name: db-binding
`

func TestResponsesMatchDocumentedShapes(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	plan := first(e.must(200, "GET", "/v3/service_plans?names=small&service_offering_names=postgres", nil))["guid"].(string)
	_, _, h := e.do("POST", "/v3/service_instances", map[string]any{"type": "managed", "name": "db", "tags": []string{"sql"},
		"relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}, "service_plan": map[string]any{"data": map[string]any{"guid": plan}}}})
	job := path.Base(h.Get("Location"))
	ups := e.must(201, "POST", "/v3/service_instances", map[string]any{"type": "user-provided", "name": "drain", "tags": []string{"logs"},
		"syslog_drain_url": "https://u:p@drain.example.com/", "credentials": map[string]any{"user": "u"},
		"relationships": map[string]any{"space": map[string]any{"data": map[string]any{"guid": space}}}})["guid"].(string)
	app := e.push(space, shapesManifest)
	pkg := first(e.must(200, "GET", "/v3/packages?app_guids="+app, nil))["guid"].(string)
	// A file big enough for the resource pool, for resource_matches to match.
	big := strings.Repeat("shapes", poolMinBytes)
	bits, ctype := multipartUpload(t, appZip(t, map[string]string{"big.bin": big}), nil)
	e.upload("/v3/packages/"+e.newPackage(app)+"/upload", bits, ctype)
	// push's build is not listed anywhere: stage the package once more for a build guid.
	build := e.must(201, "POST", "/v3/builds", map[string]any{"package": map[string]any{"guid": pkg}})["guid"].(string)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := e.must(200, "GET", "/v3/builds/"+build, nil)["state"]
		if st == BuildStaged {
			break
		}
		if st == BuildFailed || time.Now().After(deadline) {
			t.Fatalf("build state %v", st)
		}
	}
	// A space quota applied to the apps space, as cf create-space-quota and
	// cf set-space-quota make one.
	sq := e.must(201, "POST", "/v3/space_quotas", map[string]any{"name": "small", "apps": map[string]any{"total_memory_in_mb": 10240, "total_instances": 10},
		"relationships": map[string]any{"organization": map[string]any{"data": map[string]any{"guid": first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"]}}}})["guid"].(string)
	e.must(200, "POST", "/v3/space_quotas/"+sq+"/relationships/spaces", map[string]any{"data": []any{map[string]any{"guid": space}}})
	guids := map[string]string{
		"{space_quota}": sq,
		"{org_quota}":   get(first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil)), "relationships", "quota", "data", "guid").(string),
		"{org}":         first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"].(string),
		"{space}":       space,
		"{segment}":     first(e.must(200, "GET", "/v3/isolation_segments?names=apps-cell", nil))["guid"].(string),
		"{app}":         app,
		"{process}":     first(e.must(200, "GET", "/v3/apps/"+app+"/processes?types=web", nil))["guid"].(string),
		"{package}":     pkg,
		"{build}":       build,
		"{droplet}":     get(e.must(200, "GET", "/v3/apps/"+app+"/relationships/current_droplet", nil), "data", "guid").(string),
		"{instance}":    first(e.must(200, "GET", "/v3/service_instances?names=db", nil))["guid"].(string),
		"{binding}":     first(e.must(200, "GET", "/v3/service_credential_bindings?app_guids="+app, nil))["guid"].(string),
		"{job}":         job,
		"{quota}": e.must(201, "POST", "/v3/organization_quotas", map[string]any{"name": "q", "apps": map[string]any{"total_memory_in_mb": 1024},
			"relationships": map[string]any{"organizations": map[string]any{"data": []any{map[string]any{"guid": e.must(201, "POST", "/v3/organizations", map[string]any{"name": "quota-org"})["guid"]}}}}})["guid"].(string),
		"{ups}":      ups,
		"{plan}":     plan,
		"{offering}": first(e.must(200, "GET", "/v3/service_offerings?names=postgres", nil))["guid"].(string),
	}
	var pairs []string
	for k, v := range guids {
		if v == "" || v == "." || v == "/" {
			t.Fatalf("fixture: no guid for %s", k)
		}
		pairs = append(pairs, k, v)
	}
	expand := strings.NewReplacer(pairs...).Replace

	// Single resources are checked against shape; lists against pagination.txt and
	// each resource against shape (empty: only an empty list is expected).
	cases := []struct {
		method, path string
		body         any
		noAuth       bool
		status       int
		shape        string
		list         bool
	}{
		{method: "GET", path: "/v3/organizations/{org}", shape: "organization"},
		{method: "GET", path: "/v3/organizations", shape: "organization", list: true},
		{method: "GET", path: "/v3/isolation_segments/{segment}/organizations", shape: "organization", list: true},
		{method: "GET", path: "/v3/spaces/{space}", shape: "space"},
		{method: "GET", path: "/v3/spaces", shape: "space", list: true},
		{method: "GET", path: "/v3/spaces?per_page=1&page=2", shape: "space", list: true}, // next and previous set
		{method: "GET", path: "/v3/isolation_segments/{segment}", shape: "isolation_segment"},
		{method: "GET", path: "/v3/isolation_segments", shape: "isolation_segment", list: true},
		{method: "PATCH", path: "/v3/isolation_segments/{segment}", body: map[string]any{"metadata": map[string]any{"labels": map[string]any{"cell": "apps"}}}, shape: "isolation_segment"},
		{method: "GET", path: "/v3/apps/{app}", shape: "app"},
		{method: "GET", path: "/v3/apps", shape: "app", list: true},
		{method: "GET", path: "/v3/apps/{app}/environment_variables", shape: "environment_variables"},
		{method: "GET", path: "/v3/apps/{app}/features", shape: "app_feature", list: true},
		{method: "GET", path: "/v3/apps/{app}/features/ssh", shape: "app_feature"},
		{method: "PATCH", path: "/v3/apps/{app}/features/ssh", body: map[string]any{"enabled": false}, shape: "app_feature"},
		{method: "PATCH", path: "/v3/apps/{app}/environment_variables", body: map[string]any{"var": map[string]any{"DEBUG": "false", "NOPE": nil}},
			shape: "environment_variables"},
		{method: "GET", path: "/v3/processes/{process}", shape: "process"},
		{method: "GET", path: "/v3/apps/{app}/processes/web", shape: "process"},
		{method: "GET", path: "/v3/processes", shape: "process", list: true},
		{method: "GET", path: "/v3/apps/{app}/processes", shape: "process", list: true},
		{method: "GET", path: "/v3/processes/{process}/stats", shape: "process_stats"},
		{method: "GET", path: "/v3/apps/{app}/processes/web/stats", shape: "process_stats"},
		{method: "GET", path: "/v3/packages/{package}", shape: "package"},
		{method: "GET", path: "/v3/packages", shape: "package", list: true},
		{method: "GET", path: "/v3/builds/{build}", shape: "build"},
		{method: "GET", path: "/v3/droplets/{droplet}", shape: "droplet"},
		{method: "GET", path: "/v3/apps/{app}/droplets/current", shape: "droplet"},
		{method: "GET", path: "/v3/packages/{package}/droplets", shape: "droplet", list: true},
		{method: "GET", path: "/v3/apps/{app}/droplets?order_by=-created_at", shape: "droplet", list: true},
		{method: "GET", path: "/v3/droplets?app_guids={app}&states=STAGED", shape: "droplet", list: true},
		{method: "GET", path: "/v3/routes", shape: "route", list: true},
		{method: "GET", path: "/v3/apps/{app}/routes", shape: "route", list: true},
		{method: "GET", path: "/v3/organizations/{org}/domains/default", shape: "domain"},
		{method: "GET", path: "/v3/domains", shape: "domain", list: true},
		{method: "GET", path: "/v3/service_offerings", shape: "service_offering", list: true},
		{method: "GET", path: "/v3/service_plans", shape: "service_plan", list: true},
		{method: "GET", path: "/v3/service_plans/{plan}", shape: "service_plan"},
		{method: "GET", path: "/v3/service_plans/{space}", status: 404, shape: "error"},
		{method: "GET", path: "/v3/service_offerings/{offering}", shape: "service_offering"},
		{method: "GET", path: "/v3/service_offerings/{space}", status: 404, shape: "error"},
		{method: "GET", path: "/v3/service_instances/{instance}", shape: "service_instance"},
		{method: "GET", path: "/v3/service_instances?type=managed", shape: "service_instance", list: true},
		{method: "GET", path: "/v3/service_instances/{ups}", shape: "user_provided_service_instance"},
		{method: "GET", path: "/v3/service_instances?type=user-provided", shape: "user_provided_service_instance", list: true},
		{method: "PATCH", path: "/v3/service_instances/{ups}", body: map[string]any{"route_service_url": "https://rs.example.com"}, shape: "user_provided_service_instance"},
		{method: "POST", path: "/v3/service_credential_bindings", body: map[string]any{"type": "app", "parameters": map[string]any{"foo": "bar"},
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}, "service_instance": map[string]any{"data": map[string]any{"guid": ups}}}},
			status: 422, shape: "error"},
		{method: "GET", path: "/v3/service_credential_bindings/{binding}", shape: "service_credential_binding"},
		{method: "GET", path: "/v3/service_credential_bindings?type=app", shape: "service_credential_binding", list: true},
		{method: "POST", path: "/v3/service_credential_bindings", body: map[string]any{"type": "key", "name": "shapes-key",
			"relationships": map[string]any{"service_instance": map[string]any{"data": map[string]any{"guid": guids["{instance}"]}}}}, status: 201, shape: "service_key"},
		{method: "GET", path: "/v3/service_credential_bindings?type=key", shape: "service_key", list: true},
		{method: "GET", path: "/v3/jobs/{job}", shape: "job"},
		{method: "GET", path: "/v3/organization_quotas", shape: "organization_quota", list: true},
		{method: "GET", path: "/v3/organization_quotas/{org_quota}", shape: "organization_quota"},
		{method: "GET", path: "/v3/space_quotas/{space_quota}", shape: "space_quota"},
		{method: "GET", path: "/v3/space_quotas?space_guids={space}", shape: "space_quota", list: true},
		{method: "PATCH", path: "/v3/space_quotas/{space_quota}", body: map[string]any{"routes": map[string]any{"total_routes": 20}}, shape: "space_quota"},
		{method: "GET", path: "/v3/spaces/{space}/features/ssh", shape: "space_feature"},
		{method: "POST", path: "/v3/security_groups", body: map[string]any{"name": "egress", "rules": []any{map[string]any{"protocol": "tcp", "destination": "10.0.0.0/8", "ports": "5432", "description": "db"}},
			"relationships": map[string]any{"running_spaces": map[string]any{"data": []any{map[string]any{"guid": space}}}}}, status: 201, shape: "security_group"},
		{method: "GET", path: "/v3/security_groups", shape: "security_group", list: true},
		{method: "PATCH", path: "/v3/spaces/{space}/features/ssh", body: map[string]any{"enabled": false}, shape: "space_feature"},
		{method: "GET", path: "/v3/organization_quotas/{quota}", shape: "organization_quota"},
		{method: "PATCH", path: "/v3/organization_quotas/{quota}", body: map[string]any{"name": "q2", "apps": map[string]any{"total_instances": 8}}, shape: "organization_quota"},
		{method: "POST", path: "/v3/organizations", body: map[string]any{"name": "shapes-org"}, status: 201, shape: "organization"},
		{method: "POST", path: "/v3/organization_quotas", body: map[string]any{"name": "shapes-quota", "routes": map[string]any{"total_routes": 5}}, status: 201, shape: "organization_quota"},
		{method: "POST", path: "/v3/organization_quotas", body: map[string]any{"name": "bad", "apps": map[string]any{"total_instances": -1}}, status: 422, shape: "error"},
		{method: "POST", path: "/v3/resource_matches", body: map[string]any{"resources": []matchResource{resourceOf("big.bin", big)}}, status: 201, shape: "resource_matches"},
		{method: "POST", path: "/v3/spaces/{space}/manifest_diff", body: "applications:\n- name: shapes\n  instances: 3\n  env: {A: b}\n", status: 201, shape: "manifest_diff"},
		{method: "GET", path: "/v3/audit_events?target_guids={app}", shape: "audit_event", list: true},
		{method: "POST", path: "/v3/roles", body: map[string]any{"type": "space_developer", "relationships": map[string]any{"user": map[string]any{"data": map[string]any{"guid": userGUID}},
			"space": map[string]any{"data": map[string]any{"guid": space}}}}, status: 201, shape: "role"},
		{method: "POST", path: "/v3/roles", body: map[string]any{"type": "organization_user", "relationships": map[string]any{"user": map[string]any{"data": map[string]any{"username": "admin"}},
			"organization": map[string]any{"data": map[string]any{"guid": guids["{org}"]}}}}, status: 201, shape: "role"},
		{method: "GET", path: "/v3/roles", shape: "role", list: true},
		{method: "POST", path: "/v3/domains", body: map[string]any{"name": "shapes.example.com"}, status: 201, shape: "domain"},
		{method: "GET", path: "/v3/feature_flags", shape: "feature_flag", list: true},
		{method: "PATCH", path: "/v3/feature_flags/diego_docker", body: map[string]any{"enabled": true, "custom_error_message": "ask the operator"}, shape: "feature_flag"},
		{method: "GET", path: "/v3/feature_flags/diego_docker", shape: "feature_flag"},
		{method: "GET", path: "/v3/feature_flags/no_such_flag", status: 404, shape: "error"},
		{method: "POST", path: "/v3/deployments", body: map[string]any{"strategy": "rolling", "options": map[string]any{"max_in_flight": 2},
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}}, status: 201, shape: "deployment"},
		{method: "GET", path: "/v3/deployments?app_guids={app}", shape: "deployment", list: true},
		{method: "GET", path: "/v3/deployments?status_values=NONE", list: true},
		{method: "POST", path: "/v3/deployments", body: map[string]any{"strategy": "canary", "options": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"instance_weight": 50}, map[string]any{"instance_weight": 20}}}},
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}}, status: 422, shape: "error"},
		{method: "POST", path: "/v3/deployments", body: map[string]any{"strategy": "canary", "options": map[string]any{"canary": map[string]any{"steps": []any{map[string]any{"instance_weight": 20}, map[string]any{"instance_weight": 80}}}},
			"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}}, status: 201, shape: "deployment_canary"},
		{method: "GET", path: "/v3/processes/{process}/sidecars", list: true},
		{method: "PATCH", path: "/v3/organizations/{org}", body: map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}, "annotations": map[string]any{"owner": "perf team"}}}, shape: "organization"},
		{method: "GET", path: "/v3/organizations?label_selector=env%3Dprod", shape: "organization", list: true},
		{method: "PATCH", path: "/v3/spaces/{space}", body: map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "backend"}}}, shape: "space"},
		{method: "PATCH", path: "/v3/apps/{app}", body: map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": "backend"}}}, shape: "app"},
		{method: "GET", path: "/v3/apps?label_selector=tier+in+(backend,frontend)", shape: "app", list: true},
		{method: "GET", path: "/v3/spaces?label_selector=malformed+in+(", status: 400, shape: "error"},
		{method: "PATCH", path: "/v3/spaces/{space}", body: map[string]any{"metadata": map[string]any{"labels": map[string]any{"-bad": "x"}}}, status: 422, shape: "error"},
		{method: "GET", path: "/v3/environment_variable_groups/staging", shape: "environment_variable_group"},
		{method: "PATCH", path: "/v3/environment_variable_groups/running", body: map[string]any{"var": map[string]any{"REGION": "local", "GONE": nil}}, shape: "environment_variable_group"},
		{method: "GET", path: "/v3/environment_variable_groups/running", shape: "environment_variable_group"},
		{method: "PATCH", path: "/v3/environment_variable_groups/running", body: map[string]any{"var": map[string]any{"VCAP_X": "y"}}, status: 422, shape: "error"},
		{method: "GET", path: "/v3/environment_variable_groups/other", status: 404, shape: "error"},
		{method: "GET", path: "/v3/apps/not-an-app", status: 404, shape: "error"},
		{method: "GET", path: "/v3/frobnicate", status: 404, shape: "error"},
		{method: "GET", path: "/v3/apps", noAuth: true, status: 401, shape: "error"},
		{method: "GET", path: "/v3/apps?per_page=0", status: 400, shape: "error"},
		{method: "POST", path: "/v3/apps", body: map[string]any{"name": ""}, status: 422, shape: "error"},
	}
	shapes := map[string]*shape{}
	use := func(name string) *shape {
		if shapes[name] == nil {
			shapes[name] = loadShape(t, name)
		}
		return shapes[name]
	}
	for _, c := range cases {
		name := c.method + " " + c.path
		if c.noAuth {
			name += " without a token"
		}
		t.Run(name, func(t *testing.T) {
			want := c.status
			if want == 0 {
				want = http.StatusOK
			}
			saved := e.t
			e.t = t
			defer func() { e.t = saved }()
			code, body := e.rawJSON(c.method, expand(c.path), c.body, !c.noAuth)
			if code != want {
				raw, _ := json.Marshal(body)
				t.Fatalf("status %d, want %d: %s", code, want, raw)
			}
			var problems []string
			checked := []string{}
			if c.list {
				pg := use("pagination")
				checked = append(checked, pg.file)
				problems = pg.check(body, "")
				resources, _ := get(body, "resources").([]any)
				if c.shape == "" && len(resources) > 0 {
					problems = append(problems, fmt.Sprintf("resources: want an empty list, got %d resources", len(resources)))
				}
				if c.shape != "" {
					if len(resources) == 0 {
						t.Fatalf("no resources to check: the fixture must create some")
					}
					sh := use(c.shape)
					checked = append(checked, sh.file)
					for i, r := range resources {
						problems = append(problems, sh.check(r, fmt.Sprintf("resources[%d]", i))...)
					}
				}
			} else {
				sh := use(c.shape)
				checked = append(checked, sh.file)
				problems = sh.check(body, "")
			}
			if len(problems) > 0 {
				sort.Strings(problems)
				t.Errorf("%s %s does not match %s:\n\t%s", c.method, expand(c.path), strings.Join(checked, " + "), strings.Join(problems, "\n\t"))
			}
		})
	}

	// Every shape file must be used, and every line of it checked against some value.
	t.Run("every shape line is exercised", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("testdata", "shapes", "*.txt"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no shape files: %v", err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".txt")
			sh := shapes[name]
			if sh == nil {
				t.Errorf("%s: no endpoint is checked against it", f)
				continue
			}
			for _, l := range sh.lines {
				if sh.checked[l.path] == 0 {
					t.Errorf("%s:%d: %s was never checked: no endpoint's answer reached it (null parent or empty array)", f, l.line, l.path)
				}
			}
		}
	})
}

// TestShapeCheckerCatchesMismatches makes sure the checker above fails where it should:
// a shape test that cannot fail proves nothing.
func TestShapeCheckerCatchesMismatches(t *testing.T) {
	sh, err := parseShape("test.txt", strings.NewReader(strings.Join([]string{
		"# a comment",
		"guid\tuuid",
		"n\tinteger",
		"x\tnumber",
		"at\ttimestamp",
		"ok\tboolean",
		"note\tstring|null",
		"opt\tobject|null",
		"opt.href\tstring",
		"list\tarray",
		"list[].name\tstring",
		"tags[]\tstring",
		"links.self.href\tstring",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(s string) any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	good := `{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": -1, "x": 0.5, "at": "2026-01-02T03:04:05Z", "ok": false,
		"note": null, "opt": null, "list": [{"name": "a"}], "tags": [], "links": {"self": {"href": "h"}}, "extra": 1}`
	if p := sh.check(decode(good), ""); len(p) != 0 {
		t.Fatalf("a matching document fails: %v", p)
	}
	for _, c := range []struct{ doc, want string }{
		{`{"n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": {"href": "h"}, "list": [], "tags": ["a"], "links": {"self": {"href": "h"}}}`, "guid: missing"},
		{`{"guid": "0b5f3633-194c-42d2-9408-97236661", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "guid: want uuid"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1.5, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "n: want integer"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1e3, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "n: want integer"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": "1", "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "x: want number"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "at: want timestamp"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": null, "note": "", "opt": null, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "ok: is null, want boolean"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": {}, "list": [], "tags": [], "links": {"self": {"href": "h"}}}`, "opt.href: missing"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [{"name": "a"}, {"name": 2}], "tags": [], "links": {"self": {"href": "h"}}}`, "list[1].name: want string"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [null], "links": {"self": {"href": "h"}}}`, "tags[0]: is null, want string"},
		{`{"guid": "0b5f3633-194c-42d2-9408-972366617e0e", "n": 1, "x": 1, "at": "2026-01-02T03:04:05Z", "ok": true, "note": "", "opt": null, "list": [], "tags": [], "links": {}}`, "links.self.href: missing, as links.self is missing"},
	} {
		p := sh.check(decode(c.doc), "")
		if len(p) != 1 || !strings.HasPrefix(p[0], c.want) {
			t.Errorf("%s\n\tproblems %q, want one starting %q", c.doc, p, c.want)
		}
	}
	for _, bad := range []string{"guid uuid", "guid\tuuid|text", "guid\tnull", "a..b\tstring", "guid\tuuid\nguid\tstring"} {
		if _, err := parseShape("bad.txt", strings.NewReader(bad)); err == nil {
			t.Errorf("shape file %q is accepted", bad)
		}
	}
}
