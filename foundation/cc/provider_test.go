package cc

import (
	"encoding/json"
	"path"
	"slices"
	"testing"
)

// What the Terraform provider's resources send and read back beyond the cf CLI
// (e2e/tfprovider_test.go applies them): each endpoint's behaviour here, its JSON in
// shapes_test.go.

func ref(guid string) map[string]any { return map[string]any{"data": map[string]any{"guid": guid}} }

// TestCreatedResourcesKeepTheirMetadata: the provider sends labels and annotations in
// the create request, and a plan right after reads them back.
func TestCreatedResourcesKeepTheirMetadata(t *testing.T) {
	e := newEnv(t, t.TempDir())
	org := first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"].(string)
	scim := e.must(201, "POST", "/Users", map[string]any{"userName": "meta", "password": "pw"})
	for _, c := range []struct {
		name, path string
		body       map[string]any
	}{
		{"org", "/v3/organizations", map[string]any{"name": "labelled"}},
		{"space", "/v3/spaces", map[string]any{"name": "labelled", "relationships": map[string]any{"organization": ref(org)}}},
		{"isolation segment", "/v3/isolation_segments", map[string]any{"name": "labelled"}},
		{"app", "/v3/apps", map[string]any{"name": "labelled", "relationships": map[string]any{"space": ref(e.space("apps"))}}},
		{"domain", "/v3/domains", map[string]any{"name": "labelled.example.com"}},
		{"user", "/v3/users", map[string]any{"guid": scim["id"]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved := e.t
			e.t = t
			defer func() { e.t = saved }()
			bad := map[string]any{"labels": map[string]any{"-bad": "x"}}
			e.must(422, "POST", c.path, merge(c.body, map[string]any{"metadata": bad}))
			made := e.must(201, "POST", c.path, merge(c.body, map[string]any{"metadata": map[string]any{
				"labels": map[string]any{"env": "test"}, "annotations": map[string]any{"owner": "perf team"}}}))
			got := e.must(200, "GET", c.path+"/"+made["guid"].(string), nil)
			if get(got, "metadata", "labels", "env") != "test" || get(got, "metadata", "annotations", "owner") != "perf team" {
				t.Errorf("metadata read back: %v", got["metadata"])
			}
		})
	}
	seg := first(e.must(200, "GET", "/v3/isolation_segments?names=labelled", nil))["guid"].(string)
	patched := e.must(200, "PATCH", "/v3/isolation_segments/"+seg, map[string]any{"name": "relabelled", "metadata": map[string]any{"labels": map[string]any{"env": nil, "tier": "cells"}}})
	if patched["name"] != "relabelled" || get(patched, "metadata", "labels", "env") != nil || get(patched, "metadata", "labels", "tier") != "cells" {
		t.Errorf("PATCH isolation segment: %v", patched)
	}
	if got := first(e.must(200, "GET", "/v3/isolation_segments?label_selector=tier%3Dcells", nil))["guid"]; got != seg {
		t.Errorf("isolation segments by label: %v, want %s", got, seg)
	}
	user := e.must(200, "PATCH", "/v3/users/"+scim["id"].(string), map[string]any{"metadata": map[string]any{"annotations": map[string]any{"owner": nil}}})
	if get(user, "metadata", "annotations", "owner") != nil || get(user, "metadata", "labels", "env") != "test" {
		t.Errorf("PATCH user: %v", user["metadata"])
	}
}

