package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cf-benchmark/cf-benchmark/plugin/payload"
)

// TestValidateRefusesWhatRunRefuses checks that validate and run give the same answer,
// line for line, for every spec run refuses before it touches a foundation or a
// database, and that validate accepts what run would start.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	const tfOutput = `{"landscape": {"value": {"landscape": {"org": "o", "apps": {"space": "a"}, "generators": {"space": "g"}},
		"results_db": {"service_instance": "r"}}}}`
	for name, body := range map[string]string{"app.yml": "applications:\n- name: app\n", "bins/cfbench": "x",
		"tf.json": tfOutput, "tf-bad.json": strings.Replace(tfOutput, `"org": "o"`, `"org": 3`, 1)} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const onCF = "landscape:\n  org: o\n  apps: {space: a}\n  generators: {space: g}\nresults_db: {service_instance: r}\n"
	manifest := strings.Replace(goodSpec, "url: http://127.0.0.1:18080", "manifest: app.yml", 1)
	bins := filepath.Join(dir, "bins")
	cases := []struct {
		name, spec string
		env        map[string]string
		flags      []string
		code       int
		stderr     string // prefix of the first line; "" for valid
	}{
		{"url spec", goodSpec, nil, nil, ExitOK, ""},
		{"manifest spec with the binaries", manifest + onCF, nil, []string{"--bin-dir", bins}, ExitOK, ""},
		{"binaries from CFBENCH_BIN_DIR", manifest + onCF, map[string]string{"CFBENCH_BIN_DIR": bins}, nil, ExitOK, ""},
		{"landscape without results_db", manifest + strings.Split(onCF, "results_db")[0], nil, []string{"--bin-dir", bins}, ExitUsage,
			"SPEC:16:1: results_db: is required with a landscape"},
		{"manifest that does not exist", strings.Replace(manifest, "app.yml", "nope.yml", 1) + onCF, nil, []string{"--bin-dir", bins}, ExitUsage,
			"SPEC:5:5: variants[0].manifest: read manifest: open " + filepath.Join(dir, "nope.yml")},
		{"header variable not set", strings.Replace(goodSpec, "path: /", "path: /\n      headers: {Authorization: \"${CFB_TEST_UNSET}\"}", 1), nil, nil, ExitUsage,
			"SPEC:12:17: workload.requests[0].headers.Authorization: ${CFB_TEST_UNSET} is not set in the environment"},
		{"app CPU stop without Cloud Foundry", strings.Replace(goodSpec, "warmup: 200ms", "warmup: 200ms\n  stop: {app_cpu_above: 90}", 1), nil, nil, ExitUsage,
			"SPEC:16:10: ramp.stop.app_cpu_above: needs the apps' container metrics"},
		{"a database given for Cloud Foundry", manifest + onCF, map[string]string{"CFBENCH_DB": "postgres://127.0.0.1:1/x"}, []string{"--bin-dir", bins}, ExitUsage,
			"error: --db and CFBENCH_DB are for runs without Cloud Foundry"},
		{"a plan over the spec's limits", goodSpec + "limits: {duration: 1500ms}\n", nil, nil, ExitUsage,
			"SPEC:16:10: limits.duration: the plan runs at least 2s under load (1 variant(s) × 2 level(s) × 1s hold), 500ms over the limit 1.5s"},
		{"landscape from a Terraform output", manifest, nil, []string{"--bin-dir", bins, "--landscape", filepath.Join(dir, "tf.json")}, ExitOK, ""},
		{"landscape output with a bad field", manifest, nil, []string{"--bin-dir", bins, "--landscape", filepath.Join(dir, "tf-bad.json")}, ExitUsage,
			filepath.Join(dir, "tf-bad.json") + ":1:40: landscape.value.landscape.org: must be a string"},
		{"landscape output missing", manifest, nil, []string{"--landscape", filepath.Join(dir, "nope.json")}, ExitUsage,
			"error: read the landscape: open " + filepath.Join(dir, "nope.json")},
		{"binaries not found", manifest + onCF, nil, []string{"--bin-dir", filepath.Join(dir, "none")}, ExitUsage,
			"error: cfbench (linux/amd64, the program pushed to Cloud Foundry) not found in " + filepath.Join(dir, "none")},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specPath := filepath.Join(dir, "spec"+string(rune('a'+i))+".yml")
			if err := os.WriteFile(specPath, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(c.stderr, "SPEC", specPath)
			v := run(t, c.env, append([]string{"validate", "-f", specPath}, c.flags...)...)
			first, _, _ := strings.Cut(v.stderr, "\n")
			if v.code != c.code || !strings.HasPrefix(first, want) || (want == "") != (v.stderr == "") {
				t.Fatalf("validate: exit %d, stderr %q; want %d and %q", v.code, v.stderr, c.code, want)
			}
			if c.code == ExitOK {
				if !strings.Contains(v.stdout, ": valid: ") {
					t.Fatalf("validate: stdout %q", v.stdout)
				}
				return
			}
			r := run(t, c.env, append([]string{"run", "-f", specPath, "--state-dir", filepath.Join(dir, "state")}, c.flags...)...)
			// The same problems; a usage error's last line is each command's usage.
			if rfirst, _, _ := strings.Cut(r.stderr, "\n"); r.code != v.code || rfirst != first || r.stdout != "" ||
				strings.Count(r.stderr, "\n") != strings.Count(v.stderr, "\n") {
				t.Fatalf("run: exit %d, stdout %q, stderr %q; want validate's exit %d and stderr %q", r.code, r.stdout, r.stderr, v.code, v.stderr)
			}
		})
	}
}

// TestFindPushedPrefersAGivenDirThenWhatThePluginCarries: --bin-dir and CFBENCH_BIN_DIR
// override the carried program; a carried program of another version is refused before
// anything is pushed; a plugin that carries none looks beside itself.
func TestFindPushedPrefersAGivenDirThenWhatThePluginCarries(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cfbench"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	carried := func(version string, err error) func() (string, string, error) {
		return func() (string, string, error) { return "/cache/cfbench", version, err }
	}
	for _, c := range []struct {
		name    string
		flagDir string
		binEnv  string
		carried func() (string, string, error)
		want    string // the path, or a part of the error
	}{
		{"carried", "", "", carried("v1", nil), "/cache/cfbench"},
		{"--bin-dir over carried", dir, "", carried("v1", nil), filepath.Join(dir, "cfbench")},
		{"CFBENCH_BIN_DIR over carried", "", dir, carried("v1", nil), filepath.Join(dir, "cfbench")},
		{"carried of another version", "", "", carried("v0.9", nil), "this cf-benchmark (v1) carries cfbench v0.9"},
		{"none carried", "", "", carried("", payload.ErrNotCarried), filepath.Join(dir, "cfbench")},
		{"none anywhere", filepath.Join(dir, "none"), "", nil, "cfbench (linux/amd64, the program pushed to Cloud Foundry) not found in " + filepath.Join(dir, "none")},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := &Env{Version: "v1", Carried: c.carried, BinDirs: []string{dir}, Getenv: func(k string) string {
				if k == "CFBENCH_BIN_DIR" {
					return c.binEnv
				}
				return ""
			}}
			got, err := findPushed(env, c.flagDir)
			if (err == nil && got != c.want) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("findPushed: %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
