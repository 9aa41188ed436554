# cloudfoundry_space_quota applied to a space of its own, as
# docs/resources/space_quota.md shows it.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

resource "cloudfoundry_space" "space" {
  name = "tf-space-quota"
  org  = data.cloudfoundry_org.cfbench.id
}

resource "cloudfoundry_space_quota" "space_quota" {
  name                     = "tf-space-quota"
  allow_paid_service_plans = true
  instance_memory          = 2048
  total_memory             = 51200
  total_app_instances      = 110
  total_routes             = 50
  total_services           = 200
  total_service_keys       = 120
  total_app_tasks          = 10
  total_route_ports        = 5
  total_app_log_rate_limit = 1000
  org                      = data.cloudfoundry_org.cfbench.id
  spaces                   = [cloudfoundry_space.space.id]
}
