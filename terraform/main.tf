# A benchmark landscape: an org with its quota, a space for the apps and one for the
# generators, each on its own isolation segment, the results database, the apps' own
# services, roles and the egress they need. Its `landscape` output is what
# `cf run-benchmark --landscape FILE` reads (README.md).

locals {
  segments = toset(compact([var.apps.isolation_segment, var.generators.isolation_segment]))
}

resource "cloudfoundry_org" "this" {
  count = var.create_org ? 1 : 0
  name  = var.org
}

data "cloudfoundry_org" "existing" {
  count = var.create_org ? 0 : 1
  name  = var.org
}

locals {
  org_id = var.create_org ? cloudfoundry_org.this[0].id : data.cloudfoundry_org.existing[0].id
}

resource "cloudfoundry_org_quota" "this" {
  count                    = var.quota == null ? 0 : 1
  name                     = coalesce(var.quota.name, "${var.org}-benchmark")
  allow_paid_service_plans = true
  total_memory             = var.quota.total_memory_mb
  instance_memory          = var.quota.instance_memory_mb
  total_app_instances      = var.quota.total_app_instances
  total_services           = var.quota.total_services
  total_routes             = var.quota.total_routes
  orgs                     = [local.org_id]
}

resource "cloudfoundry_isolation_segment" "this" {
  for_each = var.create_isolation_segments ? local.segments : toset([])
  name     = each.key
}

data "cloudfoundry_isolation_segment" "existing" {
  for_each = var.create_isolation_segments ? toset([]) : local.segments
  name     = each.key
}

locals {
  segment_ids = { for name in local.segments : name => (var.create_isolation_segments ? cloudfoundry_isolation_segment.this[name].id : data.cloudfoundry_isolation_segment.existing[name].id) }
}

# A space can only be assigned a segment its org is entitled to.
resource "cloudfoundry_isolation_segment_entitlement" "this" {
  for_each = local.segment_ids
  segment  = each.value
  orgs     = [local.org_id]
}

resource "cloudfoundry_space" "apps" {
  name              = var.apps.space
  org               = local.org_id
  isolation_segment = var.apps.isolation_segment == "" ? null : local.segment_ids[var.apps.isolation_segment]
  depends_on        = [cloudfoundry_isolation_segment_entitlement.this]
}

resource "cloudfoundry_space" "generators" {
  name              = var.generators.space
  org               = local.org_id
  isolation_segment = var.generators.isolation_segment == "" ? null : local.segment_ids[var.generators.isolation_segment]
  depends_on        = [cloudfoundry_isolation_segment_entitlement.this]
}

locals {
  spaces = { apps = cloudfoundry_space.apps.id, generators = cloudfoundry_space.generators.id }
}

resource "cloudfoundry_space_role" "developer" {
  for_each = { for p in setproduct(keys(local.spaces), var.space_developers) : "${p[0]}/${p[1]}" => { space = local.spaces[p[0]], user = p[1] } }
  type     = "space_developer"
  space    = each.value.space
  username = each.value.user
}

locals {
  results_db_managed = var.results_db.credentials == null
}

# The results database lives beside the generators and the tunnel app, which bind it.
resource "cloudfoundry_service_instance" "results_db" {
  name                  = var.results_db.name
  type                  = local.results_db_managed ? "managed" : "user-provided"
  space                 = cloudfoundry_space.generators.id
  service_offering_name = local.results_db_managed ? var.results_db.offering : null
  service_plan_name     = local.results_db_managed ? var.results_db.plan : null
  credentials           = local.results_db_managed ? null : jsonencode(var.results_db.credentials)
  tags                  = local.results_db_managed ? null : ["postgres"]
}

resource "cloudfoundry_service_instance" "app" {
  for_each              = { for s in var.app_services : s.name => s }
  name                  = each.key
  type                  = "managed"
  space                 = cloudfoundry_space.apps.id
  service_offering_name = each.value.offering
  service_plan_name     = each.value.plan
}

resource "cloudfoundry_security_group" "egress" {
  count = length(var.egress) > 0 ? 1 : 0
  name  = "${var.org}-benchmark-egress"
  rules = [for r in var.egress : {
    protocol    = r.protocol
    destination = r.destination
    ports       = r.protocol == "tcp" || r.protocol == "udp" ? r.ports : null
    description = r.description
  }]
}

resource "cloudfoundry_security_group_space_bindings" "egress" {
  count          = length(var.egress) > 0 ? 1 : 0
  security_group = cloudfoundry_security_group.egress[0].id
  running_spaces = values(local.spaces)
}
