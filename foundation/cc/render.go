package cc

import (
	"strings"
	"time"
)

// The CC v3 JSON shapes of each resource, as the v3 docs show them. Fields this
// foundation has no notion of carry the value CC gives them by default (null, [] or {}),
// never "", because clients decode timestamps and enums strictly.

type obj = map[string]any

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func metadata() obj { return obj{"labels": obj{}, "annotations": obj{}} }

func rel(guid string) obj {
	if guid == "" {
		return obj{"data": nil}
	}
	return obj{"data": obj{"guid": guid}}
}

func (s *Server) renderOrg(o *Org) any {
	return obj{
		"guid": o.GUID, "name": o.Name, "suspended": false,
		"created_at": ts(o.Created), "updated_at": ts(o.Updated),
		"relationships": obj{"quota": obj{"data": obj{"guid": o.quota()}}},
		"metadata":      o.Metadata.render(),
		"links": obj{"self": link(s, "/v3/organizations/"+o.GUID), "domains": link(s, "/v3/organizations/"+o.GUID+"/domains"),
			"default_domain": link(s, "/v3/organizations/"+o.GUID+"/domains/default"), "quota": link(s, "/v3/organization_quotas/"+o.quota())},
	}
}

// quotaGUID is the guid of the one (unlimited) org quota.
const quotaGUID = "0a0c6b2e-0000-4000-8000-cf0bec0000f1"

func (s *Server) renderSpace(sp *Space) any {
	return obj{
		"guid": sp.GUID, "name": sp.Name, "suspended": false,
		"created_at": ts(sp.Created), "updated_at": ts(sp.Updated),
		"relationships": obj{"organization": rel(sp.OrgGUID), "quota": rel(sp.QuotaGUID)},
		"metadata":      sp.Metadata.render(),
		"links": obj{"self": link(s, "/v3/spaces/"+sp.GUID), "organization": link(s, "/v3/organizations/"+sp.OrgGUID),
			"features": link(s, "/v3/spaces/"+sp.GUID+"/features"), "apply_manifest": obj{"href": s.url("/v3/spaces/" + sp.GUID + "/actions/apply_manifest"), "method": "POST"}},
	}
}

func (s *Server) renderSegment(i *IsolationSegment) any {
	return obj{
		"guid": i.GUID, "name": i.Name, "created_at": ts(i.Created), "updated_at": ts(i.Updated),
		"metadata": i.Metadata.render(),
		"links":    obj{"self": link(s, "/v3/isolation_segments/"+i.GUID), "organizations": link(s, "/v3/isolation_segments/"+i.GUID+"/organizations")},
	}
}

func buildpackList(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}

func (s *Server) renderApp(a *App) any {
	p := "/v3/apps/" + a.GUID
	return obj{
		"guid": a.GUID, "name": a.Name, "state": a.State,
		"created_at": ts(a.Created), "updated_at": ts(a.Updated),
		"lifecycle":     obj{"type": "buildpack", "data": obj{"buildpacks": buildpackList(a.Buildpacks), "stack": a.Stack}},
		"relationships": obj{"space": rel(a.SpaceGUID), "current_droplet": rel(a.DropletGUID)},
		"metadata":      a.Metadata.render(),
		"links": obj{
			"self": link(s, p), "space": link(s, "/v3/spaces/"+a.SpaceGUID), "processes": link(s, p+"/processes"),
			"packages": link(s, p+"/packages"), "environment_variables": link(s, p+"/environment_variables"),
			"current_droplet": link(s, p+"/droplets/current"), "droplets": link(s, p+"/droplets"), "tasks": link(s, p+"/tasks"),
			"start": obj{"href": s.url(p + "/actions/start"), "method": "POST"}, "stop": obj{"href": s.url(p + "/actions/stop"), "method": "POST"},
			"revisions": link(s, p+"/revisions"), "deployed_revisions": link(s, p+"/revisions/deployed"), "features": link(s, p+"/features"),
		},
	}
}

