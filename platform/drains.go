package platform

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"
)

// CreateDrainService creates a user-provided service instance name in the space with
// syslogDrainURL as its syslog drain (cf create-user-provided-service NAME -l URL). An
// instance of that name already there is deleted first, bindings and all: a drain
// carries per-run credentials, so an earlier one (a run that could not clean up) is
// of no use. removed tells that one was.
func (c *CF) CreateDrainService(ctx context.Context, spaceGUID, name, syslogDrainURL string) (guid string, removed bool, err error) {
	old, err := c.instance(ctx, spaceGUID, name)
	switch {
	case err == nil:
		if err := c.DeleteServiceInstance(ctx, old.GUID); err != nil {
			return "", false, fmt.Errorf("remove the earlier %s: %w", name, err)
		}
		removed = true
	case !errors.Is(err, ErrNoServiceInstance):
		return "", false, err
	}
	si, err := c.cl.ServiceInstances.CreateUserProvided(ctx,
		resource.NewServiceInstanceCreateUserProvided(name, spaceGUID).WithSyslogDrainURL(syslogDrainURL))
	if err != nil {
		// The URL carries credentials: never in an error.
		return "", removed, fmt.Errorf("create user-provided service %s: %w", name, err)
	}
	return si.GUID, removed, nil
}

// Bind binds the app to the service instance (cf bind-service) and returns the
// binding's guid.
func (c *CF) Bind(ctx context.Context, appGUID, serviceInstanceGUID string) (string, error) {
	job, b, err := c.cl.ServiceCredentialBindings.Create(ctx, resource.NewServiceCredentialBindingCreateApp(serviceInstanceGUID, appGUID))
	if err != nil {
		return "", fmt.Errorf("bind app %s to service instance %s: %w", appGUID, serviceInstanceGUID, err)
	}
	if err := c.waitJob(ctx, job); err != nil {
		return "", fmt.Errorf("bind app %s to service instance %s: %w", appGUID, serviceInstanceGUID, err)
	}
	if b != nil {
		return b.GUID, nil
	}
	opts := client.NewServiceCredentialBindingListOptions()
	opts.AppGUIDs.EqualTo(appGUID)
	opts.ServiceInstanceGUIDs.EqualTo(serviceInstanceGUID)
	l, err := c.cl.ServiceCredentialBindings.ListAll(ctx, opts)
	if err != nil || len(l) == 0 {
		return "", fmt.Errorf("bind app %s to service instance %s: the binding is not listed: %v", appGUID, serviceInstanceGUID, err)
	}
	return l[0].GUID, nil
}

// DeleteServiceInstance unbinds every app from the service instance (cf
// unbind-service), then deletes it (cf delete-service), waiting for both. An instance
// that is gone already is not an error.
func (c *CF) DeleteServiceInstance(ctx context.Context, guid string) error {
	opts := client.NewServiceCredentialBindingListOptions()
	opts.ServiceInstanceGUIDs.EqualTo(guid)
	bs, err := c.cl.ServiceCredentialBindings.ListAll(ctx, opts)
	if err != nil {
		return fmt.Errorf("list the bindings of service instance %s: %w", guid, err)
	}
	var errs []error
	for _, b := range bs {
		job, err := c.cl.ServiceCredentialBindings.Delete(ctx, b.GUID)
		if err == nil {
			err = c.waitJob(ctx, job)
		}
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("unbind %s: %w", b.GUID, err))
		}
	}
	job, err := c.cl.ServiceInstances.Delete(ctx, guid)
	if err == nil {
		err = c.waitJob(ctx, job)
	}
	if err != nil && !isNotFound(err) {
		errs = append(errs, fmt.Errorf("delete service instance %s: %w", guid, err))
	}
	return errors.Join(errs...)
}

// DeleteApp deletes the app (cf delete), waiting for CC's job: its instances are
// stopped as on cf stop (SIGTERM, then the grace). An app that is gone already is not
// an error.
func (c *CF) DeleteApp(ctx context.Context, appGUID string) error {
	job, err := c.cl.Applications.Delete(ctx, appGUID)
	if err == nil {
		err = c.waitJob(ctx, job)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete app %s: %w", appGUID, err)
	}
	return nil
}

// isNotFound tells a CC error for a resource that does not exist (any more).
func isNotFound(err error) bool {
	return resource.IsResourceNotFoundError(err) || resource.IsNotFoundError(err)
}
