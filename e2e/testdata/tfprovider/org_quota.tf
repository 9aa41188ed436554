# cloudfoundry_org_quota, as docs/resources/org_quota.md shows it, without orgs: a
# Cloud Controller refuses to delete a quota applied to an org, and the provider
# deletes the quota first (terraform/README.md).
resource "cloudfoundry_org_quota" "org_quota" {
  name                     = "tf-org-quota"
  allow_paid_service_plans = true
  instance_memory          = 2048
  total_memory             = 51200
  total_app_instances      = 100
  total_routes             = 50
  total_services           = 200
  total_service_keys       = 120
  total_private_domains    = 40
  total_app_tasks          = 10
  total_route_ports        = 5
  total_app_log_rate_limit = 1000
}
