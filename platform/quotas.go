package platform

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudfoundry/go-cfclient/v3/client"
)

// Quota is the app limits of an org's or a space's quota; a nil limit is unlimited.
type Quota struct {
	// Of says what it applies to: "org NAME" or "space NAME".
	Of   string
	Name string
	// TotalMemoryMB and TotalInstances bound the started processes together,
	// PerProcessMemoryMB each one.
	TotalMemoryMB, TotalInstances, PerProcessMemoryMB *int
	// Apps are the started apps it covers now (those of the space, or of every space
	// of the org), what they already hold against it.
	Apps []AppUsage
}

// AppUsage is what one started app holds against a quota: the instances of its
// processes and their memory.
type AppUsage struct {
	Name, Space         string
	MemoryMB, Instances int
}

// Quotas returns the quota of org (first) and those of the spaces that exist and have
// one, in the order given, each with the started apps it covers. A space that does not
// exist yet has none.
func (c *CF) Quotas(ctx context.Context, org string, spaces ...string) ([]Quota, error) {
	qs, err := c.quotas(ctx, org, spaces...)
	if err != nil || len(qs) == 0 {
		return qs, err
	}
	orgGUID, err := c.org(ctx, org)
	if err != nil {
		return nil, err
	}
	apps, err := c.started(ctx, orgGUID)
	if err != nil {
		return nil, err
	}
	for i := range qs {
		for _, a := range apps {
			if !strings.HasPrefix(qs[i].Of, "space ") || qs[i].Of == "space "+a.Space {
				qs[i].Apps = append(qs[i].Apps, a)
			}
		}
	}
	return qs, nil
}

// started lists the started apps of the org with what their processes hold.
func (c *CF) started(ctx context.Context, orgGUID string) ([]AppUsage, error) {
	sopts := client.NewSpaceListOptions()
	sopts.OrganizationGUIDs.EqualTo(orgGUID)
	spaces, err := c.cl.Spaces.ListAll(ctx, sopts)
	if err != nil {
		return nil, fmt.Errorf("list the spaces of the org: %w", err)
	}
	spaceNames := map[string]string{}
	for _, s := range spaces {
		spaceNames[s.GUID] = s.Name
	}
	aopts := client.NewAppListOptions()
	aopts.OrganizationGUIDs.EqualTo(orgGUID)
	apps, err := c.cl.Applications.ListAll(ctx, aopts)
	if err != nil {
		return nil, fmt.Errorf("list the apps of the org: %w", err)
	}
	byGUID := map[string]*AppUsage{}
	var order []string
	for _, a := range apps {
		if a.State != "STARTED" {
			continue // a stopped app holds nothing against a quota
		}
		space := ""
		if a.Relationships.Space.Data != nil {
			space = spaceNames[a.Relationships.Space.Data.GUID]
		}
		byGUID[a.GUID] = &AppUsage{Name: a.Name, Space: space}
		order = append(order, a.GUID)
	}
	if len(order) == 0 {
		return nil, nil
	}
	popts := client.NewProcessOptions()
	popts.OrganizationGUIDs.EqualTo(orgGUID)
	procs, err := c.cl.Processes.ListAll(ctx, popts)
	if err != nil {
		return nil, fmt.Errorf("list the processes of the org: %w", err)
	}
	for _, p := range procs {
		if p.Relationships.App.Data == nil {
			continue
		}
		if u := byGUID[p.Relationships.App.Data.GUID]; u != nil {
			u.Instances += p.Instances
			u.MemoryMB += p.Instances * p.MemoryInMB
		}
	}
	out := make([]AppUsage, 0, len(order))
	for _, g := range order {
		out = append(out, *byGUID[g])
	}
	return out, nil
}

// quotas reads the quotas themselves (see Quotas).
func (c *CF) quotas(ctx context.Context, org string, spaces ...string) ([]Quota, error) {
	orgGUID, err := c.org(ctx, org)
	if err != nil {
		return nil, err
	}
	o, err := c.cl.Organizations.Get(ctx, orgGUID)
	if err != nil {
		return nil, fmt.Errorf("read org %s: %w", org, err)
	}
	var out []Quota
	if r := o.Relationships.Quota.Data; r != nil && r.GUID != "" {
		q, err := c.cl.OrganizationQuotas.Get(ctx, r.GUID)
		if err != nil {
			return nil, fmt.Errorf("read the quota of org %s: %w", org, err)
		}
		a := q.Apps
		out = append(out, Quota{Of: "org " + org, Name: q.Name, TotalMemoryMB: a.TotalMemoryInMB, TotalInstances: a.TotalInstances, PerProcessMemoryMB: a.PerProcessMemoryInMB})
	}
	for _, name := range spaces {
		_, guid, err := c.space(ctx, org, name)
		if err != nil {
			continue // not created yet: no quota
		}
		sp, err := c.cl.Spaces.Get(ctx, guid)
		if err != nil {
			return nil, fmt.Errorf("read space %s: %w", name, err)
		}
		if sp.Relationships.Quota == nil || sp.Relationships.Quota.Data == nil || sp.Relationships.Quota.Data.GUID == "" {
			continue
		}
		q, err := c.cl.SpaceQuotas.Get(ctx, sp.Relationships.Quota.Data.GUID)
		if err != nil {
			return nil, fmt.Errorf("read the quota of space %s: %w", name, err)
		}
		a := q.Apps
		out = append(out, Quota{Of: "space " + name, Name: q.Name, TotalMemoryMB: a.TotalMemoryInMB, TotalInstances: a.TotalInstances, PerProcessMemoryMB: a.PerProcessMemoryInMB})
	}
	return out, nil
}
