terraform {
  # optional() attributes with defaults in object variables need 1.3; both Terraform
  # and OpenTofu (this project tests with OpenTofu 1.10) read this module.
  required_version = ">= 1.3"

  required_providers {
    cloudfoundry = {
      source  = "cloudfoundry/cloudfoundry"
      version = "~> 1.16"
    }
  }
}

# The provider reads the API and the credentials from the environment (CF_API_URL,
# CF_USER and CF_PASSWORD, or CF_CLIENT_ID and CF_CLIENT_SECRET), so no secret lands in
# a tfvars file; see README.md.
provider "cloudfoundry" {
  skip_ssl_validation = var.skip_ssl_validation
}
