package platform

import (
	"context"
	"fmt"
	"slices"

	"github.com/cloudfoundry/go-cfclient/v3/client"
)

// AppCPU is what a started app's running instances used of the CPU when the Cloud
// Controller last sampled them (process stats, usage.cpu: up to 15 s old on Diego).
type AppCPU struct {
	Name, GUID string
	// SpaceGUID and Space are the app's space; Space is "" when it cannot be read.
	SpaceGUID, Space string
	// Instances counts the running instances of all its processes.
	Instances int
	// Cores is their CPU in all (1 = one full core).
	Cores float64
	// Hosts are the hosts they run on, sorted, each once.
	Hosts []string
}

// AppsCPU reads the CPU of the started apps of the org orgGUID, or of every app the
// token may see when orgGUID is "" (on the local foundation: every app on its cells),
// leaving out those skip says to (by space guid and name) without reading their
// stats. It lists the apps, spaces and processes once and reads the stats of each
// process with instances once.
func (c *CF) AppsCPU(ctx context.Context, orgGUID string, skip func(spaceGUID, name string) bool) ([]AppCPU, error) {
	aopts, sopts, popts := client.NewAppListOptions(), client.NewSpaceListOptions(), client.NewProcessOptions()
	if orgGUID != "" {
		aopts.OrganizationGUIDs.EqualTo(orgGUID)
		sopts.OrganizationGUIDs.EqualTo(orgGUID)
		popts.OrganizationGUIDs.EqualTo(orgGUID)
	}
	apps, err := c.cl.Applications.ListAll(ctx, aopts)
	if err != nil {
		return nil, fmt.Errorf("list the apps: %w", err)
	}
	byGUID := map[string]*AppCPU{}
	var order []string
	for _, a := range apps {
		if a.State != "STARTED" {
			continue
		}
		space := ""
		if a.Relationships.Space.Data != nil {
			space = a.Relationships.Space.Data.GUID
		}
		if skip != nil && skip(space, a.Name) {
			continue
		}
		byGUID[a.GUID] = &AppCPU{Name: a.Name, GUID: a.GUID, SpaceGUID: space}
		order = append(order, a.GUID)
	}
	if len(order) == 0 {
		return nil, nil
	}
	spaces, err := c.cl.Spaces.ListAll(ctx, sopts)
	if err != nil {
		return nil, fmt.Errorf("list the spaces: %w", err)
	}
	spaceNames := map[string]string{}
	for _, s := range spaces {
		spaceNames[s.GUID] = s.Name
	}
	procs, err := c.cl.Processes.ListAll(ctx, popts)
	if err != nil {
		return nil, fmt.Errorf("list the processes: %w", err)
	}
	for _, p := range procs {
		if p.Relationships.App.Data == nil || p.Instances == 0 {
			continue
		}
		a := byGUID[p.Relationships.App.Data.GUID]
		if a == nil {
			continue
		}
		st, err := c.cl.Processes.GetStats(ctx, p.GUID)
		if err != nil {
			return nil, fmt.Errorf("read the stats of app %s: %w", a.Name, err)
		}
		for _, in := range st.Stats {
			if in.State != "RUNNING" {
				continue
			}
			a.Instances++
			a.Cores += in.Usage.CPU
			if in.Host != "" && !slices.Contains(a.Hosts, in.Host) {
				a.Hosts = append(a.Hosts, in.Host)
			}
		}
	}
	out := make([]AppCPU, 0, len(order))
	for _, g := range order {
		a := byGUID[g]
		a.Space = spaceNames[a.SpaceGUID]
		slices.Sort(a.Hosts)
		out = append(out, *a)
	}
	return out, nil
}
