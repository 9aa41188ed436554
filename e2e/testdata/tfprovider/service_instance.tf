# Managed and user-provided cloudfoundry_service_instance, the plan by its guid (found
# by name with cloudfoundry_service_plan, and among the offering's plans with
# cloudfoundry_service_plans) and by offering and plan name, as
# docs/resources/service_instance.md shows them.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

data "cloudfoundry_space" "apps" {
  name = "apps"
  org  = data.cloudfoundry_org.cfbench.id
}

data "cloudfoundry_service_plan" "db" {
  name                  = "db"
  service_offering_name = "postgres"
}

data "cloudfoundry_service_plans" "postgres" {
  service_offering_name = "postgres"
}

resource "cloudfoundry_service_instance" "managed" {
  name         = "tf-managed"
  type         = "managed"
  tags         = ["terraform-test", "sql"]
  space        = data.cloudfoundry_space.apps.id
  service_plan = data.cloudfoundry_service_plan.db.id

  lifecycle {
    precondition {
      condition     = contains([for p in data.cloudfoundry_service_plans.postgres.service_plans : p.id], data.cloudfoundry_service_plan.db.id)
      error_message = "The plan found by name is not among the offering's plans."
    }
  }
}

resource "cloudfoundry_service_instance" "by_name" {
  name                  = "tf-managed-by-name"
  type                  = "managed"
  space                 = data.cloudfoundry_space.apps.id
  service_offering_name = "postgres"
  service_plan_name     = "db"
}

resource "cloudfoundry_service_instance" "user_provided" {
  name             = "tf-user-provided"
  type             = "user-provided"
  tags             = ["terraform-test", "usp"]
  space            = data.cloudfoundry_space.apps.id
  syslog_drain_url = "https://drain.example.com/"
  credentials      = <<EOT
  {
    "user": "user1",
    "password": "demo122"
  }
  EOT
}
