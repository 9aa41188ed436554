# cloudfoundry_space in the foundation's org (data source by name), as
# docs/resources/space.md shows it.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

resource "cloudfoundry_space" "space" {
  name      = "tf-space"
  org       = data.cloudfoundry_org.cfbench.id
  allow_ssh = "true"
  labels    = { test : "pass", purpose : "prod" }
}
