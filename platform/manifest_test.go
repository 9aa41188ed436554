package platform

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseManifest(t *testing.T) {
	cases := []struct {
		name, yaml string
		apps       []string // names, for a good manifest
		err        string   // the whole error after "manifest m.yml: ", for a bad one
	}{
		{"one app", "applications:\n- name: web\n  memory: 256M\n  instances: 0\n", []string{"web"}, ""},
		{"every key", `applications:
- name: web
  path: ./app
  memory: 1G
  disk_quota: 512MB
  instances: 2
  buildpacks: [binary_buildpack]
  command: ./web --port $PORT
  env: {A: x, N: 3, B: true}
  routes: [{route: web.example.com/api}]
  no-route: false
  random-route: false
  default-route: true
  health-check-type: http
  health-check-http-endpoint: /healthz
  timeout: 60
  stack: cflinuxfs4
  services: [db, {name: cache, binding_name: c}]
  processes: [{type: worker, command: ./work, instances: 1, memory: 64M}]
  metadata: {labels: {team: perf}}
`, []string{"web"}, ""},
		{"two apps", "applications:\n- name: a\n- name: b\n", []string{"a", "b"}, ""},
		{"anchors", "defaults: &d\n  memory: 64M\napplications:\n- name: a\n  <<: *d\n", []string{"a"}, ""},
		{"not YAML", "applications: [", nil, "not valid YAML: line 1: did not find expected node content"},
		{"empty", "", nil, "empty: want applications: [...]"},
		{"no applications", "version: 1\n", nil, "no applications (line 1)"},
		{"applications not a list", "applications: web\n", nil, "applications: want a list of at least one app (line 1)"},
		{"no name", "applications:\n- memory: 1G\n", nil, "app #1: name: missing (line 2)"},
		{"empty name", "applications:\n- name: ''\n", nil, "app #1: name: must not be empty (line 2)"},
		{"twice", "applications:\n- name: a\n- name: a\n", nil, `app "a": name: listed twice (line 3)`},
		{"memory unit", "applications:\n- name: a\n  memory: 256\n", nil,
			`app "a": memory: want a size with a unit (B, K, KB, M, MB, G, GB, T or TB), like 256M, got "256" (line 3)`},
		{"disk unit", "applications:\n- name: a\n  disk_quota: lots\n", nil, `app "a": disk_quota: want a size with a unit`},
		{"instances", "applications:\n- name: a\n  instances: -1\n", nil, `app "a": instances: want a whole number of at least 0, got "-1" (line 3)`},
		{"timeout", "applications:\n- name: a\n  timeout: 0\n", nil, `app "a": timeout: want a whole number of at least 1, got "0"`},
		{"health check", "applications:\n- name: a\n  health-check-type: tcp\n", nil,
			`app "a": health-check-type: want one of port, process, http, none, got "tcp" (line 3)`},
		{"endpoint", "applications:\n- name: a\n  health-check-http-endpoint: healthz\n", nil, `app "a": health-check-http-endpoint: want a path starting with /`},
		{"env list", "applications:\n- name: a\n  env: [A]\n", nil, `app "a": env: want a mapping of names to values, got a list (line 3)`},
		{"env value", "applications:\n- name: a\n  env: {A: [1]}\n", nil, `app "a": env.A: want a string, number or boolean, got a list`},
		{"route scheme", "applications:\n- name: a\n  routes: [{route: 'https://a.example.com'}]\n", nil, `app "a": routes[0].route: want host.domain[/path] (no scheme)`},
		{"route string", "applications:\n- name: a\n  routes: [a.example.com]\n", nil, `app "a": routes[0].route: missing: want {route: host.domain}`},
		{"no-route", "applications:\n- name: a\n  no-route: yes please\n", nil, `app "a": no-route: want true or false, got "yes please"`},
		{"service", "applications:\n- name: a\n  services: [{binding_name: x}]\n", nil, `app "a": services[0].name: missing`},
		{"buildpacks", "applications:\n- name: a\n  buildpacks: binary_buildpack\n", nil, `app "a": buildpacks: want a list of buildpack names, got a value`},
		{"both buildpacks", "applications:\n- name: a\n  buildpack: x\n  buildpacks: [y]\n", nil, `app "a": buildpack: give buildpacks or buildpack, not both`},
		{"process type", "applications:\n- name: a\n  processes: [{command: x}]\n", nil, `app "a": processes[0].type: missing`},
		{"process memory", "applications:\n- name: a\n  processes: [{type: w, memory: x}]\n", nil, `app "a": processes[0].memory: want a size with a unit`},
		{"docker", "applications:\n- name: a\n  docker: {image: nginx}\n", nil, `app "a": docker: docker images are not supported`},
		{"variables", "applications:\n- name: a\n  instances: 1\n  memory: ((mem))\n", nil, `app "a": memory: want a size with a unit`},
		{"variables in env", "applications:\n- name: a\n  env: {DB: ((db-url))}\n", nil, `app "a": ((db-url)): manifest variables are not substituted: write the value in (line 3)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apps, err := parseManifest("m.yml", []byte(c.yaml))
			if c.err != "" {
				var me *ManifestError
				if !errors.As(err, &me) || !strings.HasPrefix(err.Error(), "manifest m.yml: "+c.err) {
					t.Fatalf("err = %v\n\twant a ManifestError starting %q", err, "manifest m.yml: "+c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range apps {
				names = append(names, a.Name)
			}
			if !slices.Equal(names, c.apps) {
				t.Fatalf("apps %q, want %q", names, c.apps)
			}
		})
	}
}

func TestApplyBody(t *testing.T) {
	cases := []struct {
		name, app    string
		overlay      map[string]string
		env          map[string]string
		defaultRoute bool
		services     []string
	}{
		{"plain", "name: a\npath: ./x\nmemory: 64M\n", nil, nil, true, nil},
		{"env overlaid", "name: a\nenv: {A: '1', B: 2}\n", map[string]string{"B": "two", "C": "3"},
			map[string]string{"A": "1", "B": "two", "C": "3"}, true, nil},
		{"overlay only", "name: a\n", map[string]string{"C": "3"}, map[string]string{"C": "3"}, true, nil},
		{"routes listed", "name: a\nroutes: [{route: a.example.com}]\n", nil, nil, true, nil},
		{"no-route", "name: a\nno-route: true\n", nil, nil, false, nil},
		{"random-route", "name: a\nrandom-route: true\n", nil, nil, false, nil},
		{"services", "name: a\nservices: [db, {name: q, binding_name: b}]\n", nil, nil, true, []string{"db", "q"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apps, err := parseManifest("m.yml", []byte("applications:\n- "+strings.ReplaceAll(c.app, "\n", "\n  ")))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(apps[0].Services, c.services) {
				t.Fatalf("services %q, want %q", apps[0].Services, c.services)
			}
			r, err := apps[0].resolve("m.yml", Overrides{Env: c.overlay})
			if err != nil {
				t.Fatal(err)
			}
			body := r.Manifest
			var sent struct {
				Applications []map[string]any `yaml:"applications"`
			}
			if err := yaml.Unmarshal(body, &sent); err != nil || len(sent.Applications) != 1 {
				t.Fatalf("body %s: %v", body, err)
			}
			app := sent.Applications[0]
			if _, ok := app["path"]; ok {
				t.Errorf("path sent to CC: %s", body)
			}
			if got, _ := app["default-route"].(bool); got != c.defaultRoute {
				t.Errorf("default-route %v, want %v: %s", app["default-route"], c.defaultRoute, body)
			}
			got := map[string]string{}
			if env, ok := app["env"].(map[string]any); ok {
				for k, v := range env {
					s, ok := v.(string)
					if !ok {
						t.Errorf("env %s = %#v, want a string", k, v)
					}
					got[k] = s
				}
			}
			if len(got) != len(c.env) {
				t.Errorf("env %v, want %v", got, c.env)
			}
			for k, v := range c.env {
				if got[k] != v {
					t.Errorf("env %v, want %v", got, c.env)
				}
			}
			if app["name"] != "a" {
				t.Errorf("name %v", app["name"])
			}
		})
	}
}

func TestResolveOverrides(t *testing.T) {
	t.Parallel()
	const manifest = `applications:
- name: web
  memory: 256M
  instances: 3
  env: {A: "1", POOL: "10"}
  routes: [{route: web.apps.example.com/api}, {route: other.example.com}]
  processes: [{type: web, memory: 512M}, {type: worker, memory: 128M, instances: 2}]
`
	apps, err := parseManifest("m.yml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := apps[0].resolve("m.yml", Overrides{})
	if err != nil || plain.Name != "web" || plain.MemoryMB != 512 || plain.Instances != 3 {
		t.Fatalf("no overrides: %+v, %v; want web, 512 MB (the web process's), 3 instances", plain, err)
	}
	r, err := apps[0].resolve("m.yml", Overrides{Env: map[string]string{"POOL": "60"}, Memory: "1G", Instances: 2, NameSuffix: "-60-1g-i2"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "web-60-1g-i2" || r.MemoryMB != 1024 || r.Instances != 2 || !maps.Equal(r.Env, map[string]string{"A": "1", "POOL": "60"}) {
		t.Errorf("resolved %+v", r)
	}
	var sent struct {
		Applications []struct {
			Name      string            `yaml:"name"`
			Memory    string            `yaml:"memory"`
			Instances int               `yaml:"instances"`
			Env       map[string]string `yaml:"env"`
			Routes    []struct {
				Route string `yaml:"route"`
			} `yaml:"routes"`
			Processes []map[string]any `yaml:"processes"`
		} `yaml:"applications"`
	}
	if err := yaml.Unmarshal(r.Manifest, &sent); err != nil || len(sent.Applications) != 1 {
		t.Fatalf("manifest %s: %v", r.Manifest, err)
	}
	app := sent.Applications[0]
	if app.Name != "web-60-1g-i2" || app.Memory != "1G" || app.Instances != 2 || app.Env["POOL"] != "60" {
		t.Errorf("manifest %s", r.Manifest)
	}
	if len(app.Routes) != 2 || app.Routes[0].Route != "web-60-1g-i2.apps.example.com/api" || app.Routes[1].Route != "other-60-1g-i2.example.com" {
		t.Errorf("routes %+v: want each host suffixed, so the apps of one manifest do not share a route", app.Routes)
	}
	web, worker := app.Processes[0], app.Processes[1]
	if _, ok := web["memory"]; ok || worker["memory"] != "128M" || worker["instances"] != 2 {
		t.Errorf("processes %v: want the web entry's memory dropped (the override is the app's), the worker's kept", app.Processes)
	}
	// The manifest as read is unchanged: the next variant starts from it.
	again, err := apps[0].resolve("m.yml", Overrides{})
	if err != nil || !bytes.Equal(again.Manifest, plain.Manifest) {
		t.Errorf("resolving changed the manifest:\n%s\nthen\n%s", plain.Manifest, again.Manifest)
	}
	long := "-" + strings.Repeat("x", 60)
	_, err = apps[0].resolve("m.yml", Overrides{NameSuffix: long})
	var me *ManifestError
	if !errors.As(err, &me) || me.Field != "routes[0].route" || !strings.Contains(me.Problem, "longer than 63") {
		t.Errorf("a route host over 63 characters: %v", err)
	}
	def, _ := parseManifest("m.yml", []byte("applications:\n- name: Web_App\n"))
	if _, err := def[0].resolve("m.yml", Overrides{NameSuffix: long}); !errors.As(err, &me) || me.Field != "name" {
		t.Errorf("a default route host over 63 characters: %v", err)
	}
}

func TestPick(t *testing.T) {
	apps, err := parseManifest("m.yml", []byte("applications:\n- name: a\n- name: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	one := apps[:1]
	for _, c := range []struct {
		apps       []*manifestApp
		name, want string
		err        string
	}{
		{one, "", "a", ""},
		{one, "a", "a", ""},
		{apps, "b", "b", ""},
		{apps, "", "", "manifest m.yml: lists 2 apps (a, b): name the one to push"},
		{one, "b", "", `manifest m.yml: has no app "b" (it lists a)`},
	} {
		got, err := pick("m.yml", c.apps, c.name)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("pick(%q) err = %v, want %q", c.name, err, c.err)
		case c.err == "" && (err != nil || got.Name != c.want):
			t.Errorf("pick(%q) = %v, %v; want %s", c.name, got, err, c.want)
		}
	}
}

func TestAppBits(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "run", "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "run"), 0o755)
	writeFile(t, dir, "static/index.html", "<p>hi</p>")
	writeFile(t, dir, "manifest.yml", "applications: []\n")
	writeFile(t, dir, ".git/HEAD", "ref")
	writeFile(t, dir, "sub/.gitignore", "x")
	if err := os.Symlink("static/index.html", filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	bits, err := appBits(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fs.FileMode{}
	bodies := map[string]string{}
	zr, err := zip.NewReader(bytes.NewReader(bits), int64(len(bits)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		got[f.Name] = f.Mode()
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		r.Close()
		bodies[f.Name] = string(b)
	}
	want := map[string]fs.FileMode{"run": 0o755, "static/": fs.ModeDir | 0o755, "static/index.html": 0o644, "sub/": fs.ModeDir | 0o755,
		"index": fs.ModeSymlink | 0o777}
	if len(got) != len(want) {
		t.Fatalf("zip has %v, want %v", got, want)
	}
	for name, mode := range want {
		if got[name] != mode {
			t.Errorf("%s: mode %v, want %v", name, got[name], mode)
		}
	}
	if bodies["run"] != "#!/bin/sh\n" || bodies["index"] != "static/index.html" {
		t.Errorf("bodies %q", bodies)
	}

	// A zip (jar, war) goes up as is; another file does not go up at all.
	jar := filepath.Join(t.TempDir(), "app.jar")
	if err := os.WriteFile(jar, bits, 0o644); err != nil {
		t.Fatal(err)
	}
	if same, err := appBits(jar); err != nil || !bytes.Equal(same, bits) {
		t.Errorf("a jar is not uploaded as is: %v", err)
	}
	for _, c := range []struct{ path, err string }{
		{filepath.Join(dir, "run"), "is neither a directory nor a zip archive (.zip, .jar, .war)"},
		{t.TempDir(), "has no files to push"},
		{filepath.Join(dir, "nope"), "no such file or directory"},
	} {
		if _, err := appBits(c.path); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("appBits(%s) err = %v, want %q", c.path, err, c.err)
		}
	}
}

func TestCheckBinary(t *testing.T) {
	dir := t.TempDir()
	// An ELF header of a 64-bit little-endian executable for machine m, no sections.
	elfFor := func(name string, m uint16) string {
		h := make([]byte, 64)
		copy(h, "\x7fELF\x02\x01\x01")
		binary.LittleEndian.PutUint16(h[16:], 2) // ET_EXEC
		binary.LittleEndian.PutUint16(h[18:], m)
		binary.LittleEndian.PutUint32(h[20:], 1)
		binary.LittleEndian.PutUint16(h[52:], 64) // header size
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, h, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, path string
		err        string // "" = accepted
	}{
		{"x86-64", elfFor("amd64", 62), ""},
		{"arm64", elfFor("arm64", 183), "is not a linux/amd64 executable (ELF ELFCLASS64 EM_AARCH64 ET_EXEC): cells run linux/amd64: build it with GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build (make build does)"},
		{"script", writeFile(t, dir, "run.sh", "#!/bin/sh\n"), "is not a linux/amd64 executable but a script: cells run linux/amd64: build it with GOOS=linux"},
		{"macOS", writeFile(t, dir, "mac", "\xcf\xfa\xed\xfe\x07\x00\x00\x01"), "is not a linux/amd64 executable but a macOS (Mach-O) executable: cells run"},
		{"windows", writeFile(t, dir, "win.exe", "MZ\x90\x00"), "but a Windows executable"},
		{"text", writeFile(t, dir, "notes.txt", "hello"), "but not an executable"},
		{"empty", writeFile(t, dir, "empty", ""), "but not an executable"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ name, path, err string }{"this test", exe, ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkBinary(c.path)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("err = %v, want %q", err, c.err)
			case c.err != "" && c.name != "missing" && !errors.Is(err, ErrNotLinuxAmd64):
				t.Fatalf("err = %v, want ErrNotLinuxAmd64", err)
			}
		})
	}
}

func TestBinaryStartedByABinaryBuildpackApp(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "app-dir")
	writeFile(t, dir, "app", "\x7fELF")
	writeFile(t, dir, "run.sh", "#!/bin/sh\nexec ./app\n")
	writeFile(t, root, "outside", "\x7fELF")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, yaml, want string // want: the file under dir, or "" for none
	}{
		{"dot slash", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: ./app --flag\n", "app"},
		{"buildpack", "applications:\n- name: a\n  buildpack: binary_buildpack\n  command: ./app\n", "app"},
		{"bare name, found on PATH", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: app\n", ""},
		{"script", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: ./run.sh\n", ""},
		{"other buildpack", "applications:\n- name: a\n  buildpacks: [go_buildpack]\n  command: ./app\n", ""},
		{"no command", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n", ""},
		{"missing file", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: ./nope\n", ""},
		{"directory", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: ./sub\n", ""},
		{"outside the app", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: ./../outside\n", ""},
		{"absolute", "applications:\n- name: a\n  buildpacks: [binary_buildpack]\n  command: /bin/sh -c ./app\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			apps, err := parseManifest("m.yml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if c.want != "" {
				want = filepath.Join(dir, c.want)
			}
			if got := apps[0].binaryStarted(dir); got != want {
				t.Errorf("binaryStarted = %q, want %q", got, want)
			}
		})
	}
}

// FuzzParseManifest: a manifest is outside input; parsing it must not panic, and a
// manifest it accepts must give apply_manifest bodies that are YAML again.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		"applications:\n- name: web\n  memory: 256M\n  env: {A: 1}\n  routes: [{route: a.b}]\n  services: [db]\n",
		"applications:\n- name: a\n  processes: [{type: w, instances: 2}]\n- name: b\n  no-route: true\n",
		"x: &a [*a]\napplications: [{name: a, env: *a}]\n",
		"applications: [{name: ((x))}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		apps, err := parseManifest("f.yml", data)
		if err != nil {
			return
		}
		for _, a := range apps {
			r, err := a.resolve("f.yml", Overrides{Env: map[string]string{"X": "y"}, Memory: "1G", Instances: 2, NameSuffix: "-x"})
			var me *ManifestError
			if errors.As(err, &me) && strings.Contains(me.Problem, "characters") {
				continue // a host too long for DNS: said with file, app and field
			}
			if err != nil {
				t.Fatalf("resolve an accepted app %q: %v", a.Name, err)
			}
			body := r.Manifest
			var back map[string]any
			if err := yaml.Unmarshal(body, &back); err != nil {
				t.Fatalf("body is not YAML: %v\n%s", err, body)
			}
		}
	})
}

func TestCheckManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ok.yml":      "applications:\n- name: ok\n  path: app\n",
		"nofiles.yml": "applications:\n- name: nofiles\n  path: missing\n",
		"two.yml":     "applications:\n- name: a\n- name: b\n",
		"bad.yml":     "applications:\n- name: bad\n  memory: lots\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		file, app string
		want      string // "" for no problem
	}{
		{"ok.yml", "", ""},
		{"ok.yml", "ok", ""},
		{"ok.yml", "other", `has no app "other"`},
		{"two.yml", "", "lists 2 apps (a, b): name the one to push"},
		{"two.yml", "b", ""},
		{"bad.yml", "", `app "bad": memory: `},
		{"nofiles.yml", "", "app nofiles: files: "},
		{"none.yml", "", "read manifest: "},
	}
	for _, c := range cases {
		err := checkManifest(filepath.Join(dir, c.file), c.app, Overrides{})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("checkManifest(%s, %q) = %v, want %q", c.file, c.app, err, c.want)
		}
	}
}

// A binary app's package is zipped once per name and content: the same program pushed
// again reuses it, another program or another name gets its own.
func TestBinaryBitsZippedOncePerProgram(t *testing.T) {
	c := New(nil)
	prog := bytes.Repeat([]byte("\x7fELF program "), 1000)
	first, err := c.binaryBits("cfbench", prog)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(first), int64(len(first)))
	if err != nil || len(zr.File) != 1 || zr.File[0].Name != "cfbench" || zr.File[0].Mode() != 0o755 {
		t.Fatalf("package %v, %v: want cfbench alone, mode 0755", zr, err)
	}
	r, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(r); !bytes.Equal(body, prog) {
		t.Fatalf("the package holds %d bytes, not the program's %d", len(body), len(prog))
	}
	again, _ := c.binaryBits("cfbench", bytes.Clone(prog))
	if &again[0] != &first[0] {
		t.Error("the same program was zipped again")
	}
	other := append(bytes.Clone(prog), '!')
	for name, body := range map[string][]byte{"cfbench": other, "stub": prog} {
		bits, err := c.binaryBits(name, body)
		if err != nil {
			t.Fatal(err)
		}
		if &bits[0] == &first[0] {
			t.Errorf("%s of %d bytes got the package of cfbench of %d bytes", name, len(body), len(prog))
		}
	}
}