func nullString(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func (s *Server) renderProcess(p *Process) any {
	timeout := any(nil)
	if p.Timeout > 0 {
		timeout = p.Timeout
	}
	data := obj{"timeout": timeout, "invocation_timeout": nil, "interval": nil}
	if p.HealthCheck == "http" {
		data["endpoint"] = p.HealthPath
	}
	return obj{
		"guid": p.GUID, "type": p.Type, "command": nullString(p.Command), "user": "vcap",
		"instances": p.Instances, "memory_in_mb": p.MemoryMB, "disk_in_mb": p.DiskMB, "log_rate_limit_in_bytes_per_second": -1,
		"health_check":           obj{"type": p.HealthCheck, "data": data},
		"readiness_health_check": obj{"type": "process", "data": obj{"invocation_timeout": nil, "interval": nil}},
		"relationships":          obj{"app": rel(p.AppGUID), "revision": rel("")},
		"metadata":               metadata(),
		"created_at":             ts(p.Created), "updated_at": ts(p.Updated), "version": p.GUID,
		"links": obj{"self": link(s, "/v3/processes/"+p.GUID), "scale": obj{"href": s.url("/v3/processes/" + p.GUID + "/actions/scale"), "method": "POST"},
			"app": link(s, "/v3/apps/"+p.AppGUID), "space": link(s, "/v3/spaces/"+p.SpaceGUID), "stats": link(s, "/v3/processes/"+p.GUID+"/stats")},
	}
}

// renderStats is one entry of GET /v3/processes/:guid/stats. DOWN instances carry only
// the fields CC gives them.
func renderStats(p *Process, in Instance, segment string, now time.Time) any {
	seg := any(nil)
	if segment != "" {
		seg = segment
	}
	details := any(nil)
	if in.Details != "" {
		details = in.Details
	}
	if in.State == "DOWN" {
		return obj{"type": p.Type, "index": in.Index, "state": "DOWN", "routable": nil, "uptime": 0, "isolation_segment": seg, "details": details}
	}
	entitlement := any(nil)
	if in.CPUEntitlement > 0 {
		entitlement = in.CPUEntitlement
	}
	// usage.time is when the API answered, not when the figures were sampled (as CC does).
	return obj{
		"type": p.Type, "index": in.Index, "instance_guid": in.GUID, "state": in.State, "routable": in.State == "RUNNING",
		"host": in.Host, "instance_internal_ip": in.Host, "uptime": int64(in.Uptime.Seconds()),
		"mem_quota": int64(p.MemoryMB) << 20, "disk_quota": int64(p.DiskMB) << 20, "log_rate_limit": -1, "fds_quota": 16384,
		"isolation_segment": seg, "details": details,
		"instance_ports": []obj{{"external": in.Port, "internal": in.Port, "external_tls_proxy_port": nil, "internal_tls_proxy_port": nil}},
		"usage":          obj{"time": ts(now), "cpu": in.CPU, "cpu_entitlement": entitlement, "mem": in.MemBytes, "disk": in.DiskBytes, "log_rate": 0},
	}
}

func (s *Server) renderPackage(p *Package) any {
	checksum := obj{"type": "sha256", "value": nullString(p.SHA256)}
	return obj{
		"guid": p.GUID, "type": "bits", "state": p.State,
		"data":          obj{"checksum": checksum, "error": nil},
		"relationships": obj{"app": rel(p.AppGUID)},
		"metadata":      metadata(), "created_at": ts(p.Created), "updated_at": ts(p.Updated),
		"links": obj{"self": link(s, "/v3/packages/"+p.GUID), "upload": obj{"href": s.url("/v3/packages/" + p.GUID + "/upload"), "method": "POST"},
			"download": obj{"href": s.url("/v3/packages/" + p.GUID + "/download"), "method": "GET"}, "app": link(s, "/v3/apps/"+p.AppGUID)},
	}
}

func (s *Server) renderBuild(b *Build) any {
	droplet := any(nil)
	links := obj{"self": link(s, "/v3/builds/"+b.GUID), "app": link(s, "/v3/apps/"+b.AppGUID)}
	if b.DropletGUID != "" {
		droplet = obj{"guid": b.DropletGUID, "href": s.url("/v3/droplets/" + b.DropletGUID)}
		links["droplet"] = link(s, "/v3/droplets/"+b.DropletGUID)
	}
	return obj{
		"guid": b.GUID, "state": b.State, "error": nullString(b.Error),
		"staging_memory_in_mb": 1024, "staging_disk_in_mb": 1024, "staging_log_rate_limit_bytes_per_second": -1,
		"lifecycle":     obj{"type": "buildpack", "data": obj{"buildpacks": buildpackList(b.Buildpacks), "stack": DefaultStack}},
		"package":       obj{"guid": b.PackageGUID},
		"droplet":       droplet,
		"created_by":    obj{"guid": userGUID, "name": "admin", "email": ""},
		"relationships": obj{"app": rel(b.AppGUID)}, "metadata": metadata(),
		"created_at": ts(b.Created), "updated_at": ts(b.Updated),
		"links": links,
	}
}

func (s *Server) renderDroplet(d *Droplet) any {
	return obj{
		"guid": d.GUID, "state": d.State, "error": nil,
		"lifecycle":          obj{"type": "buildpack", "data": obj{}},
		"execution_metadata": "", "process_types": d.processTypes(),
		"checksum":   obj{"type": "sha256", "value": d.GUID},
		"buildpacks": dropletBuildpacks(d),
		"stack":      DefaultStack, "image": nil,
		"relationships": obj{"app": rel(d.AppGUID)}, "metadata": metadata(),
		"created_at": ts(d.Created), "updated_at": ts(d.Updated),
		"links": obj{"self": link(s, "/v3/droplets/"+d.GUID), "package": link(s, "/v3/packages/"+d.PackageGUID),
			"app": link(s, "/v3/apps/"+d.AppGUID), "assign_current_droplet": obj{"href": s.url("/v3/apps/" + d.AppGUID + "/relationships/current_droplet"), "method": "PATCH"}},
	}
}

// dropletBuildpacks is the droplet's buildpack as CC lists it: the system buildpack's
// name (staticfile_buildpack), the buildpack's own name as its manifest gives it and
// what its detection printed (staticfile for both, as CF's buildpacks say), and its
// version (null if unknown).
func dropletBuildpacks(d *Droplet) []obj {
	short := strings.TrimSuffix(d.Buildpack, "_buildpack")
	var version any
	if d.BuildpackVersion != "" {
		version = d.BuildpackVersion
	}
	return []obj{{"name": d.Buildpack, "detect_output": short, "buildpack_name": short, "version": version}}
}

func (s *Server) renderRoute(r *Route, url string) any {
	dests := []obj{}
	for _, app := range r.Apps {
		dests = append(dests, obj{"guid": stableGUID("destination", r.GUID, app), "app": obj{"guid": app, "process": obj{"type": "web"}},
			"weight": nil, "port": 8080, "protocol": r.protocol(app), "created_at": ts(r.Created), "updated_at": ts(r.Updated)})
	}
	return obj{
		"guid": r.GUID, "protocol": "http", "host": r.Host, "path": r.Path, "port": nil, "url": url,
		"created_at": ts(r.Created), "updated_at": ts(r.Updated), "destinations": dests, "options": obj{},
		"relationships": obj{"space": rel(r.SpaceGUID), "domain": rel(r.DomainGUID)}, "metadata": r.Metadata.render(),
		"links": obj{"self": link(s, "/v3/routes/"+r.GUID), "space": link(s, "/v3/spaces/"+r.SpaceGUID),
			"domain": link(s, "/v3/domains/"+r.DomainGUID), "destinations": link(s, "/v3/routes/"+r.GUID+"/destinations")},
	}
}

func (s *Server) renderDomain(d *Domain) any {
	shared := []obj{}
	for _, o := range d.SharedOrgs {
		shared = append(shared, obj{"guid": o})
	}
	links := obj{"self": link(s, "/v3/domains/"+d.GUID), "route_reservations": link(s, "/v3/domains/"+d.GUID+"/route_reservations")}
	if d.OrgGUID != "" {
		links["organization"] = link(s, "/v3/organizations/"+d.OrgGUID)
		links["shared_organizations"] = link(s, "/v3/domains/"+d.GUID+"/relationships/shared_organizations")
	}
	return obj{
		"guid": d.GUID, "name": d.Name, "internal": d.Internal, "router_group": nil, "supported_protocols": []string{"http"},
		"created_at": ts(d.Created), "updated_at": ts(d.Created), "metadata": d.Metadata.render(),
		"relationships": obj{"organization": rel(d.OrgGUID), "shared_organizations": obj{"data": shared}},
		"links":         links,
	}
}

func lastOperation(kind string, at time.Time) obj {
	return obj{"type": kind, "state": "succeeded", "description": "", "created_at": ts(at), "updated_at": ts(at)}
}

func (s *Server) renderInstance(i *ServiceInstance) any {
	if i.UserProvided {
		return s.renderUserProvided(i)
	}
	tags := i.Tags
	if tags == nil {
		tags = []string{}
	}
	return obj{
		"guid": i.GUID, "name": i.Name, "type": "managed", "tags": tags, "maintenance_info": obj{}, "upgrade_available": false,
		"dashboard_url": nil, "last_operation": lastOperation("create", i.Created),
		"created_at": ts(i.Created), "updated_at": ts(i.Updated),
		"relationships": obj{"space": rel(i.SpaceGUID), "service_plan": rel(i.PlanGUID)}, "metadata": metadata(),
		"links": obj{"self": link(s, "/v3/service_instances/"+i.GUID), "space": link(s, "/v3/spaces/"+i.SpaceGUID),
			"service_plan":                link(s, "/v3/service_plans/"+i.PlanGUID),
			"service_credential_bindings": link(s, "/v3/service_credential_bindings?service_instance_guids="+i.GUID)},
	}
}

func (s *Server) renderBinding(b *Binding) any {
	rels := obj{"service_instance": rel(b.InstanceGUID)}
	links := obj{"self": link(s, "/v3/service_credential_bindings/"+b.GUID), "details": link(s, "/v3/service_credential_bindings/"+b.GUID+"/details"),
		"service_instance": link(s, "/v3/service_instances/"+b.InstanceGUID)}
	if b.kind() == "app" { // a key has neither
		rels["app"], links["app"] = rel(b.AppGUID), link(s, "/v3/apps/"+b.AppGUID)
	}
	return obj{
		"guid": b.GUID, "name": nullString(b.Name), "type": b.kind(), "last_operation": lastOperation("create", b.Created),
		"created_at": ts(b.Created), "updated_at": ts(b.Updated), "metadata": metadata(),
		"relationships": rels, "links": links,
	}
}

func (s *Server) renderJob(j *Job) any {
	errs := []any{}
	if j.Error != nil {
		errs = append(errs, j.Error)
	}
	return obj{"guid": j.GUID, "operation": j.Operation, "state": j.State, "errors": errs, "warnings": []any{},
		"created_at": ts(j.Created), "updated_at": ts(j.Created), "links": obj{"self": link(s, "/v3/jobs/"+j.GUID)}}
}