// merge returns a copy of a with b's keys set.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestSpaceQuotaLifecycle: every limit the provider's cloudfoundry_space_quota sets is
// kept; PATCH changes only what it names; a quota applied to a space is refused
// deletion until it is removed from the space, as on CC.
func TestSpaceQuotaLifecycle(t *testing.T) {
	e := newEnv(t, t.TempDir())
	org := first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil))["guid"].(string)
	space := e.space("apps")
	q := e.must(201, "POST", "/v3/space_quotas", map[string]any{"name": "all",
		"apps":          map[string]any{"total_memory_in_mb": 51200, "per_process_memory_in_mb": 2048, "total_instances": 110, "per_app_tasks": 10, "log_rate_limit_in_bytes_per_second": 1000},
		"services":      map[string]any{"paid_services_allowed": false, "total_service_instances": 200, "total_service_keys": 120},
		"routes":        map[string]any{"total_routes": 50, "total_reserved_ports": 5},
		"relationships": map[string]any{"organization": ref(org), "spaces": map[string]any{"data": []any{map[string]any{"guid": space}}}}})
	guid := q["guid"].(string)
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"apps", "log_rate_limit_in_bytes_per_second"}, 1000.0},
		{[]string{"services", "paid_services_allowed"}, false},
		{[]string{"services", "total_service_keys"}, 120.0},
		{[]string{"routes", "total_reserved_ports"}, 5.0},
	} {
		if got := get(q, c.path...); got != c.want {
			t.Errorf("%v = %v, want %v", c.path, got, c.want)
		}
	}
	e.must(422, "POST", "/v3/space_quotas", map[string]any{"name": "neg", "routes": map[string]any{"total_routes": -1}, "relationships": map[string]any{"organization": ref(org)}})

	p := e.must(200, "PATCH", "/v3/space_quotas/"+guid, map[string]any{"name": "renamed", "apps": map[string]any{"total_instances": nil}, "routes": map[string]any{"total_routes": 60}})
	if p["name"] != "renamed" || get(p, "apps", "total_instances") != nil || get(p, "routes", "total_routes") != 60.0 ||
		get(p, "apps", "total_memory_in_mb") != 51200.0 || get(p, "routes", "total_reserved_ports") != 5.0 {
		t.Errorf("PATCH: %v", p)
	}
	e.must(422, "PATCH", "/v3/space_quotas/"+guid, map[string]any{"name": ""})
	e.must(422, "PATCH", "/v3/space_quotas/"+guid, map[string]any{"apps": map[string]any{"total_memory_in_mb": -5}})
	if got := get(e.must(200, "GET", "/v3/space_quotas/"+guid, nil), "apps", "total_memory_in_mb"); got != 51200.0 {
		t.Errorf("a refused PATCH changed the quota: total_memory_in_mb %v", got)
	}

	code, out, _ := e.do("DELETE", "/v3/space_quotas/"+guid, nil)
	if code != 422 {
		t.Errorf("DELETE of a quota applied to a space = %d %v, want 422", code, out)
	}
	if code, _, _ := e.do("DELETE", "/v3/space_quotas/"+guid+"/relationships/spaces/"+space, nil); code != 204 {
		t.Fatalf("remove the quota from its space = %d, want 204", code)
	}
	if got := get(e.must(200, "GET", "/v3/space_quotas/"+guid, nil), "relationships", "spaces", "data"); len(got.([]any)) != 0 {
		t.Errorf("spaces after removal: %v", got)
	}
	_, _, h := e.do("DELETE", "/v3/space_quotas/"+guid, nil)
	if j := e.must(200, "GET", "/v3/jobs/"+path.Base(h.Get("Location")), nil); j["state"] != "COMPLETE" {
		t.Errorf("delete job: %v", j)
	}
	e.must(404, "GET", "/v3/space_quotas/"+guid, nil)
}

// TestOrgQuotaPatchChangesOnlyWhatItNames: cloudfoundry_org_quota's update, as a space
// quota's; the built-in default is not changed.
func TestOrgQuotaPatchChangesOnlyWhatItNames(t *testing.T) {
	e := newEnv(t, t.TempDir())
	guid := e.must(201, "POST", "/v3/organization_quotas", map[string]any{"name": "q",
		"apps": map[string]any{"total_memory_in_mb": 2048, "total_instances": 10}, "domains": map[string]any{"total_domains": 4}})["guid"].(string)
	e.must(201, "POST", "/v3/organization_quotas", map[string]any{"name": "taken"})
	p := e.must(200, "PATCH", "/v3/organization_quotas/"+guid, map[string]any{"apps": map[string]any{"total_memory_in_mb": 4096}, "domains": map[string]any{"total_domains": nil}})
	if p["name"] != "q" || get(p, "apps", "total_memory_in_mb") != 4096.0 || get(p, "apps", "total_instances") != 10.0 || get(p, "domains", "total_domains") != nil {
		t.Errorf("PATCH: %v", p)
	}
	e.must(422, "PATCH", "/v3/organization_quotas/"+guid, map[string]any{"name": "taken"})
	e.must(422, "PATCH", "/v3/organization_quotas/"+guid, map[string]any{"routes": map[string]any{"total_routes": -1}})
	e.must(404, "PATCH", "/v3/organization_quotas/not-a-quota", map[string]any{"name": "x"})
	def := get(first(e.must(200, "GET", "/v3/organizations?names="+DefaultOrg, nil)), "relationships", "quota", "data", "guid").(string)
	e.must(422, "PATCH", "/v3/organization_quotas/"+def, map[string]any{"apps": map[string]any{"total_memory_in_mb": 1}})
}

