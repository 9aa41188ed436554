//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/foundation/testfoundation"
)

// providerCase is one resource of the official provider (with what it needs), as
// testdata/tfprovider/NAME.tf declares it from the provider's docs and examples.
type providerCase struct {
	name string
	// imports are the addresses imported again by their id after the apply (those the
	// provider can import), each with the attributes the provider cannot read back:
	// the plan after the imports may change only those, and an apply converges.
	imports map[string][]string
	// stubZip: the .tf pushes stub.zip, the stub target, from its folder.
	stubZip bool
}

var providerCases = []providerCase{
	{name: "org", imports: map[string][]string{"cloudfoundry_org.org": nil}},
	{name: "org_quota", imports: map[string][]string{"cloudfoundry_org_quota.org_quota": nil}},
	{name: "space", imports: map[string][]string{"cloudfoundry_space.space": nil}},
	// The quota's spaces are those Terraform assigned (the provider's docs): an
	// imported quota has none until the apply assigns them again.
	{name: "space_quota", imports: map[string][]string{"cloudfoundry_space_quota.space_quota": {"spaces"}, "cloudfoundry_space.space": nil}},
	// An entitlement has no import.
	{name: "isolation_segment", imports: map[string][]string{"cloudfoundry_isolation_segment.segment": nil, "cloudfoundry_space.space": nil}},
	// A role imports with the user's guid, not the username it was made with (a new
	// role replaces it); a user imports without its password (set again).
	{name: "space_role", imports: map[string][]string{"cloudfoundry_user.user": {"password"}, "cloudfoundry_org_role.org_user": nil,
		"cloudfoundry_space_role.developer": {"user", "username"}, "cloudfoundry_space_role.auditor": nil}},
	// Space bindings have no import.
	{name: "security_group", imports: map[string][]string{"cloudfoundry_security_group.group": nil, "cloudfoundry_security_group.bound": nil}},
	{name: "domain", imports: map[string][]string{"cloudfoundry_domain.domain": nil}},
	{name: "route", imports: map[string][]string{"cloudfoundry_route.route": nil}},
	// A user-provided instance imports without its credentials and with the managed
	// attributes unset, which replaces it.
	{name: "service_instance", imports: map[string][]string{"cloudfoundry_service_instance.managed": nil, "cloudfoundry_service_instance.by_name": nil,
		"cloudfoundry_service_instance.user_provided": {"credentials", "service_offering_name", "service_plan", "service_plan_name"}}},
	{name: "service_credential_binding", imports: map[string][]string{"cloudfoundry_service_credential_binding.app": nil, "cloudfoundry_service_credential_binding.key": nil}},
	// An app imports without its bits, its deployment strategy and its bindings'
	// parameters (a push replaces it).
	{name: "app", stubZip: true, imports: map[string][]string{"cloudfoundry_app.app": {"path", "source_code_hash", "strategy", "stopped", "routes", "service_bindings"}}},
}

