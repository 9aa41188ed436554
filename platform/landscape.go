// Package platform is the run engine's view of a Cloud Foundry, real or local, through
// the Cloud Controller v3 API only (go-cfclient): the landscape a run needs (org, spaces
// for apps and generators, their isolation segments), and, through CF, pushing apps
// (from manifests or single binaries), scaling and watching them, their env, service
// instances and bindings, and how clients reach their routes.
package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cloudfoundry/go-cfclient/v3/client"
	"github.com/cloudfoundry/go-cfclient/v3/resource"

	"github.com/cf-benchmark/cf-benchmark/spec"
)

// Space is a space of the landscape and the isolation segment it runs on ("" for the
// shared segment).
type Space struct {
	GUID, Name       string
	SegmentGUID      string
	IsolationSegment string
}

// Landscape is where a run puts its apps and its generators.
type Landscape struct {
	OrgGUID, Org     string
	Apps, Generators Space
	// Warnings are things that will taint the measurement without stopping the run.
	Warnings []string
	// Changes lists what EnsureLandscape created or assigned, for the run's log.
	Changes []string
}

// ErrLandscape marks a landscape that does not match the spec and may not be changed
// (create_missing is off); its message says what to do.
var ErrLandscape = errors.New("landscape does not match the spec")

// EnsureLandscape checks that the spec's org, spaces and isolation segments exist, that
// the segments are entitled to the org and assigned to the spaces. It creates, entitles
// and assigns only when the spec allows it (create_missing) — which needs the rights to
// (admin, for segments) — and otherwise stops with what to run.
func EnsureLandscape(ctx context.Context, cl *client.Client, want *spec.Landscape) (*Landscape, error) {
	org, err := cl.Organizations.Single(ctx, &client.OrganizationListOptions{Names: client.Filter{Values: []string{want.Org}}})
	if errors.Is(err, client.ErrExactlyOneResultNotReturned) {
		return nil, fmt.Errorf("%w: org %q not found among the orgs you can see (cf orgs); create it or fix landscape.org", ErrLandscape, want.Org)
	}
	if err != nil {
		return nil, fmt.Errorf("look up org %s: %w", want.Org, err)
	}
	l := &Landscape{OrgGUID: org.GUID, Org: org.Name}
	if l.Apps, err = ensureSpace(ctx, cl, l, want.Apps, want.CreateMissing); err != nil {
		return nil, err
	}
	if l.Generators, err = ensureSpace(ctx, cl, l, want.Generators, want.CreateMissing); err != nil {
		return nil, err
	}
	if l.Apps.SegmentGUID == l.Generators.SegmentGUID {
		seg := l.Apps.IsolationSegment
		if seg == "" {
			seg = "the shared segment"
		}
		l.Warnings = append(l.Warnings, fmt.Sprintf("apps (space %s) and generators (space %s) both run on %s: generators may share cells with the apps and taint their CPU figures; the run checks hosts and reports co-located instances",
			l.Apps.Name, l.Generators.Name, seg))
	}
	return l, nil
}

