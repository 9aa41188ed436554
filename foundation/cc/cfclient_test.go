package cc

import (
	"context"
	"testing"
	"time"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/config"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// TestGoCFClient drives the API with go-cfclient, the client the run engine uses, through
// what the engine needs besides pushing (the foundation's end-to-end test pushes): the
// landscape (isolation segments, entitlement, space assignment), services and
// bindings, jobs, scaling and stats.
func TestGoCFClient(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := config.New(e.http.URL, config.UserPassword("admin", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}

	org, err := cl.Organizations.Single(ctx, &client.OrganizationListOptions{Names: client.Filter{Values: []string{DefaultOrg}}})
	if err != nil {
		t.Fatal(err)
	}
	space, err := cl.Spaces.Single(ctx, &client.SpaceListOptions{Names: client.Filter{Values: []string{"apps"}},
		OrganizationGUIDs: client.Filter{Values: []string{org.GUID}}})
	if err != nil {
		t.Fatal(err)
	}

	seg, err := cl.IsolationSegments.Create(ctx, resource.NewIsolationSegmentCreate("fast-cells"))
	if err != nil {
		t.Fatal(err)
	}
	// Assigning before the entitlement fails, as on CF.
	if err := cl.Spaces.AssignIsolationSegment(ctx, space.GUID, seg.GUID); err == nil {
		t.Fatal("a space was assigned a segment its org is not entitled to")
	}
	if _, err := cl.IsolationSegments.EntitleOrganization(ctx, seg.GUID, org.GUID); err != nil {
		t.Fatal(err)
	}
	if orgs, err := cl.IsolationSegments.ListOrganizationRelationships(ctx, seg.GUID); err != nil || len(orgs) != 1 || orgs[0] != org.GUID {
		t.Fatalf("entitled orgs %v, %v", orgs, err)
	}
	if err := cl.Spaces.AssignIsolationSegment(ctx, space.GUID, seg.GUID); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Spaces.GetAssignedIsolationSegment(ctx, space.GUID); err != nil || got != seg.GUID {
		t.Fatalf("assigned segment %q, %v", got, err)
	}
	if orgs, err := cl.Organizations.ListForIsolationSegmentAll(ctx, seg.GUID, nil); err != nil || len(orgs) != 1 {
		t.Fatalf("orgs of the segment %v, %v", orgs, err)
	}

	plan, err := cl.ServicePlans.Single(ctx, &client.ServicePlanListOptions{Names: client.Filter{Values: []string{"small"}},
		ServiceOfferingNames: client.Filter{Values: []string{"postgres"}}})
	if err != nil {
		t.Fatal(err)
	}
	job, err := cl.ServiceInstances.CreateManaged(ctx, resource.NewServiceInstanceCreateManaged("results", space.GUID, plan.GUID))
	if err != nil || job == "" {
		t.Fatalf("create service instance: job %q, %v", job, err)
	}
	if err := cl.Jobs.PollComplete(ctx, job, &client.PollingOptions{Timeout: 10 * time.Second, CheckInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	si, err := cl.ServiceInstances.Single(ctx, &client.ServiceInstanceListOptions{Names: client.Filter{Values: []string{"results"}}})
	if err != nil {
		t.Fatal(err)
	}

	app := e.push(space.GUID, "applications:\n- name: gen\n  no-route: true\n  health-check-type: process\n")
	job, binding, err := cl.ServiceCredentialBindings.Create(ctx, resource.NewServiceCredentialBindingCreateApp(si.GUID, app))
	if err != nil || job != "" || binding == nil || binding.Relationships.App.Data.GUID != app {
		t.Fatalf("bind: job %q binding %+v, %v", job, binding, err)
	}
	if _, err := cl.Applications.Restart(ctx, app); err != nil {
		t.Fatal(err)
	}
	if spec := e.rt.specs[app]; spec.IsolationSegment != "fast-cells" || spec.HealthCheck != "process" {
		t.Fatalf("after a restart the app runs with %+v, want the space's segment", spec)
	}
	four := 4
	if p, err := cl.Processes.Scale(ctx, app, &resource.ProcessScale{Instances: &four}); err != nil || p.Instances != 4 {
		t.Fatalf("scale: %+v, %v", p, err)
	}
	stats, err := cl.Processes.GetStats(ctx, app)
	if err != nil || len(stats.Stats) != 4 {
		t.Fatalf("stats: %v, %v", stats, err)
	}
	for _, s := range stats.Stats {
		if s.State != "RUNNING" || s.IsolationSegment == nil || *s.IsolationSegment != "fast-cells" || s.Usage.Time.IsZero() {
			t.Fatalf("stats %+v", s)
		}
	}
	if _, err := cl.Applications.Stop(ctx, app); err != nil {
		t.Fatal(err)
	}
	job, err = cl.Applications.Delete(ctx, app)
	if err != nil || job == "" {
		t.Fatalf("delete: job %q, %v", job, err)
	}
	if err := cl.Jobs.PollComplete(ctx, job, &client.PollingOptions{Timeout: 10 * time.Second, CheckInterval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
}
