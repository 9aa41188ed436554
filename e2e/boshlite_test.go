//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestBoshLiteRenders renders what scripts/bosh-lite deploys, with the real bosh CLI
// (bosh int, through scripts/bosh-lite/render.sh: the scripts' own ops files and
// variables) against the pinned bosh-deployment and cf-deployment in ../shared/data.
// bosh-lite itself needs nested virtualisation, which this machine lacks.
func TestBoshLiteRenders(t *testing.T) {
	root := moduleRoot(t)
	installedTool(t, root, "install-bosh-cli.sh")
	data := filepath.Join(sharedDir(t, root), "data")
	env := append(os.Environ(), "BOSH_DEPLOYMENT="+filepath.Join(data, "bosh-deployment"),
		"CF_DEPLOYMENT="+filepath.Join(data, "cf-deployment-v58.0.0"), "CFBENCH_BOSH_LITE="+t.TempDir())
	render := func(t *testing.T, extraEnv []string, args ...string) result {
		t.Helper()
		return run(t, execTimeout, root, append(env, extraEnv...), filepath.Join(root, "scripts", "bosh-lite", "render.sh"), args...)
	}
	// The variables each manifest needs beyond the credentials it declares (which bosh
	// create-env or the director's CredHub generates): exactly those the scripts give.
	provided := map[string][]string{
		"director virtualbox":     {"director_name", "internal_cidr", "internal_gw", "internal_ip", "outbound_network_name"},
		"director docker":         {"director_name", "docker_host", "internal_cidr", "internal_gw", "internal_ip", "network"},
		"cloud-config virtualbox": nil,
		"cloud-config docker":     {"network"},
		"cf virtualbox":           {"apps_cell_memory_mb", "loadgen_cell_memory_mb", "shared_cell_memory_mb", "system_domain"},
		"cf docker":               {"apps_cell_memory_mb", "loadgen_cell_memory_mb", "shared_cell_memory_mb", "system_domain"},
	}
	manifests := map[string]string{}
	for name, want := range provided {
		t.Run(name, func(t *testing.T) {
			args := strings.Fields(name)
			res := render(t, nil, args...)
			if res.err != nil || res.code != 0 {
				t.Fatalf("render.sh %s: exit %d, %v\n%s", name, res.code, res.err, res.stderr)
			}
			manifests[name] = res.stdout
			var m struct {
				Variables []struct{ Name string } `yaml:"variables"`
			}
			if err := yaml.Unmarshal([]byte(res.stdout), &m); err != nil {
				t.Fatal(err)
			}
			declared := map[string]bool{}
			for _, v := range m.Variables {
				declared[v.Name] = true
			}
			// missing runs bosh int --var-errs and returns the variables it names that
			// the manifest does not declare.
			missing := func(extraEnv ...string) []string {
				res := render(t, append(extraEnv, "RENDER_VAR_ERRS=1"), args...)
				named := regexp.MustCompile(`(?m)^\s+- (\S+)$`).FindAllStringSubmatch(res.stderr, -1)
				if res.err != nil || (res.code != 0) != (len(named) > 0) {
					t.Fatalf("bosh int --var-errs: exit %d, %v, naming %d variables\n%s", res.code, res.err, len(named), res.stderr)
				}
				var out []string
				for _, m := range named {
					if !declared[m[1]] {
						out = append(out, m[1])
					}
				}
				return out
			}
			if got := missing(); len(got) > 0 {
				t.Errorf("with the scripts' variables, bosh int --var-errs still names %v", got)
			}
			if got := missing("RENDER_WITHOUT_VARS=1"); !slices.Equal(got, want) {
				t.Errorf("without the scripts' variables, bosh int --var-errs names %v; want exactly %v (what the scripts give)", got, want)
			}
		})
	}
	for _, cpi := range []string{"virtualbox", "docker"} {
		t.Run("cf cells "+cpi, func(t *testing.T) {
			text, ok := manifests["cf "+cpi]
			if !ok {
				t.Skip("the cf manifest did not render")
			}
			var m struct {
				InstanceGroups []struct {
					Name      string `yaml:"name"`
					Instances int    `yaml:"instances"`
					AZs       []string
					Networks  []struct {
						StaticIPs []string `yaml:"static_ips"`
					} `yaml:"networks"`
					Jobs []struct {
						Name       string `yaml:"name"`
						Properties struct {
							Diego struct {
								Rep struct {
									PlacementTags []string `yaml:"placement_tags"`
								} `yaml:"rep"`
								Executor struct {
									MemoryCapacityMB any `yaml:"memory_capacity_mb"`
								} `yaml:"executor"`
							} `yaml:"diego"`
							CC struct {
								LogRate *int `yaml:"default_app_log_rate_limit_in_bytes_per_second"`
							} `yaml:"cc"`
							Databases struct {
								Databases []struct{ Name string } `yaml:"databases"`
								Roles     []struct{ Name string } `yaml:"roles"`
							} `yaml:"databases"`
						} `yaml:"properties"`
					} `yaml:"jobs"`
				} `yaml:"instance_groups"`
			}
			if err := yaml.Unmarshal([]byte(text), &m); err != nil {
				t.Fatal(err)
			}
			type cell struct {
				instances int
				tags      []string
				memory    any
			}
			cells := map[string]cell{}
			var logRate *int
			var dbs, roles []string
			routerIP := ""
			for _, g := range m.InstanceGroups {
				for _, j := range g.Jobs {
					switch j.Name {
					case "rep":
						cells[g.Name] = cell{g.Instances, j.Properties.Diego.Rep.PlacementTags, j.Properties.Diego.Executor.MemoryCapacityMB}
					case "cloud_controller_ng":
						logRate = j.Properties.CC.LogRate
					case "postgres":
						for _, d := range j.Properties.Databases.Databases {
							dbs = append(dbs, d.Name)
						}
						for _, r := range j.Properties.Databases.Roles {
							roles = append(roles, r.Name)
						}
					}
				}
				if g.Name == "router" && len(g.Networks) > 0 && len(g.Networks[0].StaticIPs) > 0 {
					routerIP = g.Networks[0].StaticIPs[0]
				}
			}
			want := map[string]cell{
				"diego-cell":         {1, nil, 1024},
				"diego-cell-apps":    {1, []string{"apps"}, 6144},
				"diego-cell-loadgen": {1, []string{"loadgen"}, 3072},
			}
			if len(cells) != len(want) {
				t.Errorf("cell groups %v, want %v", cells, want)
			}
			for name, w := range want {
				if c := cells[name]; c.instances != w.instances || !slices.Equal(c.tags, w.tags) || c.memory != w.memory {
					t.Errorf("cell group %s: %d instances, placement tags %v, memory %v MB; want %d, %v, %v", name, c.instances, c.tags, c.memory, w.instances, w.tags, w.memory)
				}
			}
			if logRate == nil || *logRate != -1 {
				t.Errorf("default app log rate limit %v, want -1 (unlimited)", logRate)
			}
			if !slices.Contains(dbs, "cfbench") || !slices.Contains(roles, "cfbench") {
				t.Errorf("postgres databases %v, roles %v: no cfbench results database", dbs, roles)
			}
			if wantIP := map[string]string{"virtualbox": "10.244.0.34", "docker": "10.245.0.34"}[cpi]; routerIP != wantIP {
				t.Errorf("router static IP %s, want %s", routerIP, wantIP)
			}
		})
	}
}
