package cc

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/internal/testhttp"
)

// appZip is a package zip of files (name → content).
func appZip(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// multipartUpload is an upload body: the zip as "bits" (none when nil) and the
// matched resources as "resources" (none when nil).
func multipartUpload(t *testing.T, bits []byte, resources []matchResource) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if resources != nil {
		b, _ := json.Marshal(resources)
		mw.WriteField("resources", string(b))
	}
	if bits != nil {
		fw, _ := mw.CreateFormFile("bits", "package.zip")
		fw.Write(bits)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func resourceOf(path, content string) matchResource {
	var r matchResource
	sum := sha1.Sum([]byte(content))
	r.Checksum.Value, r.Size, r.Path, r.Mode = hex.EncodeToString(sum[:]), int64(len(content)), path, "755"
	return r
}

func (e *env) newPackage(app string) string {
	e.t.Helper()
	return e.must(201, "POST", "/v3/packages", map[string]any{"type": "bits",
		"relationships": map[string]any{"app": map[string]any{"data": map[string]any{"guid": app}}}})["guid"].(string)
}

// TestResourceMatching: a big file uploaded once is matched by the next push, which
// then sends only what is new; the package holds both.
func TestResourceMatching(t *testing.T) {
	e := newEnv(t, t.TempDir())
	app := e.push(e.space("apps"), "applications:\n- name: web\n")
	big := strings.Repeat("0123456789abcdef", poolMinBytes/16+1)
	small := "tiny"
	bigRes, smallRes := resourceOf("lib/big.bin", big), resourceOf("small.txt", small)

	ask := map[string]any{"resources": []matchResource{bigRes, smallRes}}
	if got := e.must(201, "POST", "/v3/resource_matches", ask)["resources"].([]any); len(got) != 0 {
		t.Fatalf("matches before any upload: %v", got)
	}
	body, ctype := multipartUpload(t, appZip(t, map[string]string{"lib/big.bin": big, "small.txt": small}), nil)
	e.upload("/v3/packages/"+e.newPackage(app)+"/upload", body, ctype)

	got := e.must(201, "POST", "/v3/resource_matches", ask)["resources"].([]any)
	if len(got) != 1 || get(got[0], "checksum", "value") != bigRes.Checksum.Value || get(got[0], "path") != "lib/big.bin" {
		t.Fatalf("matches after the upload: %v; want only the file of %d bytes (smaller ones are not pooled)", got, len(big))
	}

	// Only the new file is sent; the package gets the matched one from the pool.
	pkg := e.newPackage(app)
	body, ctype = multipartUpload(t, appZip(t, map[string]string{"small.txt": "changed"}), []matchResource{bigRes})
	if st := e.upload("/v3/packages/"+pkg+"/upload", body, ctype)["state"]; st != PackageReady {
		t.Fatalf("package state %v", st)
	}
	files := zipFiles(t, e.srv.packagePath(pkg))
	if files["lib/big.bin"] != big || files["small.txt"] != "changed" || len(files) != 2 {
		t.Errorf("package holds %d files, big.bin %d bytes, small.txt %q", len(files), len(files["lib/big.bin"]), files["small.txt"])
	}

	// Everything matched: no bits at all.
	pkg = e.newPackage(app)
	body, ctype = multipartUpload(t, nil, []matchResource{bigRes})
	e.upload("/v3/packages/"+pkg+"/upload", body, ctype)
	if files := zipFiles(t, e.srv.packagePath(pkg)); len(files) != 1 || files["lib/big.bin"] != big {
		t.Errorf("package of matched resources only: %d files", len(files))
	}

	for name, res := range map[string][]matchResource{
		"a resource not in the pool": {resourceOf("x.bin", big+"x")},
		"a path out of the app":      {func() matchResource { r := bigRes; r.Path = "../../etc/passwd"; return r }()},
		"a bad mode":                 {func() matchResource { r := bigRes; r.Mode = "rwx"; return r }()},
	} {
		body, ctype = multipartUpload(t, nil, res)
		req, _ := http.NewRequest("POST", e.http.URL+"/v3/packages/"+e.newPackage(app)+"/upload", body)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", "bearer "+e.token)
		resp, err := testhttp.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("upload with %s: status %d, want 422", name, resp.StatusCode)
		}
	}
}

func zipFiles(t *testing.T, path string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string]string{}
	for _, f := range zr.File {
		r, _ := f.Open()
		b, _ := io.ReadAll(r)
		r.Close()
		out[f.Name] = string(b)
	}
	return out
}

// TestManifestDiff: what cf push shows before applying a manifest.
func TestManifestDiff(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	e.push(space, "applications:\n- name: web\n  instances: 1\n  memory: 256M\n  env:\n    A: one\n    B: two\n  routes:\n  - route: web.apps.localhost\n")
	ops := func(manifest string) []string {
		t.Helper()
		d := e.must(201, "POST", "/v3/spaces/"+space+"/manifest_diff", manifest)
		var out []string
		for _, x := range d["diff"].([]any) {
			b, _ := json.Marshal(x)
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	same := "applications:\n- name: web\n  instances: 1\n  memory: 256MB\n  env: {A: one, B: two}\n  routes:\n  - route: web.apps.localhost\n"
	if got := ops(same); len(got) != 0 {
		t.Errorf("the app's own manifest (256MB written differently): diff %v, want none", got)
	}
	got := ops("applications:\n- name: web\n  instances: 2\n  memory: 1G\n  env: {A: one, C: 3}\n- name: other\n  instances: 3\n")
	want := []string{
		`{"op":"add","path":"/applications/0/env/C","value":"3"}`,
		`{"op":"add","path":"/applications/1/instances","value":3}`,
		`{"op":"add","path":"/applications/1/name","value":"other"}`,
		`{"op":"remove","path":"/applications/0/env/B","was":"two"}`,
		`{"op":"replace","path":"/applications/0/instances","value":2,"was":1}`,
		`{"op":"replace","path":"/applications/0/memory","value":"1024M","was":"256M"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diff:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	// A manifest apply_manifest would refuse is refused here, before push changes anything.
	if code, _, _ := e.do("POST", "/v3/spaces/"+space+"/manifest_diff", "applications:\n- name: web\n  memory: lots\n"); code != http.StatusUnprocessableEntity {
		t.Errorf("a bad memory: status %d, want 422", code)
	}
	if code, _, _ := e.do("POST", "/v3/spaces/not-a-space/manifest_diff", same); code != http.StatusNotFound {
		t.Errorf("an unknown space: status %d, want 404", code)
	}
	// The app's manifest, as cf create-app-manifest fetches it.
	app := first(e.must(200, "GET", "/v3/apps?names=web", nil))["guid"].(string)
	req, _ := http.NewRequest("GET", e.http.URL+"/v3/apps/"+app+"/manifest", nil)
	req.Header.Set("Authorization", "bearer "+e.token)
	resp, err := testhttp.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"name: web", "route: web.apps.localhost", "memory: 256M", "A: one"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("app manifest lacks %q:\n%s", want, b)
		}
	}
}
