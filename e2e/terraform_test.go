//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"

	"github.com/cf-benchmark/cf-benchmark/foundation"
)

// tofu is OpenTofu (scripts/install-tofu.sh) working in dir, with the official provider
// from the filesystem mirror in ../shared/tools.
type tofu struct {
	path, dir string
	env       []string
}

// newTofu is OpenTofu working on a copy of terraform/ in a temp dir.
func newTofu(t *testing.T, root string) *tofu {
	t.Helper()
	work := t.TempDir()
	bin, env := tofuEnv(t, root, work)
	dir := filepath.Join(work, "terraform")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "terraform", "*.tf"))
	if len(files) == 0 {
		t.Fatal("no terraform/*.tf")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &tofu{path: bin, dir: dir, env: env}
}

// tofuEnv installs OpenTofu and returns its binary and the environment it runs in:
// HOME and its CLI configuration (the provider from the mirror, nothing fetched) in
// work, no prompts, no update checks.
func tofuEnv(t *testing.T, root, work string) (bin string, env []string) {
	t.Helper()
	bin = installedTool(t, root, "install-tofu.sh")
	mirror := filepath.Join(sharedDir(t, root), "tools", "terraform-mirror")
	cli := filepath.Join(work, "cli.tfrc")
	conf := `provider_installation {
  filesystem_mirror {
    path    = "` + mirror + `"
    include = ["cloudfoundry/cloudfoundry"]
  }
  direct { exclude = ["cloudfoundry/cloudfoundry"] }
}
`
	if err := os.WriteFile(cli, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "TF_CLI_CONFIG_FILE=" + cli, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"}
}

func (tf *tofu) run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return run(t, execTimeout, tf.dir, append(append([]string{}, tf.env...), env...), tf.path, append(args, "-no-color")...)
}

func (tf *tofu) mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	res := tf.run(t, env, args...)
	if res.err != nil || res.code != 0 {
		t.Fatalf("tofu %s: exit %d, %v\n%s%s", strings.Join(args, " "), res.code, res.err, res.stdout, res.stderr)
	}
	return res.stdout
}

// TestTerraformModule checks terraform/ as make test does: formatted, valid with the
// official provider (1.16, from the mirror), and refusing bad variables with their own
// messages, before any provider call.
func TestTerraformModule(t *testing.T) {
	root := moduleRoot(t)
	tf := newTofu(t, root)
	res := run(t, execTimeout, root, tf.env, tf.path, "fmt", "-check", "-recursive", "-diff", "terraform")
	if res.err != nil || res.code != 0 {
		t.Errorf("tofu fmt -check terraform: exit %d, %v\n%s%s", res.code, res.err, res.stdout, res.stderr)
	}
	tf.mustRun(t, nil, "init", "-input=false")
	tf.mustRun(t, nil, "validate")

	for _, c := range []struct{ name, arg, want string }{
		{"org name with a space", "org=my org", "org must be 1 to 255 letters, digits, dots, dashes or underscores"},
		{"negative quota", "quota={total_memory_mb=-1}", "quota: total_memory_mb, instance_memory_mb, total_app_instances, total_services and total_routes must be whole numbers, 0 or more"},
		{"space name with a space", "apps={space=\"my apps\"}", "apps: space and isolation_segment must be letters"},
		{"egress without a port", "egress=[{destination=\"10.0.0.0/8\", ports=\"\"}]", "egress: protocol is tcp, udp, icmp or all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := tf.run(t, nil, "plan", "-input=false", "-var", c.arg)
			// OpenTofu wraps long messages: compare with runs of spaces joined.
			out := regexp.MustCompile(`\s+`).ReplaceAllString(res.stdout+res.stderr, " ")
			if res.code == 0 || !strings.Contains(out, "Invalid value for variable") || !strings.Contains(out, c.want) {
				t.Errorf("tofu plan -var '%s': exit %d, want the variable's message %q\n%s", c.arg, res.code, c.want, out)
			}
		})
	}
}

