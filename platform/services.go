package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// ErrNoServiceInstance marks a service instance that is not in the space.
var ErrNoServiceInstance = errors.New("service instance not found")

// instance finds the service instance name in the space.
func (c *CF) instance(ctx context.Context, spaceGUID, name string) (*resource.ServiceInstance, error) {
	opts := client.NewServiceInstanceListOptions()
	opts.Names.EqualTo(name)
	opts.SpaceGUIDs.EqualTo(spaceGUID)
	l, err := c.cl.ServiceInstances.ListAll(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("look up service instance %s: %w", name, err)
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("%w: %q is not in the space. Try: cf services, or cf marketplace then cf create-service OFFERING PLAN %s", ErrNoServiceInstance, name, name)
	}
	return l[0], nil
}

// EnsureServiceInstance finds the service instance name in the space, or, when it is
// absent and offering is given, creates it from offering and plan ("" = the offering's
// only plan) and waits until the broker has provisioned it. An instance whose last
// operation is still in progress (a create by someone else) is waited for. It fails
// with a "Try: …" hint when the instance is absent and not creatable (that error
// wraps ErrNoServiceInstance), the offering or plan is not in the marketplace, or the
// instance's last operation failed.
func (c *CF) EnsureServiceInstance(ctx context.Context, spaceGUID, name, offering, plan string) (guid string, created bool, err error) {
	si, err := c.instance(ctx, spaceGUID, name)
	switch {
	case err == nil:
		return si.GUID, false, c.waitInstance(ctx, si)
	case !errors.Is(err, ErrNoServiceInstance) || offering == "":
		return "", false, err
	}
	planGUID, plan, err := c.plan(ctx, offering, plan)
	if err != nil {
		return "", false, err
	}
	job, err := c.cl.ServiceInstances.CreateManaged(ctx, resource.NewServiceInstanceCreateManaged(name, spaceGUID, planGUID))
	if err != nil {
		return "", false, fmt.Errorf("create service instance %s: %w. Try: cf create-service %s %s %s", name, err, offering, plan, name)
	}
	if err := c.waitJob(ctx, job); err != nil {
		return "", false, fmt.Errorf("create service instance %s: %w. Try: cf service %s", name, err, name)
	}
	if si, err = c.instance(ctx, spaceGUID, name); err != nil {
		return "", false, err
	}
	return si.GUID, true, c.waitInstance(ctx, si)
}

// plan finds a plan of an offering in the marketplace: its guid and name.
func (c *CF) plan(ctx context.Context, offering, plan string) (guid, name string, err error) {
	opts := client.NewServicePlanListOptions()
	opts.ServiceOfferingNames.EqualTo(offering)
	plans, err := c.cl.ServicePlans.ListAll(ctx, opts)
	if err != nil {
		return "", "", fmt.Errorf("look up the plans of %s: %w", offering, err)
	}
	var names []string
	for _, p := range plans {
		if p.Name == plan || plan == "" && len(plans) == 1 {
			return p.GUID, p.Name, nil
		}
		names = append(names, p.Name)
	}
	switch {
	case len(plans) == 0:
		return "", "", fmt.Errorf("service offering %q is not in the marketplace. Try: cf marketplace", offering)
	case plan == "":
		return "", "", fmt.Errorf("service offering %s has plans %s: name one. Try: cf marketplace -e %s", offering, strings.Join(names, ", "), offering)
	}
	return "", "", fmt.Errorf("service offering %s has no plan %q (it has %s). Try: cf marketplace -e %s", offering, plan, strings.Join(names, ", "), offering)
}

// waitInstance waits while the instance's last operation is in progress and fails if
// it failed.
func (c *CF) waitInstance(ctx context.Context, si *resource.ServiceInstance) error {
	return poll(ctx, func() (bool, error) {
		switch si.LastOperation.State {
		case "failed":
			desc := si.LastOperation.Description
			if desc == "" {
				desc = "no description"
			}
			return false, fmt.Errorf("service instance %s: last operation (%s) failed: %s. Try: cf service %s; cf delete-service %s and create it again",
				si.Name, si.LastOperation.Type, desc, si.Name, si.Name)
		case "in progress":
			next, err := c.cl.ServiceInstances.Get(ctx, si.GUID)
			if err != nil {
				return false, fmt.Errorf("read service instance %s: %w", si.Name, err)
			}
			si = next
			return false, nil
		}
		return true, nil
	})
}

// BindingCredentials returns the credentials of the app's binding to the service
// instance: the "credentials" object of the binding's details.
func (c *CF) BindingCredentials(ctx context.Context, appGUID, serviceInstanceGUID string) (map[string]any, error) {
	opts := client.NewServiceCredentialBindingListOptions()
	opts.AppGUIDs.EqualTo(appGUID)
	opts.ServiceInstanceGUIDs.EqualTo(serviceInstanceGUID)
	l, err := c.cl.ServiceCredentialBindings.ListAll(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("look up the binding of app %s to service instance %s: %w", appGUID, serviceInstanceGUID, err)
	}
	if len(l) == 0 {
		return nil, fmt.Errorf("app %s is not bound to service instance %s. Try: cf bind-service APP SERVICE_INSTANCE", appGUID, serviceInstanceGUID)
	}
	d, err := c.cl.ServiceCredentialBindings.GetDetails(ctx, l[0].GUID)
	if err != nil {
		return nil, fmt.Errorf("read the credentials of binding %s: %w", l[0].GUID, err)
	}
	if d.Credentials == nil {
		return map[string]any{}, nil
	}
	return d.Credentials, nil
}