func ensureSpace(ctx context.Context, cl *client.Client, l *Landscape, want spec.SpaceRef, create bool) (Space, error) {
	sp, err := cl.Spaces.Single(ctx, &client.SpaceListOptions{Names: client.Filter{Values: []string{want.Space}},
		OrganizationGUIDs: client.Filter{Values: []string{l.OrgGUID}}})
	switch {
	case errors.Is(err, client.ErrExactlyOneResultNotReturned) && create:
		if sp, err = cl.Spaces.Create(ctx, resource.NewSpaceCreate(want.Space, l.OrgGUID)); err != nil {
			return Space{}, fmt.Errorf("create space %s: %w", want.Space, err)
		}
		l.Changes = append(l.Changes, "created space "+want.Space)
	case errors.Is(err, client.ErrExactlyOneResultNotReturned):
		return Space{}, fmt.Errorf("%w: space %q not found in org %s. Try: cf create-space %s -o %s (or set landscape.create_missing: true)",
			ErrLandscape, want.Space, l.Org, want.Space, l.Org)
	case err != nil:
		return Space{}, fmt.Errorf("look up space %s: %w", want.Space, err)
	}
	out := Space{GUID: sp.GUID, Name: sp.Name}
	have, err := cl.Spaces.GetAssignedIsolationSegment(ctx, sp.GUID)
	if err != nil {
		return Space{}, fmt.Errorf("read the isolation segment of space %s: %w", sp.Name, err)
	}
	if want.IsolationSegment == "" {
		// No segment asked for: report where the space runs.
		out.SegmentGUID = have
		if have != "" {
			seg, err := cl.IsolationSegments.Get(ctx, have)
			if err != nil {
				return Space{}, fmt.Errorf("read isolation segment %s: %w", have, err)
			}
			out.IsolationSegment = seg.Name
		}
		return out, nil
	}
	seg, err := ensureSegment(ctx, cl, l, want.IsolationSegment, create)
	if err != nil {
		return Space{}, err
	}
	out.SegmentGUID, out.IsolationSegment = seg.GUID, seg.Name
	if have == seg.GUID {
		return out, nil
	}
	if !create {
		return Space{}, fmt.Errorf("%w: space %s does not run on isolation segment %s. Try: cf set-space-isolation-segment %s %s (apps move on restart), or set landscape.create_missing: true",
			ErrLandscape, sp.Name, seg.Name, sp.Name, seg.Name)
	}
	if err := cl.Spaces.AssignIsolationSegment(ctx, sp.GUID, seg.GUID); err != nil {
		return Space{}, fmt.Errorf("assign isolation segment %s to space %s: %w", seg.Name, sp.Name, err)
	}
	l.Changes = append(l.Changes, fmt.Sprintf("assigned isolation segment %s to space %s", seg.Name, sp.Name))
	return out, nil
}

func ensureSegment(ctx context.Context, cl *client.Client, l *Landscape, name string, create bool) (*resource.IsolationSegment, error) {
	seg, err := cl.IsolationSegments.Single(ctx, &client.IsolationSegmentListOptions{Names: client.Filter{Values: []string{name}}})
	switch {
	case errors.Is(err, client.ErrExactlyOneResultNotReturned) && create:
		if seg, err = cl.IsolationSegments.Create(ctx, resource.NewIsolationSegmentCreate(name)); err != nil {
			return nil, fmt.Errorf("create isolation segment %s (needs an admin; its name must match a cell placement tag): %w", name, err)
		}
		l.Changes = append(l.Changes, "created isolation segment "+name)
	case errors.Is(err, client.ErrExactlyOneResultNotReturned):
		return nil, fmt.Errorf("%w: isolation segment %q not found (cf isolation-segments). An admin creates it with cf create-isolation-segment %s, for cells tagged %s",
			ErrLandscape, name, name, name)
	case err != nil:
		return nil, fmt.Errorf("look up isolation segment %s: %w", name, err)
	}
	orgs, err := cl.IsolationSegments.ListOrganizationRelationships(ctx, seg.GUID)
	if err != nil {
		return nil, fmt.Errorf("read the orgs entitled to isolation segment %s: %w", name, err)
	}
	if slices.Contains(orgs, l.OrgGUID) {
		return seg, nil
	}
	if !create {
		return nil, fmt.Errorf("%w: org %s is not entitled to isolation segment %s. Try: cf enable-org-isolation %s %s (admin), or set landscape.create_missing: true",
			ErrLandscape, l.Org, name, l.Org, name)
	}
	if _, err := cl.IsolationSegments.EntitleOrganization(ctx, seg.GUID, l.OrgGUID); err != nil {
		return nil, fmt.Errorf("entitle org %s to isolation segment %s: %w", l.Org, name, err)
	}
	l.Changes = append(l.Changes, fmt.Sprintf("entitled org %s to isolation segment %s", l.Org, name))
	return seg, nil
}