// TestTerraformLandscapeOnLocalFoundation applies terraform/ to a fresh local
// foundation with the official provider, runs a one-step benchmark on the landscape it
// made (cf run-benchmark --landscape with its tofu output -json), destroys it, and
// checks that nothing of it is left.
func TestTerraformLandscapeOnLocalFoundation(t *testing.T) {
	// Its own foundation: it runs beside the package's other runs, which mostly wait.
	t.Parallel()
	root := moduleRoot(t)
	tf := newTofu(t, root)
	bins := buildPushed(t, root)
	cf, info, cl := loggedIn(t, root, bins)
	env := []string{"CF_API_URL=" + info.APIURL, "CF_USER=" + info.User, "CF_PASSWORD=" + info.Password}
	// The local foundation's cells are the isolation segments apps and loadgen already.
	vars := filepath.Join(tf.dir, "test.tfvars.json")
	if err := os.WriteFile(vars, []byte(`{"org": "tfbench", "create_isolation_segments": false,
		"app_services": [{"name": "tfbench-appdb", "offering": "postgres", "plan": "db"}],
		"egress": [{"destination": "127.0.0.1", "ports": "5432-6432", "description": "the results database"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tf.mustRun(t, nil, "init", "-input=false")
	tf.mustRun(t, env, "apply", "-input=false", "-auto-approve", "-var-file="+vars)
	if res := tf.run(t, env, "plan", "-input=false", "-detailed-exitcode", "-var-file="+vars); res.code != 0 {
		t.Errorf("a plan right after apply is not empty (exit %d): the provider and the local foundation disagree\n%s", res.code, res.stdout)
	}
	landscape := filepath.Join(cf.dir, "landscape.json")
	if err := os.WriteFile(landscape, []byte(tf.mustRun(t, env, "output", "-json")), 0o644); err != nil {
		t.Fatal(err)
	}
	orgGUID := assertLandscape(t, cl, info)

	spec := writeTinySpec(t, root, bins)
	out := cf.mustRun(t, "run-benchmark", "-f", spec, "--landscape", landscape)
	if !regexp.MustCompile(`run \S+ completed`).MatchString(out) || !strings.Contains(out, "pushing fast from") {
		t.Errorf("cf run-benchmark on the Terraform landscape:\n%s", out)
	}

	tf.mustRun(t, env, "destroy", "-input=false", "-auto-approve", "-var-file="+vars)
	ctx := context.Background()
	if orgs, err := cl.Organizations.ListAll(ctx, &client.OrganizationListOptions{Names: client.Filter{Values: []string{"tfbench"}}}); err != nil || len(orgs) != 0 {
		t.Errorf("org tfbench after destroy: %d, %v", len(orgs), err)
	}
	if spaces, err := cl.Spaces.ListAll(ctx, &client.SpaceListOptions{OrganizationGUIDs: client.Filter{Values: []string{orgGUID}}}); err != nil || len(spaces) != 0 {
		t.Errorf("spaces of tfbench after destroy: %d, %v", len(spaces), err)
	}
	for _, name := range []string{"cfbench-results", "tfbench-appdb"} {
		if sis, err := cl.ServiceInstances.ListAll(ctx, &client.ServiceInstanceListOptions{Names: client.Filter{Values: []string{name}}}); err != nil || len(sis) != 0 {
			t.Errorf("service instance %s after destroy: %d, %v", name, len(sis), err)
		}
	}
	if sgs, err := cl.SecurityGroups.ListAll(ctx, &client.SecurityGroupListOptions{Names: client.Filter{Values: []string{"tfbench-benchmark-egress"}}}); err != nil || len(sgs) != 0 {
		t.Errorf("security group after destroy: %d, %v", len(sgs), err)
	}
	for _, seg := range []string{"apps", "loadgen"} {
		s, err := cl.IsolationSegments.Single(ctx, &client.IsolationSegmentListOptions{Names: client.Filter{Values: []string{seg}}})
		if err != nil {
			t.Fatal(err)
		}
		orgs, err := cl.IsolationSegments.ListOrganizationRelationships(ctx, s.GUID)
		if err != nil || len(orgs) != 1 { // the foundation's own org cfbench only
			t.Errorf("isolation segment %s entitled to %v after destroy (%v), want only cfbench", seg, orgs, err)
		}
	}
}

// assertLandscape checks through the CC API what apply made (the spaces on their
// segments, the egress bound to both), and returns the org's guid.
func assertLandscape(t *testing.T, cl *client.Client, info foundation.Info) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org, err := cl.Organizations.Single(ctx, &client.OrganizationListOptions{Names: client.Filter{Values: []string{"tfbench"}}})
	if err != nil {
		t.Fatalf("org tfbench: %v", err)
	}
	spaces := map[string]bool{}
	for space, seg := range map[string]string{"apps": "apps", "loadgen": "loadgen"} {
		sp, err := cl.Spaces.Single(ctx, &client.SpaceListOptions{Names: client.Filter{Values: []string{space}}, OrganizationGUIDs: client.Filter{Values: []string{org.GUID}}})
		if err != nil {
			t.Fatalf("space %s: %v", space, err)
		}
		rel, err := cl.Spaces.GetAssignedIsolationSegment(ctx, sp.GUID)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cl.IsolationSegments.Get(ctx, rel)
		if err != nil || s.Name != seg {
			t.Errorf("space %s on segment %v (%v), want %s", space, s, err, seg)
		}
		spaces[sp.GUID] = true
	}
	sg, err := cl.SecurityGroups.Single(ctx, &client.SecurityGroupListOptions{Names: client.Filter{Values: []string{"tfbench-benchmark-egress"}}})
	if err != nil {
		t.Fatalf("security group: %v", err)
	}
	if len(sg.Rules) != 1 || sg.Rules[0].Destination != "127.0.0.1" || len(sg.Relationships.RunningSpaces.Data) != 2 ||
		!spaces[sg.Relationships.RunningSpaces.Data[0].GUID] || !spaces[sg.Relationships.RunningSpaces.Data[1].GUID] {
		t.Errorf("security group %+v: want one rule to 127.0.0.1, bound to both spaces for running", sg)
	}
	return org.GUID
}

// writeTinySpec writes a one-variant, one-step spec without a landscape (the Terraform
// output gives it) beside a copy of manifests/stub.yml pointing at the test's build.
func writeTinySpec(t *testing.T, root, bins string) string {
	t.Helper()
	dir := t.TempDir()
	manifest, err := os.ReadFile(filepath.Join(root, "manifests", "stub.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := strings.ReplaceAll(string(manifest), "path: ../bin/stub", "path: "+filepath.Join(bins, "stub"))
	spec := `version: 1
name: tf-landscape
variants:
  - {name: fast, manifest: stub.yml, app: stub-fast}
workload: {model: closed, users: 1, requests: [{name: hello, path: /hello}]}
ramp: {start: 1, step: 1, max: 1, hold: 2s}
`
	for name, text := range map[string]string{"stub.yml": m, "tf.yml": spec} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tf.yml")
}