// TestTerraformProviderResources applies each resource a benchmark landscape uses, one
// small formatted .tf each, with the official provider (1.16, from the mirror) to one
// local foundation, cases in parallel: apply, an empty plan, import where the provider
// supports it, destroy, and through the CC API nothing left.
func TestTerraformProviderResources(t *testing.T) {
	// Its own foundation: it runs beside the package's other runs, which mostly wait.
	t.Parallel()
	root := moduleRoot(t)
	work := t.TempDir()
	bin, env := tofuEnv(t, root, work)
	f, cl := testfoundation.Start(t)
	info := f.Info()
	env = append(env, "CF_API_URL="+info.APIURL, "CF_USER="+info.User, "CF_PASSWORD="+info.Password)
	cases := filepath.Join(root, "e2e", "testdata", "tfprovider")
	if res := run(t, execTimeout, root, env, bin, "fmt", "-check", "-diff", cases); res.err != nil || res.code != 0 {
		t.Errorf("tofu fmt -check %s: exit %d, %v\n%s%s", cases, res.code, res.err, res.stdout, res.stderr)
	}
	provider, err := os.ReadFile(filepath.Join(cases, "provider.tf"))
	if err != nil {
		t.Fatal(err)
	}

	// tofu init once: every case shares its data dir (the provider) and lock file.
	initDir := filepath.Join(work, "init")
	if err := os.MkdirAll(initDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(initDir, "provider.tf"), provider)
	(&tofu{path: bin, dir: initDir, env: env}).mustRun(t, nil, "init", "-input=false")
	lock, err := os.ReadFile(filepath.Join(initDir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "TF_DATA_DIR="+filepath.Join(initDir, ".terraform"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The app service_credential_binding.tf binds (data source by name).
	space, err := cl.Spaces.Single(ctx, &client.SpaceListOptions{Names: client.Filter{Values: []string{"apps"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Applications.Create(ctx, resource.NewAppCreate("tf-binding-app", space.GUID)); err != nil {
		t.Fatal(err)
	}
	var stub []byte
	if slices.ContainsFunc(providerCases, func(c providerCase) bool { return c.stubZip }) {
		stub = testfoundation.StubZip(t)
	}

	for _, c := range providerCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tf := &tofu{path: bin, dir: filepath.Join(work, c.name), env: env}
			if err := os.MkdirAll(tf.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			main, err := os.ReadFile(filepath.Join(cases, c.name+".tf"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(tf.dir, "provider.tf"), provider)
			writeFile(t, filepath.Join(tf.dir, ".terraform.lock.hcl"), lock)
			writeFile(t, filepath.Join(tf.dir, "main.tf"), main)
			if c.stubZip {
				writeFile(t, filepath.Join(tf.dir, "stub.zip"), stub)
			}

			tf.mustRun(t, nil, "apply", "-input=false", "-auto-approve")
			if changes := planChanges(t, tf); changes != nil {
				t.Fatalf("a plan right after apply is not empty, the provider and the local foundation disagree: %v", changes)
			}
			if len(c.imports) > 0 {
				ids := map[string]string{}
				for _, r := range stateResources(t, tf) {
					ids[r.Address] = r.id()
				}
				for addr := range c.imports {
					if ids[addr] == "" {
						t.Fatalf("%s: not in the state after apply", addr)
					}
					tf.mustRun(t, nil, "state", "rm", addr)
					tf.mustRun(t, nil, "import", "-input=false", addr, ids[addr])
				}
				changes := planChanges(t, tf)
				for addr, attrs := range changes {
					for _, a := range attrs {
						if !slices.Contains(c.imports[addr], a) {
							t.Errorf("after the import, the plan changes %s.%s (it may change only %v): the import did not read back what was applied", addr, a, c.imports[addr])
						}
					}
				}
				if changes != nil {
					tf.mustRun(t, nil, "apply", "-input=false", "-auto-approve")
					if changes := planChanges(t, tf); changes != nil {
						t.Fatalf("a plan after the imports and an apply is not empty: %v", changes)
					}
				}
			}
			made := stateResources(t, tf)
			tf.mustRun(t, nil, "destroy", "-input=false", "-auto-approve")
			assertGone(t, cl, made)
		})
	}
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stateResource is a resource or data source in the state.
type stateResource struct {
	Address string
	Mode    string // managed or data
	Type    string
	Values  map[string]any // its attributes
}

func (r stateResource) id() string {
	id, _ := r.Values["id"].(string)
	return id
}

// stateResources are the resources and data sources in tf's state, read with tofu
// state pull: the state as stored, which needs no provider (show -json starts it for
// its schemas, a second of CPU each time).
func stateResources(t *testing.T, tf *tofu) []stateResource {
	t.Helper()
	var state struct {
		Resources []struct {
			Mode      string `json:"mode"`
			Type      string `json:"type"`
			Name      string `json:"name"`
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(tf.mustRun(t, nil, "state", "pull")), &state); err != nil {
		t.Fatalf("tofu state pull: %v", err)
	}
	var out []stateResource
	for _, r := range state.Resources {
		addr := r.Type + "." + r.Name
		if r.Mode == "data" {
			addr = "data." + addr
		}
		if len(r.Instances) != 1 {
			t.Fatalf("%s has %d instances in the state; the cases declare each resource once (no count, no for_each)", addr, len(r.Instances))
		}
		out = append(out, stateResource{Address: addr, Mode: r.Mode, Type: r.Type, Values: r.Instances[0].Attributes})
	}
	return out
}

// planChanges plans and returns, per resource the plan would change, the top-level
// attributes it changes: those whose planned value is known and differs from the
// state's, and those forcing a replacement. nil: an empty plan.
func planChanges(t *testing.T, tf *tofu) map[string][]string {
	t.Helper()
	plan := filepath.Join(tf.dir, "check.tfplan")
	// Exit 0: no changes, and no need to show the plan (a second start of the
	// provider); 2: changes, shown below.
	res := tf.run(t, nil, "plan", "-input=false", "-detailed-exitcode", "-out="+plan)
	switch {
	case res.err == nil && res.code == 0:
		return nil
	case res.err != nil || res.code != 2:
		t.Fatalf("tofu plan: exit %d, %v\n%s%s", res.code, res.err, res.stdout, res.stderr)
	}
	var show struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions      []string       `json:"actions"`
				Before       map[string]any `json:"before"`
				After        map[string]any `json:"after"`
				AfterUnknown map[string]any `json:"after_unknown"`
				ReplacePaths [][]any        `json:"replace_paths"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(tf.mustRun(t, nil, "show", "-json", plan)), &show); err != nil {
		t.Fatalf("tofu show -json %s: %v", plan, err)
	}
	var out map[string][]string
	for _, rc := range show.ResourceChanges {
		ch := rc.Change
		if slices.Equal(ch.Actions, []string{"no-op"}) || slices.Equal(ch.Actions, []string{"read"}) {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		if ch.Before == nil || ch.After == nil { // created or deleted: no attributes to name
			out[rc.Address] = []string{"(" + strings.Join(ch.Actions, ", ") + ")"}
			continue
		}
		var attrs []string
		for k := range ch.Before {
			if ch.AfterUnknown[k] != true && !reflect.DeepEqual(ch.Before[k], ch.After[k]) {
				attrs = append(attrs, k)
			}
		}
		for k := range ch.After {
			if _, inBefore := ch.Before[k]; !inBefore && ch.After[k] != nil {
				attrs = append(attrs, k)
			}
		}
		for _, p := range ch.ReplacePaths {
			if len(p) > 0 {
				if k, ok := p[0].(string); ok {
					attrs = append(attrs, k)
				}
			}
		}
		slices.Sort(attrs)
		out[rc.Address] = slices.Compact(attrs)
	}
	return out
}

// assertGone checks through the CC API that every resource made is gone.
func assertGone(t *testing.T, cl *client.Client, made []stateResource) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gets := map[string]func(context.Context, string) error{
		"cloudfoundry_org":                           ccGet(cl.Organizations.Get),
		"cloudfoundry_org_quota":                     ccGet(cl.OrganizationQuotas.Get),
		"cloudfoundry_space":                         ccGet(cl.Spaces.Get),
		"cloudfoundry_space_quota":                   ccGet(cl.SpaceQuotas.Get),
		"cloudfoundry_isolation_segment":             ccGet(cl.IsolationSegments.Get),
		"cloudfoundry_user":                          ccGet(cl.Users.Get),
		"cloudfoundry_org_role":                      ccGet(cl.Roles.Get),
		"cloudfoundry_space_role":                    ccGet(cl.Roles.Get),
		"cloudfoundry_security_group":                ccGet(cl.SecurityGroups.Get),
		"cloudfoundry_domain":                        ccGet(cl.Domains.Get),
		"cloudfoundry_route":                         ccGet(cl.Routes.Get),
		"cloudfoundry_service_instance":              ccGet(cl.ServiceInstances.Get),
		"cloudfoundry_service_credential_binding":    ccGet(cl.ServiceCredentialBindings.Get),
		"cloudfoundry_app":                           ccGet(cl.Applications.Get),
		"cloudfoundry_isolation_segment_entitlement": nil, // a relationship of a segment its case deletes
		"cloudfoundry_security_group_space_bindings": nil, // a relationship of a group its case deletes
	}
	for _, r := range made {
		if r.Mode != "managed" {
			continue
		}
		get, known := gets[r.Type]
		switch {
		case !known:
			t.Errorf("%s: no way to check that a %s is gone: add one to assertGone", r.Address, r.Type)
		case get == nil:
		case r.id() == "":
			t.Errorf("%s: no id in the state", r.Address)
		default:
			if err := get(ctx, r.id()); !resource.IsResourceNotFoundError(err) {
				t.Errorf("%s %s after destroy: %v, want CF-ResourceNotFound", r.Address, r.id(), err)
			}
		}
	}
}

// ccGet adapts a go-cfclient Get to an error only.
func ccGet[T any](get func(context.Context, string) (T, error)) func(context.Context, string) error {
	return func(ctx context.Context, guid string) error {
		_, err := get(ctx, guid)
		return err
	}
}
