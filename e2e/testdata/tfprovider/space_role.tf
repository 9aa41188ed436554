# cloudfoundry_user (a UAA user) with space roles by username and by user guid, as
# docs/resources/user.md and space_role.md show them. A space role needs an org role.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

data "cloudfoundry_space" "apps" {
  name = "apps"
  org  = data.cloudfoundry_org.cfbench.id
}

resource "cloudfoundry_user" "user" {
  username    = "tf-user"
  email       = "tf-user@example.com"
  password    = "tf-password"
  given_name  = "tf"
  family_name = "user"
  annotations = { "purpose" : "testing" }
}

resource "cloudfoundry_org_role" "org_user" {
  user = cloudfoundry_user.user.id
  type = "organization_user"
  org  = data.cloudfoundry_org.cfbench.id
}

resource "cloudfoundry_space_role" "developer" {
  username   = cloudfoundry_user.user.username
  type       = "space_developer"
  space      = data.cloudfoundry_space.apps.id
  depends_on = [cloudfoundry_org_role.org_user]
}

resource "cloudfoundry_space_role" "auditor" {
  user       = cloudfoundry_user.user.id
  type       = "space_auditor"
  space      = data.cloudfoundry_space.apps.id
  depends_on = [cloudfoundry_org_role.org_user]
}
