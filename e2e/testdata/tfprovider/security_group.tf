# cloudfoundry_security_group with its own spaces, and
# cloudfoundry_security_group_space_bindings for another group, as
# docs/resources/security_group.md and security_group_space_bindings.md show them.
data "cloudfoundry_org" "cfbench" {
  name = "cfbench"
}

resource "cloudfoundry_space" "space" {
  name = "tf-security-group"
  org  = data.cloudfoundry_org.cfbench.id
}

resource "cloudfoundry_security_group" "group" {
  name                     = "tf-security-group"
  globally_enabled_running = false
  globally_enabled_staging = false
  rules = [{
    protocol    = "tcp"
    destination = "192.168.1.100"
    ports       = "1883,8883"
    log         = true
    }, {
    protocol    = "udp"
    destination = "192.168.1.100"
    ports       = "1883,8883"
    log         = false
    }, {
    protocol    = "icmp"
    type        = 0
    code        = 0
    destination = "192.168.1.100"
    log         = false
  }]
  staging_spaces = [cloudfoundry_space.space.id]
  running_spaces = [cloudfoundry_space.space.id]
}

resource "cloudfoundry_security_group" "bound" {
  name = "tf-security-group-bound"
  rules = [{
    protocol    = "tcp"
    destination = "10.0.0.0/8"
    ports       = "5432"
  }]
}

resource "cloudfoundry_security_group_space_bindings" "bindings" {
  security_group = cloudfoundry_security_group.bound.id
  staging_spaces = [cloudfoundry_space.space.id]
  running_spaces = [cloudfoundry_space.space.id]
}
