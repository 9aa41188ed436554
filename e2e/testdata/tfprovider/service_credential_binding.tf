# cloudfoundry_service_credential_binding of both types: an app binding and a service
# key (type key), as docs/resources/service_credential_binding.md shows them. The app
# is the test's (data source by name): a cloudfoundry_app reads every binding of its
# app into its service_bindings, so one bound by this resource would never plan empty.
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

resource "cloudfoundry_service_instance" "db" {
  name         = "tf-binding-db"
  type         = "managed"
  space        = data.cloudfoundry_space.apps.id
  service_plan = data.cloudfoundry_service_plan.db.id
}

data "cloudfoundry_app" "app" {
  name       = "tf-binding-app"
  org_name   = "cfbench"
  space_name = "apps"
}

resource "cloudfoundry_service_credential_binding" "app" {
  type             = "app"
  name             = "tf-binding"
  service_instance = cloudfoundry_service_instance.db.id
  app              = data.cloudfoundry_app.app.id
}

resource "cloudfoundry_service_credential_binding" "key" {
  type             = "key"
  name             = "tf-key"
  service_instance = cloudfoundry_service_instance.db.id
}
