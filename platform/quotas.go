package platform

import (
	"context"
	"fmt"
)

// Quota is the app limits of an org's or a space's quota; a nil limit is unlimited.
type Quota struct {
	// Of says what it applies to: "org NAME" or "space NAME".
	Of   string
	Name string
	// TotalMemoryMB and TotalInstances bound the started processes together,
	// PerProcessMemoryMB each one.
	TotalMemoryMB, TotalInstances, PerProcessMemoryMB *int
}

// Quotas returns the quota of org (first) and those of the spaces that exist and have
// one, in the order given. A space that does not exist yet has none.
func (c *CF) Quotas(ctx context.Context, org string, spaces ...string) ([]Quota, error) {
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
