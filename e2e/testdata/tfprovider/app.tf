# cloudfoundry_app pushed from a zip (the stub, built by the test), with a route on
# the foundation's shared domain and bindings to a managed and a user-provided
# service instance, as docs/resources/app.md shows it.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

data "cloudfoundry_space" "apps" {
  name = "apps"
  org  = data.cloudfoundry_org.cfbench.id
}

resource "cloudfoundry_service_instance" "db" {
  name                  = "tf-app-db"
  type                  = "managed"
  space                 = data.cloudfoundry_space.apps.id
  service_offering_name = "postgres"
  service_plan_name     = "db"
}

resource "cloudfoundry_service_instance" "config" {
  name        = "tf-app-config"
  type        = "user-provided"
  space       = data.cloudfoundry_space.apps.id
  credentials = jsonencode({ greeting = "hello" })
}

resource "cloudfoundry_app" "app" {
  name             = "tf-app"
  space_name       = "apps"
  org_name         = "cfbench"
  path             = "stub.zip"
  source_code_hash = filesha256("stub.zip")
  buildpacks       = ["binary_buildpack"]
  command          = "./cfbench-stub"
  memory           = "64M"
  instances        = 1
  environment = {
    MY_ENV = "red",
  }
  strategy = "rolling"
  service_bindings = [
    { service_instance : cloudfoundry_service_instance.db.name },
    { service_instance : cloudfoundry_service_instance.config.name },
  ]
  routes = [
    {
      route = "tf-app.apps.localhost"
    }
  ]
}
