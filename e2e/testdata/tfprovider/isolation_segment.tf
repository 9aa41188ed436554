# cloudfoundry_isolation_segment and its entitlement to an org of its own, as default,
# with a space on it: docs/resources/isolation_segment.md and
# isolation_segment_entitlement.md.
resource "cloudfoundry_isolation_segment" "segment" {
  name   = "tf-segment"
  labels = { "purpose" : "testing" }
}

resource "cloudfoundry_org" "org" {
  name = "tf-segment-org"
}

resource "cloudfoundry_isolation_segment_entitlement" "entitlement" {
  segment = cloudfoundry_isolation_segment.segment.id
  orgs    = [cloudfoundry_org.org.id]
  default = true
}

resource "cloudfoundry_space" "space" {
  name              = "tf-segment-space"
  org               = cloudfoundry_org.org.id
  isolation_segment = cloudfoundry_isolation_segment.segment.id
  depends_on        = [cloudfoundry_isolation_segment_entitlement.entitlement]
}
