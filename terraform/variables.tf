variable "org" {
  description = "The org the benchmark runs in. Created, unless create_org is false (then an existing org of this name is used)."
  type        = string
  default     = "cfbench"
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$", var.org))
    error_message = "org must be 1 to 255 letters, digits, dots, dashes or underscores, starting with a letter or digit (no spaces): cf commands and spec files name it unquoted."
  }
}

variable "create_org" {
  description = "true: create the org (and delete it on destroy). false: use an existing org of that name, which destroy leaves in place."
  type        = bool
  default     = true
}

variable "quota" {
  description = "An org quota to create and apply to the org; null (the default) leaves the org's quota as it is. Memory in MB; a null field is unlimited. Mind that a Cloud Controller refuses to delete a quota applied to an org, and the provider (1.16) destroys the quota before the org and cannot move the org to another quota: with a quota, destroy as README.md says."
  type = object({
    name                = optional(string)
    total_memory_mb     = optional(number, 16384)
    instance_memory_mb  = optional(number)
    total_app_instances = optional(number, 100)
    total_services      = optional(number, 10)
    total_routes        = optional(number, 50)
  })
  default = null
  validation {
    condition = var.quota == null ? true : alltrue([
      for v in [var.quota.total_memory_mb, var.quota.instance_memory_mb, var.quota.total_app_instances, var.quota.total_services, var.quota.total_routes] :
      v == null ? true : v >= 0 && floor(v) == v
    ])
    error_message = "quota: total_memory_mb, instance_memory_mb, total_app_instances, total_services and total_routes must be whole numbers, 0 or more (null for unlimited)."
  }
}

variable "apps" {
  description = "The space the systems under test are pushed to, and the isolation segment it runs on (\"\" for the shared one)."
  type = object({
    space             = optional(string, "apps")
    isolation_segment = optional(string, "apps")
  })
  default = {}
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$", var.apps.space)) && can(regex("^([A-Za-z0-9][A-Za-z0-9._-]{0,254})?$", var.apps.isolation_segment))
    error_message = "apps: space and isolation_segment must be letters, digits, dots, dashes or underscores (no spaces); isolation_segment may be \"\" for the shared segment."
  }
}

variable "generators" {
  description = "The space the load generators (and the results database and the tunnel app) go to, and its isolation segment (\"\" for the shared one). Give it another segment than apps, so generators never share a cell with the apps."
  type = object({
    space             = optional(string, "loadgen")
    isolation_segment = optional(string, "loadgen")
  })
  default = {}
  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$", var.generators.space)) && can(regex("^([A-Za-z0-9][A-Za-z0-9._-]{0,254})?$", var.generators.isolation_segment))
    error_message = "generators: space and isolation_segment must be letters, digits, dots, dashes or underscores (no spaces); isolation_segment may be \"\" for the shared segment."
  }
}

variable "create_isolation_segments" {
  description = "true: create the isolation segments named in apps and generators (an admin's right; on bosh-lite their names are the cells' placement tags). false: they exist already; they are only entitled to the org."
  type        = bool
  default     = true
}

variable "results_db" {
  description = "The results database service instance, in the generators space: from the marketplace (offering and plan as `cf marketplace` shows them), or, with credentials (e.g. {uri = \"postgres://user:pass@host:5432/db\"}), a user-provided instance of a Postgres you run (bosh-lite: scripts/bosh-lite/README.md)."
  type = object({
    name        = optional(string, "cfbench-results")
    offering    = optional(string, "postgres")
    plan        = optional(string, "db")
    credentials = optional(map(string))
  })
  default = {}
  validation {
    condition     = length(var.results_db.name) > 0 && (var.results_db.credentials != null || (length(var.results_db.offering) > 0 && length(var.results_db.plan) > 0))
    error_message = "results_db: name must not be empty, and offering and plan neither unless credentials are given (a user-provided instance)."
  }
}

variable "app_services" {
  description = "Service instances the apps' manifests bind (e.g. the app's own database), created in the apps space."
  type = list(object({
    name     = string
    offering = string
    plan     = string
  }))
  default = []
  validation {
    condition     = length(distinct([for s in var.app_services : s.name])) == length(var.app_services)
    error_message = "app_services: each name may appear only once."
  }
}

variable "space_developers" {
  description = "Users (as `cf login` names them) who get the SpaceDeveloper role in both spaces: whoever runs cf run-benchmark. An admin needs none."
  type        = list(string)
  default     = []
}

variable "egress" {
  description = "Where the generators and the tunnel app (generators space) and the apps (apps space) must connect: the results database and the apps' databases, as security group rules. Empty: no security group (the platform's default running group already allows it)."
  type = list(object({
    destination = string
    ports       = string
    protocol    = optional(string, "tcp")
    description = optional(string)
  }))
  default = []
  validation {
    condition     = alltrue([for r in var.egress : contains(["tcp", "udp", "icmp", "all"], r.protocol) && can(regex("^[0-9a-fA-F.:/,-]+$", r.destination)) && can(regex("^[0-9]+([-,][0-9]+)*$", r.ports))])
    error_message = "egress: protocol is tcp, udp, icmp or all; destination an IP, a range (a-b) or a CIDR; ports a port, a range (5432-5433) or a list (5432,6432)."
  }
}

variable "skip_ssl_validation" {
  description = "Accept the API's self-signed certificate (bosh-lite)."
  type        = bool
  default     = false
}