// TestSpaceQuotaOfAnOlderStateKeepsItsLimits: a state written before space quotas kept
// every limit had the apps limits at the top.
func TestSpaceQuotaOfAnOlderStateKeepsItsLimits(t *testing.T) {
	var q SpaceQuota
	if err := json.Unmarshal([]byte(`{"guid": "g", "name": "small", "total_memory_in_mb": 2048, "total_instances": 4}`), &q); err != nil {
		t.Fatal(err)
	}
	if a := q.Limits.Apps; q.Name != "small" || a.TotalMemoryMB == nil || *a.TotalMemoryMB != 2048 || a.TotalInstances == nil || *a.TotalInstances != 4 || a.PerAppTasks != nil {
		t.Errorf("read %+v, apps limits %+v", q, a)
	}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var again SpaceQuota
	if err := json.Unmarshal(b, &again); err != nil || again.Limits.Apps.TotalMemoryMB == nil || *again.Limits.Apps.TotalMemoryMB != 2048 {
		t.Errorf("written and read again: %+v, %v", again, err)
	}
}

// TestServiceKeys: a credential binding of type key belongs to a managed instance and no
// app, is named uniquely per instance, and goes with its instance.
func TestServiceKeys(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	plan := first(e.must(200, "GET", "/v3/service_plans?names=small&service_offering_names=postgres", nil))["guid"].(string)
	e.must(202, "POST", "/v3/service_instances", map[string]any{"type": "managed", "name": "db",
		"relationships": map[string]any{"space": ref(space), "service_plan": ref(plan)}})
	db := first(e.must(200, "GET", "/v3/service_instances?names=db", nil))["guid"].(string)
	ups := e.must(201, "POST", "/v3/service_instances", map[string]any{"type": "user-provided", "name": "cfg",
		"relationships": map[string]any{"space": ref(space)}})["guid"].(string)
	key := func(name, instance string) map[string]any {
		return map[string]any{"type": "key", "name": name, "relationships": map[string]any{"service_instance": ref(instance)}}
	}
	k := e.must(201, "POST", "/v3/service_credential_bindings", key("k1", db))
	if k["type"] != "key" || get(k, "relationships", "app") != nil || get(k, "relationships", "service_instance", "data", "guid") != db {
		t.Errorf("key: %v", k)
	}
	if creds := e.must(200, "GET", "/v3/service_credential_bindings/"+k["guid"].(string)+"/details", nil)["credentials"]; creds == nil {
		t.Error("a key without credentials")
	}
	e.must(422, "POST", "/v3/service_credential_bindings", key("k1", db))
	e.must(422, "POST", "/v3/service_credential_bindings", key("", db))
	e.must(422, "POST", "/v3/service_credential_bindings", key("k2", ups))
	e.must(422, "POST", "/v3/service_credential_bindings", map[string]any{"type": "route", "relationships": map[string]any{"service_instance": ref(db)}})
	e.must(201, "POST", "/v3/service_credential_bindings", key("k2", db))
	names := func(query string) []string {
		var out []string
		for _, b := range e.must(200, "GET", "/v3/service_credential_bindings?"+query, nil)["resources"].([]any) {
			out = append(out, b.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := names("type=key&service_instance_guids=" + db); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Errorf("keys of db: %v", got)
	}
	if got := names("names=k2"); !slices.Equal(got, []string{"k2"}) {
		t.Errorf("bindings named k2: %v", got)
	}
	if got := names("type=app"); len(got) != 0 {
		t.Errorf("app bindings: %v, want none", got)
	}
	e.must(202, "DELETE", "/v3/service_instances/"+db, nil)
	e.must(404, "GET", "/v3/service_credential_bindings/"+k["guid"].(string), nil)
}

// TestPrivateDomainSharedAtCreation: cloudfoundry_domain's shared_orgs go in the create
// request; deleting the owning org deletes the domain, deleting a sharing org unshares.
func TestPrivateDomainSharedAtCreation(t *testing.T) {
	e := newEnv(t, t.TempDir())
	owner := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "owner"})["guid"].(string)
	other := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "other"})["guid"].(string)
	shared := func(guids ...string) map[string]any {
		data := []any{}
		for _, g := range guids {
			data = append(data, map[string]any{"guid": g})
		}
		return map[string]any{"data": data}
	}
	e.must(422, "POST", "/v3/domains", map[string]any{"name": "unowned.example.com", "relationships": map[string]any{"shared_organizations": shared(other)}})
	e.must(422, "POST", "/v3/domains", map[string]any{"name": "x.example.com", "relationships": map[string]any{"organization": ref(owner), "shared_organizations": shared(owner)}})
	d := e.must(201, "POST", "/v3/domains", map[string]any{"name": "private.example.com",
		"relationships": map[string]any{"organization": ref(owner), "shared_organizations": shared(other)}})
	guid := d["guid"].(string)
	if got := get(e.must(200, "GET", "/v3/domains/"+guid, nil), "relationships", "shared_organizations", "data"); len(got.([]any)) != 1 || get(got.([]any)[0], "guid") != other {
		t.Errorf("shared organizations: %v, want %s", got, other)
	}
	if first(e.must(200, "GET", "/v3/organizations/"+other+"/domains?names=private.example.com", nil))["guid"] != guid {
		t.Error("the org it is shared with does not see the domain")
	}
	e.must(202, "DELETE", "/v3/organizations/"+other, nil)
	if got := get(e.must(200, "GET", "/v3/domains/"+guid, nil), "relationships", "shared_organizations", "data"); len(got.([]any)) != 0 {
		t.Errorf("shared with a deleted org: %v", got)
	}
	e.must(202, "DELETE", "/v3/organizations/"+owner, nil)
	e.must(404, "GET", "/v3/domains/"+guid, nil)
}

