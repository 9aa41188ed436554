# A private cloudfoundry_domain of an org of its own, shared with another, as
# docs/resources/domain.md shows it.
resource "cloudfoundry_org" "owner" {
  name = "tf-domain-owner"
}

resource "cloudfoundry_org" "other" {
  name = "tf-domain-other"
}

resource "cloudfoundry_domain" "domain" {
  name        = "tf-domain.example.com"
  org         = cloudfoundry_org.owner.id
  shared_orgs = [cloudfoundry_org.other.id]
}
