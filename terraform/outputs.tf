# `tofu output -json > landscape.json` (or terraform) writes what
# `cf run-benchmark -f SPEC --landscape landscape.json` reads: this output's value has
# the keys of a spec's landscape: and results_db: sections, which it replaces.
output "landscape" {
  description = "The spec's landscape and results_db sections for this landscape; cf run-benchmark --landscape reads them from `tofu output -json`."
  value = {
    landscape = {
      org        = var.org
      apps       = { space = cloudfoundry_space.apps.name, isolation_segment = var.apps.isolation_segment == "" ? null : var.apps.isolation_segment }
      generators = { space = cloudfoundry_space.generators.name, isolation_segment = var.generators.isolation_segment == "" ? null : var.generators.isolation_segment }
      services   = [for s in var.app_services : { name = cloudfoundry_service_instance.app[s.name].name, offering = s.offering, plan = s.plan }]
    }
    results_db = {
      service_instance = cloudfoundry_service_instance.results_db.name
      offering         = local.results_db_managed ? var.results_db.offering : null
      plan             = local.results_db_managed ? var.results_db.plan : null
    }
  }
}

output "org_id" {
  description = "The org's guid."
  value       = local.org_id
}

output "space_ids" {
  description = "The guids of the apps and generators spaces."
  value       = local.spaces
}
