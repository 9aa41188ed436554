# cloudfoundry_org, as docs/resources/org.md shows it.
resource "cloudfoundry_org" "org" {
  name      = "tf-org"
  suspended = false
  labels = {
    env = "test"
  }
  annotations = {
    env-ann = "test-ann"
  }
}