// TestRevokingAnOrgsDefaultSegmentUnsetsIt: as CC's IsolationSegmentUnassign, revoking
// the entitlement that is the org's default unsets the default (the provider's
// cloudfoundry_isolation_segment_entitlement with default = true is destroyed so).
func TestRevokingAnOrgsDefaultSegmentUnsetsIt(t *testing.T) {
	e := newEnv(t, t.TempDir())
	org := e.must(201, "POST", "/v3/organizations", map[string]any{"name": "seg"})["guid"].(string)
	seg := e.must(201, "POST", "/v3/isolation_segments", map[string]any{"name": "seg"})["guid"].(string)
	e.must(200, "POST", "/v3/isolation_segments/"+seg+"/relationships/organizations", map[string]any{"data": []any{map[string]any{"guid": org}}})
	e.must(200, "PATCH", "/v3/organizations/"+org+"/relationships/default_isolation_segment", ref(seg))
	if code, out, _ := e.do("DELETE", "/v3/isolation_segments/"+seg+"/relationships/organizations/"+org, nil); code != 204 {
		t.Fatalf("revoke the default = %d %v, want 204", code, out)
	}
	if got := e.must(200, "GET", "/v3/organizations/"+org+"/relationships/default_isolation_segment", nil)["data"]; got != nil {
		t.Errorf("default segment after the revoke: %v, want none", got)
	}
}

