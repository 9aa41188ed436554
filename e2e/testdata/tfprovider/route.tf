# cloudfoundry_route on the foundation's shared domain (data source by name), as
# docs/resources/route.md shows it.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

data "cloudfoundry_space" "apps" {
  name = "apps"
  org  = data.cloudfoundry_org.cfbench.id
}

data "cloudfoundry_domain" "apps" {
  name = "apps.localhost"
}

resource "cloudfoundry_route" "route" {
  space  = data.cloudfoundry_space.apps.id
  domain = data.cloudfoundry_domain.apps.id
  host   = "tf-route"
  path   = "/cart"

  lifecycle {
    postcondition {
      condition     = self.url == "tf-route.apps.localhost/cart"
      error_message = "The route's url is not its host, domain and path."
    }
  }
}