// TestAppSSHFeature: cloudfoundry_app's enable_ssh is the app feature ssh, enabled by
// default as CC's default_app_ssh_access.
func TestAppSSHFeature(t *testing.T) {
	e := newEnv(t, t.TempDir())
	app := e.must(201, "POST", "/v3/apps", map[string]any{"name": "ssh", "relationships": map[string]any{"space": ref(e.space("apps"))}})["guid"].(string)
	if e.must(200, "GET", "/v3/apps/"+app+"/features/ssh", nil)["enabled"] != true {
		t.Error("ssh is not enabled for a new app")
	}
	e.must(200, "PATCH", "/v3/apps/"+app+"/features/ssh", map[string]any{"enabled": false})
	if got := first(e.must(200, "GET", "/v3/apps/"+app+"/features", nil)); got["name"] != "ssh" || got["enabled"] != false {
		t.Errorf("features after disabling ssh: %v", got)
	}
	e.must(422, "PATCH", "/v3/apps/"+app+"/features/ssh", map[string]any{})
	e.must(404, "GET", "/v3/apps/"+app+"/features/no-such-feature", nil)
	e.must(404, "PATCH", "/v3/apps/"+app+"/features/no-such-feature", map[string]any{"enabled": true})
	e.must(404, "GET", "/v3/apps/not-an-app/features/ssh", nil)
}

// TestSpaceIncludesItsOrganization: GET /v3/spaces/:guid?include=organization, which
// the provider's cloudfoundry_app reads its org by (go-cfclient's
// GetIncludeOrganization), and the same on lists.
func TestSpaceIncludesItsOrganization(t *testing.T) {
	e := newEnv(t, t.TempDir())
	space := e.space("apps")
	one := e.must(200, "GET", "/v3/spaces/"+space+"?include=organization", nil)
	orgs, _ := get(one, "included", "organizations").([]any)
	if len(orgs) != 1 || get(orgs[0], "name") != DefaultOrg {
		t.Errorf("included: %v, want the org %s", one["included"], DefaultOrg)
	}
	if _, ok := e.must(200, "GET", "/v3/spaces/"+space, nil)["included"]; ok {
		t.Error("included without include=")
	}
	if orgs, _ := get(e.must(200, "GET", "/v3/spaces?include=organization", nil), "included", "organizations").([]any); len(orgs) != 1 {
		t.Errorf("a list's included organizations: %v, want the one org of both spaces", orgs)
	}
}

// TestSCIMUserByIDUpdatedAndRepassworded: the provider's cloudfoundry_user reads its
// UAA user by id, with the names and email it created it with, updates them with PUT
// and sets a password as the admin, without the old one.
func TestSCIMUserByIDUpdatedAndRepassworded(t *testing.T) {
	e := newEnv(t, t.TempDir())
	id := e.must(201, "POST", "/Users", map[string]any{"userName": "named", "password": "pw",
		"name": map[string]any{"givenName": "Ada", "familyName": "Lovelace"}, "emails": []any{map[string]any{"value": "ada@example.com"}}})["id"].(string)
	u := e.must(200, "GET", "/Users/"+id, nil)
	if get(u, "name", "givenName") != "Ada" || get(u, "name", "familyName") != "Lovelace" || get(u["emails"].([]any)[0], "value") != "ada@example.com" {
		t.Errorf("GET /Users/%s: %v", id, u)
	}
	if groups, _ := u["groups"].([]any); len(groups) == 0 {
		t.Errorf("no groups: %v", u)
	}
	if got := e.must(200, "GET", "/Users/"+userGUID, nil)["userName"]; got != "admin" {
		t.Errorf("the admin by id: %v", got)
	}
	e.must(404, "GET", "/Users/not-a-user", nil)

	put := e.must(200, "PUT", "/Users/"+id, map[string]any{"userName": "renamed", "name": map[string]any{"givenName": "Augusta"}})
	if put["userName"] != "renamed" || get(put, "name", "givenName") != "Augusta" || get(put, "name", "familyName") != "renamed" {
		t.Errorf("PUT /Users/%s: %v", id, put)
	}
	e.must(409, "PUT", "/Users/"+id, map[string]any{"userName": "admin"})
	e.must(404, "PUT", "/Users/not-a-user", map[string]any{"userName": "x"})
	e.must(200, "PUT", "/Users/"+id+"/password", map[string]any{"password": "new-pw", "oldPassword": ""})
	e.must(400, "PUT", "/Users/"+id+"/password", map[string]any{"password": ""})
	if e.login("renamed", "new-pw") == "" {
		t.Error("no token with the new password")
	}
}
